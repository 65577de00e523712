// Conformance check for `agui-v1` output (standard AG-UI 1.0 over SSE), using
// the OFFICIAL npm packages @ag-ui/core@1.0.0 and @ag-ui/client@1.0.0.
//
// Run by `cargo xtask conformance`, which installs the pinned packages into
// target/conformance-node/ and runs a copy of this file from there (ESM
// resolves bare imports next to the script, never through NODE_PATH).
//
//   node check.mjs [--self-test] FILE.sse...
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
// Output: one line per file, `ok <file> (<n> events)` or `FAIL <file>: <reason>`;
// exit status 1 if any file failed.
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

function lceRules(bytes, wire) {
  const problems = [];
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
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
  const reasons = [];
  let bytes;
  try {
    bytes = new Uint8Array(readFileSync(file));
  } catch (err) {
    return { n: 0, reasons: [`[io] cannot read: ${errText(err)}`] };
  }
  captured = [];
  // Whole file in one read, then in small reads (split UTF-8 and split frames):
  // a conforming stream parses the same however the transport groups bytes.
  const whole = await officialOperators(bytes, Math.max(bytes.length, 1));
  const small = await officialOperators(bytes, 7);
  const agentProblems = await officialAgent(bytes);
  const official = [...whole.problems, ...agentProblems];
  if (safeJson(small.wire) !== safeJson(whole.wire)) {
    official.push(["parseSSEStream", "the events differ when the bytes arrive in 7-byte reads"]);
  }
  // The agent logs its own failure ("Agent execution failed: <error>"); that
  // line repeats a reason already listed, every other console line is new.
  const failedRun = agentProblems.length > 0;
  for (const [where, msg] of captured) {
    if (!(failedRun && where === "console.error" && msg.startsWith("Agent execution failed:"))) {
      official.push([where, msg]);
    }
  }
  if (whole.wire.length === 0 && whole.problems.length === 0) official.push(["stream", "no events"]);
  // One reason per distinct message, naming every stage that reported it.
  const byMessage = new Map();
  for (const [where, msg] of official) {
    const stages = byMessage.get(msg) ?? [];
    if (!stages.includes(where)) stages.push(where);
    byMessage.set(msg, stages);
  }
  for (const [msg, stages] of byMessage) reasons.push(`[official] ${stages.join(", ")}: ${msg}`);
  reasons.push(...lceRules(bytes, whole.wire).map((r) => `[lce] ${r}`));
  return { n: whole.wire.length, reasons };
}

function display(file) {
  const rel = path.relative(process.cwd(), file);
  return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : file;
}

// ---- main ---------------------------------------------------------------------

const args = process.argv.slice(2);
const selfTest = args.includes("--self-test");
const files = args.filter((a) => a !== "--self-test");
if (files.length === 0) {
  originalError("usage: node check.mjs [--self-test] FILE.sse...");
  process.exit(2);
}

let failures = 0;
let selfTestMisses = 0;
for (const file of files) {
  const { n, reasons } = await checkFile(file);
  const name = display(file);
  if (reasons.length === 0) {
    process.stdout.write(`ok ${name} (${n} events)\n`);
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
process.exit(failures === 0 ? 0 : 1);
