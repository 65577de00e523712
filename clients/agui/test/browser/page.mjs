// The page of the browser test: the README's lines (a run whose lastRun is
// kept in sessionStorage, re-attached with connectAgent() after a reload),
// plus what the test reads back (data-* attributes). Bundled with the built
// dist/ by the test (no CDN).
import { ResumableHttpAgent } from "../../dist/index.js";

const params = new URLSearchParams(location.search);
const answer = document.getElementById("answer");
const render = (messages) => {
  answer.textContent = messages
    .filter((m) => m.role === "assistant" && typeof m.content === "string")
    .map((m) => m.content)
    .join("\n");
};
// Events the subscribers saw before the reload (the test checks each arrives once).
const before = Number(sessionStorage.getItem("events-before") ?? 0);
let events = 0;

// --- the README's lines -------------------------------------------------------
const kept = JSON.parse(sessionStorage.getItem("lce-run") ?? "null"); // a run this tab was following
const agent = new ResumableHttpAgent({ url: `${params.get("lce")}/api/v1/agui`, ...(kept && { resume: kept }) });
// The test's own subscriber (subscribers are taken when a run starts).
agent.subscribe({
  onEvent: () => {
    events += 1;
    if (!kept) sessionStorage.setItem("events-before", String(events));
    document.body.dataset.events = String(events);
  },
  onMessagesChanged: ({ messages }) => render(messages),
});
agent.subscribe({ onEvent: () => sessionStorage.setItem("lce-run", JSON.stringify(agent.lastRun)) });
const done = (kept ? agent.connectAgent() : agent.runAgent({ runId: params.get("run"), forwardedProps: { agentId: params.get("scenario") } }))
  .then(() => sessionStorage.removeItem("lce-run")); // the run reached its terminal
// -------------------------------------------------------------------------------

document.body.dataset.mode = kept ? "connect" : "run";
document.getElementById("status").textContent = kept ? "re-attached" : "running";
done.then(
  () => {
    render(agent.messages);
    document.getElementById("status").textContent = "finished";
    document.body.dataset.before = String(before);
    document.body.dataset.kept = String(sessionStorage.getItem("lce-run"));
    document.body.dataset.done = "finished";
  },
  (error) => {
    document.getElementById("status").textContent = `failed: ${error}`;
    document.body.dataset.done = `failed: ${error}`;
  },
);
