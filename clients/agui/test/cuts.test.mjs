// Every bundled AG-UI scenario, cut by a TCP proxy at many points of its
// stream (inside each frame, at each frame boundary: before the first frame,
// right before the terminal, and twice in one run): the subscriber's events
// equal those of the official HttpAgent's uncut run, and the run passes the
// official verification with no warning.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ResumableHttpAgent } from "../dist/index.js";
import {
  collect,
  cuttingProxy,
  framesOf,
  normalized,
  rawRun,
  referenceRun,
  scenarios,
  serve,
  watchConsole,
} from "./helpers.mjs";

let server;
before(async () => {
  server = await serve(["--speed", "0"]);
});
after(async () => {
  await server?.stop();
});

let serial = 0;
/** A fresh run id; all have the same length, so the bodies of one scenario line up byte for byte. */
const nextRunId = () => `run-${String(serial++).padStart(6, "0")}`;

/** The cut plans of one scenario: lists of body offsets, one per connection. */
function plansFor(frames) {
  const plans = [];
  for (const [i, f] of frames.entries()) {
    plans.push({ name: `before frame ${i + 1} (${f.type})`, cuts: [f.start] });
    plans.push({ name: `inside frame ${i + 1} (${f.type})`, cuts: [f.start + Math.max(1, Math.floor((f.end - f.start) / 2))] });
  }
  // Inside the first frame's `id:` line, and one byte before a frame's end.
  plans.push({ name: "inside the first id line", cuts: [2] });
  const last = frames[frames.length - 1];
  plans.push({ name: "one byte before the terminal's end", cuts: [last.end - 1] });
  // Two cuts in one run: inside frame a, then (on the resumed stream, which
  // starts at frame a) inside frame b.
  if (frames.length >= 3) {
    const a = frames[1];
    const b = frames[frames.length - 2];
    const mid = (f) => f.start + Math.floor((f.end - f.start) / 2);
    plans.push({ name: "inside frame 2, then inside the frame before the terminal", cuts: [mid(a), mid(b) - a.start] });
    plans.push({ name: "before the first frame, three times", cuts: [0, 0, 0] });
  }
  return plans;
}

describe("runAgent() through a cutting proxy, every scenario", () => {
  for (const scenario of scenarios()) {
    test(scenario, async () => {
      const reference = await referenceRun(server.url, scenario, nextRunId());
      const raw = await rawRun(server.url, scenario, nextRunId());
      const frames = framesOf(raw.body);
      assert.ok(frames.length > 0, "the uncut run has frames");
      assert.ok(frames.every((f) => f.id), "every frame has an id (--sse-ids)");
      const expected = normalized(reference.events, reference.events[0].runId);
      assert.ok(["RUN_FINISHED", "RUN_ERROR"].includes(expected.at(-1).type));

      for (const plan of plansFor(frames)) {
        const proxy = await cuttingProxy(server.url, (n) => plan.cuts[n]);
        const runId = nextRunId();
        const agent = new ResumableHttpAgent({
          url: `${proxy.url}/api/v1/agui`,
          threadId: "thread-1",
          reconnect: { attempts: 3, backoffMs: 1 },
        });
        const console_ = watchConsole();
        let got;
        try {
          got = await collect(agent, "runAgent", { runId, forwardedProps: { agentId: scenario } });
        } finally {
          console_.restore();
          await proxy.close();
        }
        const where = `${scenario}, cut ${plan.name}`;
        assert.equal(got.error, undefined, `${where}: ${got.error}`);
        assert.deepEqual(normalized(got.events, runId), expected, where);
        assert.deepEqual(console_.lines, [], `${where}: the official client warned`);
        assert.deepEqual(
          normalized(got.messages, runId),
          normalized(reference.messages, reference.events[0].runId),
          `${where}: the agent's messages`,
        );
        assert.equal(proxy.connections(), plan.cuts.length + 1, `${where}: one reconnect per cut`);
        assert.equal(agent.lastRun.runId, runId);
        assert.equal(agent.lastRun.lastEventId, frames.at(-1).id, `${where}: lastRun names the terminal's frame`);
      }
    });
  }
});
