// Conformance check for `agui-v1` output (standard AG-UI 1.0 over SSE), using
// the OFFICIAL npm packages @ag-ui/core@1.0.0 and @ag-ui/client@1.0.0.
//
// Run by `cargo xtask conformance`, which installs the pinned packages into
// target/conformance-node/ and runs a copy of this file from there (ESM
// resolves bare imports next to the script, never through NODE_PATH).
//
//   node check.mjs [--self-test] [--quiet] FILE.sse...
//   node check.mjs --serve URL SCENARIO...
//
// Every file goes through two official paths, and both must be clean:
//
//  A. The client's own transport and stream operators, stage by stage:
//     runHttpRequest (a fetch Response over the file bytes, content-type
//     text/event-stream) -> transformHttpEventStream (which parses the SSE
//     with parseSSEStream) -> EventSchemas.parse (from @ag-ui/core/schemas)
//     on every raw wire event -> enforceEvents -> transformChunks ->
//     verifyEvents.  verifyEvents additionally runs over the raw wire events
//     directly, so nothing the enforcement stage strips hides a problem.
//  B. The whole client: HttpAgent.runAgent() with a `fetch` that answers with
//     the file bytes, i.e. the compatibility boundary, enforcement, chunk
//     expansion, verification and the default reducer, exactly as an
//     application would run it.
//
// During both, console.warn and console.error are intercepted: any message
// (the client's deviation warnings are prefixed "[ag-ui]", e.g.
// "[ag-ui][enforce] Removed unrecognised material ...", "[ag-ui][compat] ...")
// fails the file.
//
// On top of the official checks, a few lce rules from
// the shared spec (wire-formats.md §2, §5) that the official client cannot see
// (it only sees parsed values) are checked on the raw bytes; their failures are
// tagged "[lce]", the official ones "[official]".
//
// Output: one line per file, `ok <file> (<n> events)` (not with --quiet) or
// `FAIL <file>: <reason>`, then `checked: <k> of <n> file(s) ok`; exit status
// 1 if any file failed.
//
// --serve URL: live runs against a running `lce serve` (URL is its
// `/api/v1/agui` route). For every SCENARIO, the official HttpAgent, with the
// real `fetch`, runs `runAgent({ runId, forwardedProps: { agentId: SCENARIO } })`
// (threadId from the agent's construction) and must finish with no error and
// no console line; the response must be 200 text/event-stream; the bytes it
// received (teed off the response body) then go through every check a file
// goes through (paths A and B, the lce rules; `:` comment lines, i.e. the
// server's keep-alives, are allowed between frames), and RUN_STARTED must
// carry the threadId and runId sent. Output: `ok live <scenario> (<n> events)`
// or `FAIL live <scenario>: <reason>`.
//
// --self-test: the files are the samples; `good*.sse` must pass and every
// `bad-*.sse` must fail with at least one [official] reason (this proves the
// official path is able to fail). Exit status 1 if any expectation is not met.

import { readFileSync } from "node:fs";
import path from "node:path";
import {
  HttpAgent,
  enforceEvents,
  runHttpRequest,
  transformChunks,
  transformHttpEventStream,
  verifyEvents,
} from "@ag-ui/client";
import { EventType, PROTOCOL_VERSION } from "@ag-ui/core";
import { EventSchemas } from "@ag-ui/core/schemas";
import { from, lastValueFrom, toArray } from "rxjs";

// The client honours this variable by silencing its deviation warnings.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

// ---- console interception -------------------------------------------------

/** Messages the client printed through console.warn / console.error. */
let captured = [];
const originalWarn = console.warn;
const originalError = console.error;
const render = (args) =>
  args
    .map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === "string" ? a : safeJson(a)))
    .join(" ");
console.warn = (...args) => {
  captured.push(["console.warn", oneLine(render(args))]);
};
console.error = (...args) => {
  captured.push(["console.error", oneLine(render(args))]);
};

function safeJson(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

const oneLine = (s) => String(s).replace(/\s+/g, " ").trim();

// ---- the SSE bytes as the HttpAgent would receive them ---------------------

/** A fetch Response whose body yields `bytes` in chunks of `chunk` bytes. */
function responseOf(bytes, chunk) {
  const body = new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += chunk) {
        controller.enqueue(bytes.slice(i, Math.min(i + chunk, bytes.length)));
      }
      controller.close();
    },
  });
  return new Response(body, {
    status: 200,
    headers: { "content-type": "text/event-stream" },
  });
}

// ---- path A: the official operators, stage by stage -----------------------

async function officialOperators(bytes, chunk) {
  const problems = [];
  // runHttpRequest -> transformHttpEventStream (-> parseSSEStream inside).
  const http$ = runHttpRequest(() => Promise.resolve(responseOf(bytes, chunk)));
  let wire;
  try {
    wire = await lastValueFrom(transformHttpEventStream(http$).pipe(toArray()));
  } catch (err) {
    problems.push(["transformHttpEventStream", errText(err)]);
    return { wire: [], problems };
  }

  // EventSchemas (the zod discriminated union of every 1.0 event).
  wire.forEach((event, i) => {
    const parsed = EventSchemas.safeParse(event);
    if (!parsed.success) {
      const issues = parsed.error.issues
        .map((is) => `${is.path.join(".") || "(event)"}: ${is.message}`)
        .join("; ");
      problems.push(["EventSchemas", `event #${i + 1} (${String(event?.type)}): ${issues}`]);
    }
  });

  // verifyEvents over the raw wire events.
  try {
    await lastValueFrom(from(wire).pipe(verifyEvents(), toArray()));
  } catch (err) {
    problems.push(["verifyEvents", errText(err)]);
  }

  // The agent's own order: enforcement, chunk expansion, verification.
  try {
    await lastValueFrom(
      from(wire).pipe(enforceEvents(), transformChunks(), verifyEvents(), toArray()),
    );
  } catch (err) {
    problems.push(["enforceEvents+transformChunks+verifyEvents", errText(err)]);
  }
  return { wire, problems };
}

// ---- path B: the whole HttpAgent ---------------------------------------------

async function officialAgent(bytes) {
  const problems = [];
  const agent = new HttpAgent({
    url: "http://conformance.invalid/agent",
    threadId: "thread-1",
    fetch: async () => responseOf(bytes, 64 * 1024),
  });
  let failed;
  try {
    await agent.runAgent(
      {},
      {
        onRunFailed: ({ error }) => {
          failed = error;
        },
      },
    );
  } catch (err) {
    failed = failed ?? err;
  }
  if (failed !== undefined) problems.push(["HttpAgent.runAgent", errText(failed)]);
  return problems;
}

function errText(err) {
  if (Array.isArray(err?.issues)) {
    // A ZodError: its message is the issues as pretty-printed JSON.
    return oneLine(
      `${err.name}: ${err.issues.map((is) => `${(is.path ?? []).join(".") || "(event)"}: ${is.message}`).join("; ")}`,
    );
  }
  if (err instanceof Error) return oneLine(`${err.name}: ${err.message}`);
  return oneLine(safeJson(err));
}

// ---- lce rules on the raw bytes (wire-formats.md §2, §5) ------------------

function lceRules(bytes, wire, { allowComments = false } = {}) {
  const problems = [];
  let text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  if (allowComments) {
    // A live server's keep-alives: whole `:` comment lines, dropped here (the
    // official SSE parser ignores them too; the goldens must have none).
    text = text.replace(/^:[^\n]*\n(?:\n)?/gm, "");
  }
  if (text.includes("\r")) problems.push("the file contains CR (frames must be LF only)");
  if (text.length === 0) {
    problems.push("the file is empty");
    return problems;
  }
  if (!text.endsWith("\n\n")) problems.push("the file does not end with a complete frame (\\n\\n)");
  const frames = text.split("\n\n");
  frames.pop(); // what follows the last "\n\n": empty for a well-formed file
  frames.forEach((frame, i) => {
    const where = `frame #${i + 1}`;
    if (!frame.startsWith("data: ") || frame.includes("\n")) {
      problems.push(`${where} is not exactly one 'data: <json>' line`);
      return;
    }
    const json = frame.slice("data: ".length);
    if (!isCompact(json)) problems.push(`${where}: JSON is not compact (whitespace outside strings)`);
    // Key order `type, timestamp, ...` and an integer timestamp literal.
    const head = /^\{"type":"[A-Z_]+"(?:,"timestamp":(-?[0-9][0-9.eE+-]*))?(?=[,}])/.exec(json);
    if (!head) {
      problems.push(`${where}: the first member is not "type"`);
    } else {
      let value;
      try {
        value = JSON.parse(json);
      } catch {
        value = undefined;
      }
      if (value && Object.hasOwn(value, "timestamp")) {
        if (head[1] === undefined) problems.push(`${where}: "timestamp" is not the second member`);
        else if (!/^-?(0|[1-9][0-9]*)$/.test(head[1]))
          problems.push(`${where}: timestamp ${head[1]} is not an integer literal`);
      }
    }
  });
  for (const [i, event] of wire.entries()) {
    if (event?.type === EventType.RUN_STARTED && event.protocolVersion !== PROTOCOL_VERSION) {
      problems.push(
        `event #${i + 1} RUN_STARTED has protocolVersion ${safeJson(event.protocolVersion)}, expected "${PROTOCOL_VERSION}"`,
      );
    }
  }
  const last = wire[wire.length - 1];
  if (wire.length > 0 && last?.type !== EventType.RUN_FINISHED && last?.type !== EventType.RUN_ERROR) {
    problems.push(`the stream ends with ${String(last?.type)}, not RUN_FINISHED or RUN_ERROR`);
  }
  return problems;
}

/** True when `json` has no whitespace outside string literals. */
function isCompact(json) {
  let inString = false;
  let escaped = false;
  for (const ch of json) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === "\\") escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r") return false;
  }
  return true;
}

// ---- one file ---------------------------------------------------------------

async function checkFile(file) {
  let bytes;
  try {
    bytes = new Uint8Array(readFileSync(file));
  } catch (err) {
    return { n: 0, reasons: [`[io] cannot read: ${errText(err)}`] };
  }
  return checkBytes(bytes);
}

/**
 * Every check on one stream's bytes. `earlier`: official problems already
 * found (a live run's); `lce`: extra lce problems; `allowComments`: accept
 * `:` comment lines between frames.
 */
async function checkBytes(bytes, { earlier = [], lce = [], allowComments = false } = {}) {
  const reasons = [];
  captured = [];
  // Whole file in one read, then in small reads (split UTF-8 and split frames):
  // a conforming stream parses the same however the transport groups bytes.
  const whole = await officialOperators(bytes, Math.max(bytes.length, 1));
  const small = await officialOperators(bytes, 7);
  const agentProblems = await officialAgent(bytes);
  const official = [...earlier, ...whole.problems, ...agentProblems];
  if (safeJson(small.wire) !== safeJson(whole.wire)) {
    official.push(["parseSSEStream", "the events differ when the bytes arrive in 7-byte reads"]);
  }
  official.push(...consoleProblems(agentProblems.length > 0));
  if (whole.wire.length === 0 && whole.problems.length === 0) official.push(["stream", "no events"]);
  // One reason per distinct message, naming every stage that reported it.
  const byMessage = new Map();
  for (const [where, msg] of official) {
    const stages = byMessage.get(msg) ?? [];
    if (!stages.includes(where)) stages.push(where);
    byMessage.set(msg, stages);
  }
  for (const [msg, stages] of byMessage) reasons.push(`[official] ${stages.join(", ")}: ${msg}`);
  reasons.push(...[...lce, ...lceRules(bytes, whole.wire, { allowComments })].map((r) => `[lce] ${r}`));
  return { n: whole.wire.length, wire: whole.wire, reasons };
}

/**
 * The console lines captured since `captured` was last reset. The agent logs
 * its own failure ("Agent execution failed: <error>"); when the run failed
 * that line repeats a reason already listed, every other console line is new.
 */
function consoleProblems(failedRun) {
  return captured
    .filter(
      ([where, msg]) =>
        !(failedRun && where === "console.error" && msg.startsWith("Agent execution failed:")),
    )
    .map(([where, msg]) => [where, msg]);
}

// ---- live runs against `lce serve` --------------------------------------------

/** How long one live run may take before it fails. */
const LIVE_TIMEOUT_MS = 30_000;

/** Reads a whole ReadableStream of bytes. */
async function drain(stream) {
  const parts = [];
  let length = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    length += value.length;
  }
  const bytes = new Uint8Array(length);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

async function checkLive(url, scenario) {
  captured = [];
  const official = [];
  const lce = [];
  const threadId = `conformance-thread-${scenario}`;
  const runId = `conformance-run-${scenario}`;
  let status;
  let contentType;
  let received = Promise.resolve(new Uint8Array(0));
  const agent = new HttpAgent({
    url,
    threadId,
    // The real fetch; the body is teed so the bytes can be checked afterwards.
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      status = response.status;
      contentType = response.headers.get("content-type");
      if (!response.body) return response;
      const [mine, theirs] = response.body.tee();
      received = drain(mine);
      return new Response(theirs, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    },
  });
  const seen = [];
  let failed;
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve("timeout"), LIVE_TIMEOUT_MS);
  });
  const run = agent
    .runAgent(
      { runId, forwardedProps: { agentId: scenario } },
      {
        onEvent: ({ event }) => {
          seen.push(event.type);
        },
        onRunFailed: ({ error }) => {
          failed = error;
        },
      },
    )
    .then(
      () => "done",
      (err) => {
        failed = failed ?? err;
        return "done";
      },
    );
  const how = await Promise.race([run, timeout]);
  clearTimeout(timer);
  if (how === "timeout") {
    agent.abortRun();
    official.push(["HttpAgent.runAgent", `no end within ${LIVE_TIMEOUT_MS / 1000} s`]);
  }
  if (failed !== undefined) official.push(["HttpAgent.runAgent", errText(failed)]);
  official.push(...consoleProblems(failed !== undefined));
  if (status !== 200) lce.push(`the server answered HTTP ${String(status)}`);
  if (!String(contentType ?? "").startsWith("text/event-stream")) {
    lce.push(`content-type ${safeJson(contentType)}, expected text/event-stream`);
  }
  const last = seen[seen.length - 1];
  if (how !== "timeout" && last !== EventType.RUN_FINISHED && last !== EventType.RUN_ERROR) {
    lce.push(`the agent's last event was ${String(last)}, not RUN_FINISHED or RUN_ERROR`);
  }
  let bytes = new Uint8Array(0);
  try {
    bytes = how === "timeout" ? bytes : await received;
  } catch (err) {
    official.push(["fetch body", errText(err)]);
  }
  const result = await checkBytes(bytes, { earlier: official, lce, allowComments: true });
  const started = result.wire.find((e) => e?.type === EventType.RUN_STARTED);
  if (started && (started.threadId !== threadId || started.runId !== runId)) {
    result.reasons.push(
      `[lce] RUN_STARTED has threadId ${safeJson(started.threadId)} and runId ${safeJson(started.runId)}, expected the ones sent (${threadId}, ${runId})`,
    );
  }
  return result;
}

function display(file) {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : file;
}

// ---- main ---------------------------------------------------------------------

const args = process.argv.slice(2);
const USAGE = "usage: node check.mjs [--self-test] [--quiet] FILE.sse... | --serve URL SCENARIO...";

if (args[0] === "--serve") {
  const [, url, ...scenarios] = args;
  if (!url || scenarios.length === 0) {
    originalError(USAGE);
    process.exit(2);
  }
  let failed = 0;
  for (const scenario of scenarios) {
    const { n, reasons } = await checkLive(url, scenario);
    if (reasons.length === 0) {
      process.stdout.write(`ok live ${scenario} (${n} events)\n`);
    } else {
      failed += 1;
      process.stdout.write(`FAIL live ${scenario}: ${reasons.join(" | ")}\n`);
    }
  }
  // Control: a run the server must refuse (unknown agent) has to fail here,
  // or this path proves nothing.
  const control = await checkLive(url, "conformance-control-no-such-agent");
  if (control.reasons.length === 0) {
    failed += 1;
    process.stdout.write("FAIL live control: a run of an unknown agent passed the checks\n");
  }
  console.warn = originalWarn;
  console.error = originalError;
  process.stdout.write(
    `live: ${scenarios.length - failed} of ${scenarios.length} run(s) clean against ${url}` +
      (control.reasons.length > 0 ? " (the unknown-agent control failed, as it must)\n" : "\n"),
  );
  process.exit(failed === 0 ? 0 : 1);
}

const selfTest = args.includes("--self-test");
const quiet = args.includes("--quiet");
const files = args.filter((a) => a !== "--self-test" && a !== "--quiet");
if (files.length === 0) {
  originalError(USAGE);
  process.exit(2);
}

let failures = 0;
let selfTestMisses = 0;
for (const file of files) {
  const { n, reasons } = await checkFile(file);
  const name = display(file);
  if (reasons.length === 0) {
    if (!quiet) process.stdout.write(`ok ${name} (${n} events)\n`);
  } else {
    failures += 1;
    process.stdout.write(`FAIL ${name}: ${reasons.join(" | ")}\n`);
  }
  if (selfTest) {
    const base = path.basename(file);
    if (base.startsWith("bad-")) {
      if (!reasons.some((r) => r.startsWith("[official]"))) {
        selfTestMisses += 1;
        process.stdout.write(`self-test: ${name} should have FAILED the official checks\n`);
      }
    } else if (reasons.length > 0) {
      selfTestMisses += 1;
      process.stdout.write(`self-test: ${name} should have passed\n`);
    }
  }
}

console.warn = originalWarn;
console.error = originalError;
if (selfTest) {
  const bad = files.filter((f) => path.basename(f).startsWith("bad-")).length;
  const good = files.length - bad;
  if (bad === 0 || good === 0) {
    process.stdout.write("self-test: needs at least one good and one bad-*.sse sample\n");
    selfTestMisses += 1;
  }
  process.stdout.write(
    selfTestMisses === 0
      ? `self-test ok: ${good} good sample(s) passed, ${bad} bad sample(s) failed\n`
      : `self-test FAILED: ${selfTestMisses} expectation(s) not met\n`,
  );
  process.exit(selfTestMisses === 0 ? 0 : 1);
}
process.stdout.write(`checked: ${files.length - failures} of ${files.length} file(s) ok\n`);
process.exit(failures === 0 ? 0 : 1);
