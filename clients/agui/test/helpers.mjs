// Test helpers: a live `lce serve`, a TCP proxy that cuts connections at
// chosen points of the SSE body, and reference runs by the official HttpAgent.

import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HttpAgent } from "@ag-ui/client";

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, "../../..");

/** The `lce` binary: $LCE_BIN, else $CARGO_TARGET_DIR/debug/lce, else ../../target/debug/lce. */
export function lceBin() {
  if (process.env.LCE_BIN) return path.resolve(process.env.LCE_BIN);
  const target = process.env.CARGO_TARGET_DIR
    ? path.resolve(root, process.env.CARGO_TARGET_DIR)
    : path.join(root, "target");
  return path.join(target, "debug", process.platform === "win32" ? "lce.exe" : "lce");
}

/** Every bundled scenario (the list `cargo xtask conformance` runs). */
export function scenarios() {
  return readdirSync(path.join(root, "fixtures/scenarios"))
    .filter((f) => f.endsWith(".jsonl"))
    .map((f) => f.slice(0, -".jsonl".length))
    .sort();
}

/** Starts `lce serve --addr 127.0.0.1:0 --scenarios fixtures/scenarios --sse-ids ARGS` (without --sse-ids when `ids` is false); resolves to { url, stop }. */
export function serve(args = [], { ids = true } = {}) {
  const bin = lceBin();
  if (!existsSync(bin)) {
    throw new Error(`no lce binary at ${bin}: build it with \`cargo build -p lce-cli\` or set LCE_BIN`);
  }
  const child = spawn(
    bin,
    ["serve", "--addr", "127.0.0.1:0", "--scenarios", path.join(root, "fixtures/scenarios"), ...(ids ? ["--sse-ids"] : []), ...args],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  // Never outlive the tests, even when they crash.
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  child.once("exit", () => process.off("exit", kill));
  let stderr = "";
  child.stderr.on("data", (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    let out = "";
    const onData = (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        child.stdout.off("data", onData);
        child.stdout.resume();
        resolve({
          url: m[1],
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once("exit", () => done());
              child.kill("SIGKILL");
            }),
        });
      }
    };
    child.stdout.on("data", onData);
    child.once("exit", (code) => reject(new Error(`lce serve exited (${code}) before listening: ${stderr}`)));
  });
}

/**
 * Decodes an HTTP/1.1 response (headers, then a chunked or plain body) as its
 * raw bytes pass, so a cut can land at an exact offset of the body.
 */
class BodyCounter {
  constructor() {
    this.state = "headers";
    this.head = "";
    this.chunked = false;
    this.sizeLine = "";
    this.left = 0;
    this.body = 0; // body bytes passed so far
  }
  /** How many bytes of `raw` may pass so that the body stops at `limit` (all of it when it does not reach it). */
  allow(raw, limit) {
    for (let i = 0; i < raw.length; i++) {
      if (this.state === "body" && this.body >= limit) return i;
      const b = raw[i];
      switch (this.state) {
        case "headers":
          this.head += String.fromCharCode(b);
          if (this.head.endsWith("\r\n\r\n")) {
            this.chunked = /transfer-encoding:\s*chunked/i.test(this.head);
            this.state = this.chunked ? "size" : "body";
            if (limit === 0) return i + 1;
          }
          break;
        case "size":
          this.sizeLine += String.fromCharCode(b);
          if (this.sizeLine.endsWith("\r\n")) {
            this.left = parseInt(this.sizeLine, 16);
            this.sizeLine = "";
            this.state = this.left === 0 ? "trailer" : "data";
          }
          break;
        case "data":
          if (this.body >= limit) return i;
          this.body += 1;
          this.left -= 1;
          if (this.left === 0) this.state = "crlf";
          break;
        case "crlf":
          this.sizeLine += String.fromCharCode(b);
          if (this.sizeLine.endsWith("\r\n")) {
            this.sizeLine = "";
            this.state = "size";
          }
          break;
        case "body":
          this.body += 1;
          break;
        default:
          break;
      }
    }
    return raw.length;
  }
}

/**
 * A TCP proxy in front of `target` (an http://host:port URL). `plan(n)` is
 * asked for each connection that carries a request (n from 0) and answers
 *   - a number: pass the answer until its body has that many bytes, then cut both sides;
 *   - "refuse": close the connection at once, unanswered;
 *   - "blackhole": accept and never answer;
 *   - null/undefined: pass everything.
 * Resolves to { url, connections(), close() }.
 */
export function cuttingProxy(target, plan = () => null) {
  const { hostname, port } = new URL(target);
  let count = 0;
  const open = new Set();
  const server = net.createServer((client) => {
    open.add(client);
    client.on("close", () => open.delete(client));
    client.on("error", () => {});
    // A connection counts once it carries a request (fetch may open spare ones).
    client.once("data", (first) => {
      const n = count++;
      const rule = plan(n);
      if (rule === "refuse") {
        client.destroy();
        return;
      }
      if (rule === "blackhole") {
        client.on("data", () => {});
        return;
      }
      const upstream = net.connect(Number(port), hostname);
      open.add(upstream);
      upstream.on("close", () => {
        open.delete(upstream);
        client.destroy();
      });
      upstream.on("error", () => client.destroy());
      client.on("close", () => upstream.destroy());
      upstream.write(first);
      client.on("data", (d) => upstream.write(d));
      const counter = new BodyCounter();
      let cut = false;
      upstream.on("data", (d) => {
        if (cut) return;
        if (typeof rule !== "number") {
          client.write(d);
          return;
        }
        const pass = counter.allow(d, rule);
        if (pass > 0) client.write(d.subarray(0, pass));
        if (pass < d.length || (counter.state !== "headers" && counter.body >= rule)) {
          cut = true;
          // Let the written bytes go out, then drop both sides.
          client.end(() => client.destroy());
          upstream.destroy();
        }
      });
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port: p } = server.address();
      resolve({
        url: `http://127.0.0.1:${p}`,
        connections: () => count,
        close: () =>
          new Promise((done) => {
            for (const s of open) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/** The SSE body of one AG-UI run, split into whole frames: [{ start, end, id, type }]. */
export function framesOf(body) {
  const frames = [];
  let start = 0;
  for (;;) {
    const end = body.indexOf("\n\n", start);
    if (end === -1) break;
    const text = body.slice(start, end);
    const lines = text.split("\n");
    const id = lines.find((l) => l.startsWith("id: "))?.slice(4);
    const data = lines.find((l) => l.startsWith("data: "))?.slice(6);
    frames.push({
      start: Buffer.byteLength(body.slice(0, start)),
      end: Buffer.byteLength(body.slice(0, end + 2)),
      id,
      type: data ? JSON.parse(data).type : undefined,
    });
    start = end + 2;
  }
  return frames;
}

/** The raw SSE body of an uncut POST of `scenario` with run id `runId`. */
export async function rawRun(url, scenario, runId, threadId = "thread-1") {
  const response = await fetch(`${url}/api/v1/agui`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify({
      threadId,
      runId,
      state: {},
      messages: [],
      tools: [],
      context: [],
      forwardedProps: { agentId: scenario },
    }),
  });
  if (!response.ok) throw new Error(`POST ${scenario}: ${response.status}`);
  return {
    body: await response.text(),
    runId: response.headers.get("X-Run-Id"),
    token: response.headers.get("X-Run-Token"),
  };
}

/** Events with the run id replaced, for comparing two runs of one scenario. */
export function normalized(events, runId) {
  return events.map((e) => JSON.parse(JSON.stringify(e).split(JSON.stringify(runId)).join('"RUN"')));
}

/** Runs `agent.runAgent` (or `connectAgent`) and collects what the subscriber saw. */
export async function collect(agent, how, parameters) {
  const events = [];
  const failures = [];
  let error;
  try {
    await agent[how](parameters, {
      onEvent: ({ event }) => {
        events.push(event);
      },
      onRunFailed: ({ error: e }) => {
        failures.push(e);
      },
    });
  } catch (e) {
    error = e;
  }
  return { events, failures, error: error ?? failures[0], messages: agent.messages };
}

/** The events the official HttpAgent sees for an uncut run. */
export async function referenceRun(url, scenario, runId) {
  const agent = new HttpAgent({ url: `${url}/api/v1/agui`, threadId: "thread-1" });
  const r = await collect(agent, "runAgent", { runId, forwardedProps: { agentId: scenario } });
  if (r.error) throw r.error;
  return r;
}

/** Fails the test on any console.warn/console.error the official client prints (its deviation warnings). */
export function watchConsole() {
  const lines = [];
  const warn = console.warn;
  const error = console.error;
  console.warn = (...a) => lines.push(a.map(String).join(" "));
  console.error = (...a) => lines.push(a.map(String).join(" "));
  return {
    lines,
    restore() {
      console.warn = warn;
      console.error = error;
    },
  };
}
