// connectAgent() after a "reload", abortRun(), a run the gateway does not
// have, a refused token, and an exhausted reconnect budget, against a live
// `lce serve` that paces its runs (so they are still going when re-attached).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ResumableHttpAgent, ResumeError } from "../dist/index.js";
import { collect, cuttingProxy, normalized, referenceRun, serve, watchConsole } from "./helpers.mjs";

// 35 events over about 6 s of scenario time; at --speed 3 about 2 s.
const SCENARIO = "nested-subagents-two-levels";

let server;
let reference;
before(async () => {
  server = await serve(["--speed", "3"]);
  reference = await referenceRun(server.url, SCENARIO, "reference-run");
});
after(async () => {
  await server?.stop();
});

const expected = () => normalized(reference.events, "reference-run");

/** Starts a run with `agent` and resolves once `n` events arrived: { lastRun, seen, done }. */
function startAndWait(agent, runId, n) {
  const seen = [];
  return new Promise((resolve, reject) => {
    let resolved = false;
    const done = agent
      .runAgent(
        { runId, forwardedProps: { agentId: SCENARIO } },
        {
          onEvent: ({ event }) => {
            seen.push(event);
            if (seen.length === n && !resolved) {
              resolved = true;
              resolve({ lastRun: agent.lastRun, seen: [...seen], done });
            }
          },
        },
      )
      .catch((e) => e);
    done.then((r) => {
      if (!resolved) reject(new Error(`the run ended after ${seen.length} events: ${r}`));
    });
  });
}

describe("connectAgent() re-attaches after a reload", () => {
  test("with lastEventId: exactly the events after it, and the whole answer in messages", async () => {
    const page = new ResumableHttpAgent({ url: `${server.url}/api/v1/agui`, threadId: "thread-1" });
    const { lastRun, seen } = await startAndWait(page, "reload-1", 8);
    // The page goes away: its connection drops with it.
    page.abortRun();
    assert.equal(lastRun.runId, "reload-1");
    assert.match(lastRun.token, /^[0-9a-f]{64}$/);
    assert.ok(lastRun.lastEventId, "lastRun names the last frame");

    const console_ = watchConsole();
    const reloaded = new ResumableHttpAgent({ url: `${server.url}/api/v1/agui`, threadId: "thread-1", resume: lastRun });
    let got;
    try {
      got = await collect(reloaded, "connectAgent");
    } finally {
      console_.restore();
    }
    assert.equal(got.error, undefined, String(got.error));
    assert.deepEqual(console_.lines, []);
    const before_ = normalized(seen, "reload-1");
    const rest = normalized(got.events, "reload-1");
    assert.ok(rest.length > 0 && rest.length < expected().length, `got ${rest.length} events after the reload`);
    assert.deepEqual([...before_, ...rest], expected(), "the events before and after the reload are the run, each once");
    assert.deepEqual(normalized(got.messages, "reload-1"), normalized(reference.messages, "reference-run"));
    assert.equal(reloaded.lastRun.runId, "reload-1");
  });

  test("without lastEventId: the run from its start, followed live to its terminal", async () => {
    const page = new ResumableHttpAgent({ url: `${server.url}/api/v1/agui`, threadId: "thread-1" });
    const { lastRun } = await startAndWait(page, "reload-2", 3);
    page.abortRun();
    const reloaded = new ResumableHttpAgent({
      url: `${server.url}/api/v1/agui`,
      threadId: "thread-1",
      resume: { runId: lastRun.runId, token: lastRun.token },
    });
    const got = await collect(reloaded, "connectAgent");
    assert.equal(got.error, undefined, String(got.error));
    assert.deepEqual(normalized(got.events, "reload-2"), expected());
  });

  test("a second agent re-attaches mid-run through a proxy that cuts it too", async () => {
    const page = new ResumableHttpAgent({ url: `${server.url}/api/v1/agui`, threadId: "thread-1" });
    const { lastRun, seen } = await startAndWait(page, "reload-3", 12);
    page.abortRun();
    // The re-attached stream is cut inside its 5th frame, then read on.
    const proxy = await cuttingProxy(server.url, (n) => (n === 0 ? 700 : null));
    try {
      const reloaded = new ResumableHttpAgent({
        url: `${proxy.url}/api/v1/agui`,
        threadId: "thread-1",
        resume: lastRun,
        reconnect: { backoffMs: 1 },
      });
      const got = await collect(reloaded, "connectAgent");
      assert.equal(got.error, undefined, String(got.error));
      assert.deepEqual([...normalized(seen, "reload-3"), ...normalized(got.events, "reload-3")], expected());
      assert.equal(proxy.connections(), 2, "one cut, one reconnect");
    } finally {
      await proxy.close();
    }
  });

  test("a lastEventId the run never had ends with a clear error", async () => {
    const page = new ResumableHttpAgent({ url: `${server.url}/api/v1/agui`, threadId: "thread-1" });
    const { lastRun } = await startAndWait(page, "reload-4", 2);
    page.abortRun();
    const reloaded = new ResumableHttpAgent({
      url: `${server.url}/api/v1/agui`,
      resume: { ...lastRun, lastEventId: "999.0" },
    });
    const got = await collect(reloaded, "connectAgent");
    assert.ok(got.error instanceof ResumeError, String(got.error));
    assert.equal(got.error.code, "bad_last_event_id");
    assert.equal(got.events.length, 0, "no event of the run reached the subscriber");
  });
});

describe("ends as specified", () => {
  test("abortRun() ends the run and never reconnects", async () => {
    const proxy = await cuttingProxy(server.url);
    try {
      const agent = new ResumableHttpAgent({
        url: `${proxy.url}/api/v1/agui`,
        threadId: "thread-1",
        reconnect: { backoffMs: 1 },
      });
      const { done, seen } = await startAndWait(agent, "abort-1", 4);
      agent.abortRun();
      await done;
      // Give a reconnect (1 ms backoff) ample time to show up, if one were made.
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(proxy.connections(), 1, "no reconnect after abortRun()");
      assert.ok(seen.length < expected().length, "the run was cut short");
      assert.equal(agent.isRunning, false);
    } finally {
      await proxy.close();
    }
  });

  test("abortRun() during the backoff ends the run at once", { timeout: 30_000 }, async () => {
    const proxy = await cuttingProxy(server.url, (n) => (n === 0 ? 400 : "refuse"));
    try {
      const agent = new ResumableHttpAgent({
        url: `${proxy.url}/api/v1/agui`,
        threadId: "thread-1",
        // Far longer than the test's timeout: only the abort can end the wait.
        reconnect: { backoffMs: 600_000 },
      });
      const { done } = await startAndWait(agent, "abort-2", 2);
      // The cut (at 400 bytes, inside the 3rd frame) comes at once; then the agent waits.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(agent.isRunning, true, "the agent waits to reconnect");
      agent.abortRun();
      await done;
      assert.equal(agent.isRunning, false);
      assert.equal(proxy.connections(), 1, "no reconnect after abortRun()");
    } finally {
      await proxy.close();
    }
  });

  test("connectAgent() with no run to re-attach to ends with no_run", async () => {
    const agent = new ResumableHttpAgent({ url: `${server.url}/api/v1/agui` });
    const got = await collect(agent, "connectAgent");
    assert.ok(got.error instanceof ResumeError, String(got.error));
    assert.equal(got.error.code, "no_run");
    assert.equal(agent.lastRun, undefined);
  });

  test("a run the gateway does not have (404) ends with run_not_found, after one request", async () => {
    const proxy = await cuttingProxy(server.url);
    try {
      const agent = new ResumableHttpAgent({
        url: `${proxy.url}/api/v1/agui`,
        resume: { runId: "no-such-run", token: "0".repeat(64) },
        reconnect: { backoffMs: 1 },
      });
      const got = await collect(agent, "connectAgent");
      assert.ok(got.error instanceof ResumeError, String(got.error));
      assert.equal(got.error.code, "run_not_found");
      assert.equal(got.error.status, 404);
      assert.equal(proxy.connections(), 1, "no retry");
    } finally {
      await proxy.close();
    }
  });

  test("a refused token ends with run_not_found, after one request", async () => {
    const page = new ResumableHttpAgent({ url: `${server.url}/api/v1/agui`, threadId: "thread-1" });
    const { lastRun } = await startAndWait(page, "token-1", 2);
    page.abortRun();
    const proxy = await cuttingProxy(server.url);
    try {
      const wrong = lastRun.token.replace(/^./, (c) => (c === "0" ? "1" : "0"));
      const agent = new ResumableHttpAgent({
        url: `${proxy.url}/api/v1/agui`,
        resume: { runId: lastRun.runId, token: wrong },
        reconnect: { backoffMs: 1 },
      });
      const got = await collect(agent, "connectAgent");
      assert.ok(got.error instanceof ResumeError, String(got.error));
      assert.equal(got.error.code, "run_not_found");
      assert.equal(proxy.connections(), 1, "no retry");
      assert.equal(got.events.length, 0);
    } finally {
      await proxy.close();
    }
  });

  for (const after of ["refuse", "blackhole"]) {
    test(`an exhausted budget ends with attempts_exhausted (the proxy cuts, then ${after}s)`, async () => {
      const proxy = await cuttingProxy(server.url, (n) => (n === 0 ? 400 : after));
      try {
        const agent = new ResumableHttpAgent({
          url: `${proxy.url}/api/v1/agui`,
          threadId: "thread-1",
          reconnect: { attempts: 3, backoffMs: 5, timeoutMs: 300 },
        });
        const got = await collect(agent, "runAgent", { runId: `budget-${after}`, forwardedProps: { agentId: SCENARIO } });
        assert.ok(got.error instanceof ResumeError, String(got.error));
        assert.equal(got.error.code, "attempts_exhausted");
        assert.equal(proxy.connections(), 1 + 3, "the POST and three attempts");
        assert.ok(got.events.length > 0 && got.events.length < expected().length);
        assert.equal(agent.lastRun.runId, `budget-${after}`);
      } finally {
        await proxy.close();
      }
    });
  }
});

describe("a server without --sse-ids", () => {
  let plain;
  before(async () => {
    plain = await serve(["--speed", "0"], { ids: false });
  });
  after(async () => {
    await plain?.stop();
  });

  test("a break after frames without ids ends with not_resumable, after no further request", async () => {
    const proxy = await cuttingProxy(plain.url, (n) => (n === 0 ? 400 : null));
    try {
      const agent = new ResumableHttpAgent({ url: `${proxy.url}/api/v1/agui`, reconnect: { backoffMs: 1 } });
      const got = await collect(agent, "runAgent", { runId: "no-ids-1", forwardedProps: { agentId: SCENARIO } });
      assert.ok(got.error instanceof ResumeError, String(got.error));
      assert.equal(got.error.code, "not_resumable");
      assert.equal(proxy.connections(), 1);
    } finally {
      await proxy.close();
    }
  });

  test("a break before the first frame still reads the run from its start", async () => {
    const proxy = await cuttingProxy(plain.url, (n) => (n === 0 ? 0 : null));
    try {
      const agent = new ResumableHttpAgent({ url: `${proxy.url}/api/v1/agui`, threadId: "thread-1", reconnect: { backoffMs: 1 } });
      const got = await collect(agent, "runAgent", { runId: "no-ids-2", forwardedProps: { agentId: SCENARIO } });
      assert.equal(got.error, undefined, String(got.error));
      assert.deepEqual(normalized(got.events, "no-ids-2"), expected());
      assert.equal(proxy.connections(), 2);
    } finally {
      await proxy.close();
    }
  });
});
