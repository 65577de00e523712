// Chromium (the machine's package, /usr/bin/chromium) opens a page on one
// origin that uses the built dist/ against `lce serve --cors-origin` on
// another, starts a run, is reloaded mid-run, re-attaches with
// connectAgent() from the lastRun it kept in sessionStorage, and shows the
// whole answer. A screenshot goes to target/agui-client-reload.png.

import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import * as esbuild from "esbuild";
import { chromium } from "playwright-core";
import { referenceRun, root, serve } from "../helpers.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
// 35 events over about 6 s of scenario time, paced at --speed 1.
const SCENARIO = "nested-subagents-two-levels";
const missing = !existsSync(CHROMIUM);
if (missing && process.env.CI) throw new Error(`no Chromium at ${CHROMIUM} (CI=true): install the chromium package`);

let lce;
let site;
let browser;

/** A static server for the page and its bundle (the built dist/ and @ag-ui/client). */
async function pageServer() {
  const bundle = await esbuild.build({
    entryPoints: [path.join(here, "page.mjs")],
    bundle: true,
    format: "esm",
    platform: "browser",
    write: false,
    logLevel: "silent",
  });
  const js = bundle.outputFiles[0].contents;
  const html = await readFile(path.join(here, "page.html"));
  const server = http.createServer((req, res) => {
    const route = new URL(req.url, "http://x").pathname;
    if (route === "/" || route === "/index.html") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(html);
    } else if (route === "/page.js") {
      res.writeHead(200, { "Content-Type": "text/javascript; charset=utf-8" }).end(js);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

before(async () => {
  if (missing) return;
  site = await pageServer();
  // The page is on another origin: lce must allow it and expose X-Run-Id/X-Run-Token.
  lce = await serve(["--speed", "1", "--cors-origin", site.url]);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});

after(async () => {
  await browser?.close();
  await lce?.stop();
  await site?.close();
});

test("a page reloaded mid-run re-attaches and shows the whole answer", { skip: missing && `no Chromium at ${CHROMIUM}` }, async () => {
  const reference = await referenceRun(lce.url, SCENARIO, "browser-reference");
  const expectedText = reference.messages
    .filter((m) => m.role === "assistant" && typeof m.content === "string")
    .map((m) => m.content)
    .join("\n");
  assert.ok(expectedText.length > 0);

  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(`${site.url}/?lce=${encodeURIComponent(lce.url)}&scenario=${SCENARIO}&run=browser-run-1`);
  assert.equal(await page.getAttribute("body", "data-mode"), "run");
  // Mid-run: some events in, the run still going.
  await page.waitForFunction(() => Number(document.body.dataset.events ?? 0) >= 6, null, { timeout: 60_000 });
  const kept = await page.evaluate(() => JSON.parse(sessionStorage.getItem("lce-run")));
  assert.equal(kept.runId, "browser-run-1");
  assert.match(kept.token, /^[0-9a-f]{64}$/, "the page read X-Run-Token across origins (CORS)");
  assert.ok(kept.lastEventId);
  assert.equal(await page.getAttribute("body", "data-done"), null, "reloaded before the run's end");

  await page.reload();
  assert.equal(await page.getAttribute("body", "data-mode"), "connect");
  await page.waitForFunction(() => document.body.dataset.done !== undefined, null, { timeout: 60_000 });
  const done = await page.getAttribute("body", "data-done");
  const answer = await page.textContent("#answer");
  const dir = path.resolve(root, process.env.CARGO_TARGET_DIR ?? "target");
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, "agui-client-reload.png"), fullPage: true });

  assert.equal(done, "finished");
  assert.equal(await page.getAttribute("body", "data-kept"), "null", "the finished run is no longer kept");
  assert.deepEqual(problems, []);
  assert.equal(answer, expectedText, "the page shows the whole answer");
  const beforeReload = Number(await page.getAttribute("body", "data-before"));
  const afterReload = Number(await page.getAttribute("body", "data-events"));
  assert.ok(beforeReload >= 6 && afterReload > 0, `${beforeReload} events before the reload, ${afterReload} after`);
  assert.equal(
    beforeReload + afterReload,
    reference.events.length,
    `the subscribers saw ${beforeReload} events before the reload and ${afterReload} after, each once`,
  );
  await page.close();
});
