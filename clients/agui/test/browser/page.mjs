// The page of the browser test: starts a run, keeps agent.lastRun in
// sessionStorage after every event, and after a reload re-attaches with
// connectAgent(). Bundled with the built dist/ by the test (no CDN).
import { ResumableHttpAgent } from "../../dist/index.js";

const params = new URLSearchParams(location.search);
const url = `${params.get("lce")}/api/v1/agui`;
const KEY = "lce-agui-run";
const kept = JSON.parse(sessionStorage.getItem(KEY) ?? "null");

const answer = document.getElementById("answer");
const status = document.getElementById("status");
const render = (messages) => {
  answer.textContent = messages
    .filter((m) => m.role === "assistant" && typeof m.content === "string")
    .map((m) => m.content)
    .join("\n");
};

const agent = new ResumableHttpAgent({
  url,
  threadId: "browser-thread",
  reconnect: { attempts: 5, backoffMs: 100 },
  ...(kept ? { resume: kept.run } : {}),
});
let events = 0;
const subscriber = {
  onEvent: () => {
    events += 1;
    const before = kept ? kept.before : 0;
    sessionStorage.setItem(KEY, JSON.stringify({ run: agent.lastRun, before: kept ? before : events }));
    document.body.dataset.events = String(events);
  },
  onMessagesChanged: ({ messages }) => render(messages),
};
document.body.dataset.mode = kept ? "connect" : "run";
status.textContent = kept ? "re-attached" : "running";
const done = kept
  ? agent.connectAgent({}, subscriber)
  : agent.runAgent({ runId: params.get("run"), forwardedProps: { agentId: params.get("scenario") } }, subscriber);
done.then(
  () => {
    render(agent.messages);
    status.textContent = "finished";
    document.body.dataset.before = String(kept ? kept.before : events);
    document.body.dataset.done = "finished";
  },
  (error) => {
    status.textContent = `failed: ${error}`;
    document.body.dataset.done = `failed: ${error}`;
  },
);
