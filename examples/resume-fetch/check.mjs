// Checks resume.mjs against a live `lce serve --sse-ids`: a run whose first
// connection drops after three frames, followed to its end through
// `GET /api/v1/runs/{id}/stream` with `Last-Event-ID`, gives the frames an
// unbroken run gives. Prints one JSON line; used by
// crates/lce-cli/tests/resume_fetch.rs.
//
//   node examples/resume-fetch/check.mjs http://127.0.0.1:8080 custom
import { follow } from "./resume.mjs";

const [base, protocol = "custom"] = process.argv.slice(2);
const request = (conversation) => ({
  message: "m",
  conversation_id: conversation,
  agent_id: "plain-text-answer",
  protocol,
});

// The first start's answer breaks after its third frame, as a dropped
// connection would.
const realFetch = globalThis.fetch;
let broken = false;
globalThis.fetch = async (url, init) => {
  const response = await realFetch(url, init);
  if (broken || !String(url).endsWith("/start")) return response;
  broken = true;
  const reader = response.body.getReader();
  let frames = 0;
  const body = new ReadableStream({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) return controller.close();
      frames += (new TextDecoder().decode(value).match(/\n\n/g) || []).length;
      controller.enqueue(value);
      if (frames >= 3) {
        await reader.cancel();
        controller.error(new Error("connection dropped"));
      }
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
};

const resumed = [];
await follow(base, request("conv-resume-fetch"), (frame) => resumed.push(frame));
const whole = [];
await follow(base, request("conv-resume-fetch"), (frame) => whole.push(frame));
// The run id is in agui's frames (and differs): compare with it removed.
const shape = (frames, runId) =>
  frames.map((f) => `${f.event}|${f.data.split(runId).join("RUN")}`);
const runOf = (frames) =>
  (frames.map((f) => f.data.match(/"run_?[iI]d":\s*"([^"]+)"/)).find(Boolean) || [])[1] ?? "";
const a = shape(resumed, runOf(resumed));
const b = shape(whole, runOf(whole));
console.log(JSON.stringify({ resumed: a.length, whole: b.length, same: JSON.stringify(a) === JSON.stringify(b), dropped: broken }));
