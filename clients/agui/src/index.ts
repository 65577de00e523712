// @lce/agui-client: an AG-UI `HttpAgent` that survives a dropped connection
// and a page reload, against the resumable run log of `lce serve`.
//
// The seam: `HttpAgent.run()` turns one fetch `Response` into events with the
// official `runHttpRequest` and `transformHttpEventStream`. This agent hands
// the official `transformHttpEventStream` (and its SSE parser) a `Response`
// whose body is the gateway's own SSE bytes, whole frame by whole frame, from the POST and, after a break, from
// `GET .../api/v1/runs/{runId}/stream?protocol=agui-v1` with `Last-Event-ID`.
// Everything after the transport (the official SSE parser, enforcement,
// verification, the reducer, the subscribers) is the official client's.

import { HttpAgent, enforceOutgoingInput, transformHttpEventStream } from "@ag-ui/client";
import type { AgentSubscriber, HttpAgentConfig, RunAgentResult } from "@ag-ui/client";
import type { BaseEvent, RunAgentInput } from "@ag-ui/core";
import { Observable } from "rxjs";

type HttpEvent = Parameters<typeof transformHttpEventStream>[0] extends Observable<infer E> ? E : never;

/**
 * `runHttpRequest` of `@ag-ui/client` (headers, then the body's chunks; a
 * non-2xx answer errors with `HTTP <status>: <body>`), except that its
 * teardown never rethrows the rejection of cancelling a body that already
 * failed (1.0.0's does, as an unhandled rejection).
 */
function transport(open: () => Promise<Response>): Observable<HttpEvent> {
  return new Observable<HttpEvent>((subscriber) => {
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let closed = false;
    void (async () => {
      try {
        const response = await open();
        if (closed) {
          await response.body?.cancel().catch(() => undefined);
          return;
        }
        if (!response.ok) {
          const text = await response.text();
          let payload: unknown = text;
          if ((response.headers.get("content-type") ?? "").includes("application/json")) {
            try {
              payload = JSON.parse(text);
            } catch {
              // keep the raw text
            }
          }
          const error = new Error(
            `HTTP ${response.status}: ${typeof payload === "string" ? payload : JSON.stringify(payload)}`,
          ) as Error & { status?: number; payload?: unknown };
          error.status = response.status;
          error.payload = payload;
          subscriber.error(error);
          return;
        }
        if (!response.body) throw new Error("Failed to getReader() from response");
        subscriber.next({ type: "headers", status: response.status, headers: response.headers } as HttpEvent);
        reader = response.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          subscriber.next({ type: "data", data: value } as HttpEvent);
        }
        subscriber.complete();
      } catch (error) {
        subscriber.error(error);
      }
    })();
    return () => {
      closed = true;
      reader?.cancel().catch(() => undefined);
    };
  });
}

/** The run a page keeps (e.g. in `sessionStorage`) to re-attach after a reload. */
export interface ResumableRun {
  /** The run's id (the answer's `X-Run-Id`). */
  runId: string;
  /** The run's read token (the answer's `X-Run-Token`). */
  token: string;
  /** The `id:` of the last whole frame received, if any frame carried one. */
  lastEventId?: string;
}

/** How a broken stream is read on. */
export interface ReconnectOptions {
  /**
   * Reconnect attempts in a row without a frame arriving before the run
   * fails (default 5); every frame that arrives renews the budget.
   */
  attempts?: number;
  /** Wait before the first attempt of a row, doubled for each next one, at most 10 s (default 250). */
  backoffMs?: number;
  /** An attempt that gets no answer (status and headers) within this many ms fails (default 30000). */
  timeoutMs?: number;
}

/** `HttpAgent`'s config plus how to reconnect and which run to re-attach to. */
export interface ResumableHttpAgentConfig extends HttpAgentConfig {
  /** Reconnection after a break. */
  reconnect?: ReconnectOptions;
  /** The run `connectAgent()` re-attaches to (a kept `agent.lastRun`). */
  resume?: ResumableRun;
}

/** Why a run could not be followed to its terminal. */
export type ResumeErrorCode =
  /** The gateway has no such run, or refused the token (it answers both with the same 404). */
  | "run_not_found"
  /** The gateway refused the `Last-Event-ID` (400). */
  | "bad_last_event_id"
  /** The stream broke and every attempt of the budget failed without a frame. */
  | "attempts_exhausted"
  /** The stream broke and cannot be read on: no run id or token in the answer, or frames without ids (`lce serve --sse-ids`). */
  | "not_resumable"
  /** `connectAgent()` was called on an agent with no `resume` and no earlier run. */
  | "no_run";

/** The error a run ends with when it cannot be followed to its terminal. */
export class ResumeError extends Error {
  /** What went wrong, for code to branch on. */
  readonly code: ResumeErrorCode;
  /** The HTTP status that ended it, when an answer did. */
  readonly status?: number;

  constructor(code: ResumeErrorCode, message: string, options?: { status?: number; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ResumeError";
    this.code = code;
    if (options?.status !== undefined) this.status = options.status;
  }
}

const DEFAULT_ATTEMPTS = 5;
const DEFAULT_BACKOFF_MS = 250;
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_BACKOFF_MS = 10_000;
const TERMINALS = new Set(["RUN_FINISHED", "RUN_ERROR"]);

/** One whole SSE frame as the bytes came, and what this package reads from it. */
interface Frame {
  bytes: Uint8Array;
  id?: string;
  hasData: boolean;
  terminal: boolean;
}

/** Index just past the first frame end (blank line) in `buf` at or after `from`, or -1. */
function frameEnd(buf: Uint8Array, from: number): number {
  for (let i = from; i < buf.length; i++) {
    if (buf[i] !== 10 && buf[i] !== 13) continue;
    // A line ends here; a frame ends when the next line is empty.
    const next = buf[i] === 13 && buf[i + 1] === 10 ? i + 2 : i + 1;
    if (next >= buf.length) return -1;
    if (buf[next] === 10) return next + 1;
    if (buf[next] === 13) {
      if (next + 1 >= buf.length) return -1; // "\r" then maybe "\n": wait for more
      return buf[next + 1] === 10 ? next + 2 : next + 1;
    }
    i = next - 1;
  }
  return -1;
}

const decoder = new TextDecoder();

/** The fields of one whole frame (SSE's field rules: one optional space after the colon). */
function readFrame(bytes: Uint8Array): Frame {
  let id: string | undefined;
  const data: string[] = [];
  for (const line of decoder.decode(bytes).split(/\r\n|\r|\n/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") id = value;
    else if (field === "data") data.push(value);
  }
  let terminal = false;
  if (data.length > 0) {
    try {
      const parsed: unknown = JSON.parse(data.join("\n"));
      const type = (parsed as { type?: unknown } | null)?.type;
      terminal = typeof type === "string" && TERMINALS.has(type);
    } catch {
      // Not JSON: the official parser that reads these bytes reports it.
    }
  }
  const frame: Frame = { bytes, hasData: data.length > 0, terminal };
  if (id !== undefined) frame.id = id;
  return frame;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function isAbort(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === "AbortError";
}

function abortError(signal?: AbortSignal | null): unknown {
  const reason: unknown = signal?.reason;
  return isAbort(reason) ? reason : new DOMException("This operation was aborted", "AbortError");
}

/** Waits `ms`, or until `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** What one followed run tells the agent as it goes. */
interface Follow {
  /** Called with each whole frame before its bytes reach the parser. */
  onFrame(frame: Frame): void;
  /** Set when `connectAgent()` was given a `lastEventId`: it must be seen before the terminal. */
  mustSee?: string;
}

/**
 * An AG-UI `HttpAgent` for `lce serve --sse-ids` whose runs survive dropped
 * connections (`runAgent()`) and page reloads (`connectAgent()` with
 * `resume`). Subscribers see one uninterrupted run that the official event
 * verification accepts.
 */
export class ResumableHttpAgent extends HttpAgent {
  /** Reconnection settings. */
  public reconnect: Required<ReconnectOptions>;
  /** The run `connectAgent()` re-attaches to. */
  public resume?: ResumableRun;
  private run_: ResumableRun | undefined;
  private gate: { prefix: number; seen: boolean } | undefined;
  /** The ids of the current run's frames that carry an event, in order (one event each). */
  private frameIds: (string | undefined)[] = [];

  constructor(config: ResumableHttpAgentConfig) {
    super(config);
    this.reconnect = {
      attempts: Math.max(0, config.reconnect?.attempts ?? DEFAULT_ATTEMPTS),
      backoffMs: Math.max(0, config.reconnect?.backoffMs ?? DEFAULT_BACKOFF_MS),
      timeoutMs: Math.max(1, config.reconnect?.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    };
    if (config.resume) this.resume = { ...config.resume };
  }

  /** `{ runId, token, lastEventId }` of the run being (or last) followed, for a page to keep. */
  get lastRun(): ResumableRun | undefined {
    return this.run_ ? { ...this.run_ } : undefined;
  }

  /** The stream route of a run, derived from `url` (`.../api/v1/agui`). */
  streamUrl(runId: string): string {
    const base = this.url.replace(/\/api\/v1\/agui\/?(?=$|[?#])/, "").replace(/[?#].*$/, "");
    return `${base}/api/v1/runs/${encodeURIComponent(runId)}/stream?protocol=agui-v1`;
  }

  public runAgent(
    parameters?: Parameters<HttpAgent["runAgent"]>[0],
    subscriber?: AgentSubscriber,
  ): Promise<RunAgentResult> {
    this.gate = undefined;
    this.frameIds = [];
    return super.runAgent(parameters, subscriber);
  }

  /**
   * Re-attaches to `resume` (or the last run) and follows it to its
   * terminal. Without `lastEventId` the subscribers get the run from its
   * start; with it, exactly the events after that frame (the run is read
   * from its start so that the official verification sees it whole, and the
   * agent's messages hold the whole answer).
   */
  public connectAgent(
    parameters?: Parameters<HttpAgent["connectAgent"]>[0],
    subscriber?: AgentSubscriber,
  ): Promise<RunAgentResult> {
    this.abortController = new AbortController();
    // Set before the pipeline is built: apply() reads it then.
    const mustSee = (this.resume ?? this.run_)?.lastEventId;
    this.gate = mustSee === undefined ? undefined : { prefix: 0, seen: false };
    this.frameIds = [];
    return super.connectAgent(parameters, subscriber);
  }

  /** `HttpAgent.run()` over the resumable body. */
  run(input: RunAgentInput): Observable<BaseEvent> {
    // A new run: until its answer names it, there is no run to resume.
    this.run_ = undefined;
    const http$ = transport(async () => {
      const init = this.requestInit(enforceOutgoingInput(input));
      const response = await this.fetch(this.url, init);
      if (!response.ok || !response.body) return response;
      const runId = response.headers.get("X-Run-Id");
      const token = response.headers.get("X-Run-Token");
      this.run_ = runId && token ? { runId, token } : undefined;
      const ids = this.frameIds;
      return this.resumable(response, init.signal, {
        onFrame: (frame) => {
          if (frame.hasData) ids.push(frame.id);
        },
      });
    });
    return transformHttpEventStream(http$, this.debugLogger);
  }

  /** The run of `resume` (or the last one), read from its start through the stream route. */
  protected connect(_input: RunAgentInput): Observable<BaseEvent> {
    const target = this.resume ?? this.run_;
    const signal = this.abortController.signal;
    const http$ = transport(async () => {
      if (!target) {
        throw new ResumeError("no_run", "connectAgent() needs `resume: { runId, token }` or an earlier run");
      }
      this.run_ = { ...target };
      const mustSee = target.lastEventId;
      const gate = this.gate;
      const ids = this.frameIds;
      // No first answer: the pump's first attempt opens the stream from the start.
      return this.resumable(undefined, signal, {
        onFrame: (frame) => {
          if (frame.hasData) ids.push(frame.id);
          if (gate && !gate.seen && frame.hasData) gate.prefix += 1;
          if (gate && frame.id === mustSee) gate.seen = true;
        },
        ...(mustSee === undefined ? {} : { mustSee }),
      });
    });
    return transformHttpEventStream(http$, this.debugLogger);
  }

  /**
   * Before the subscribers see an event, `lastRun.lastEventId` becomes the
   * id of its frame (so a page that keeps `lastRun` resumes after the last
   * event it saw). After a `connectAgent()` with `lastEventId`, the
   * subscribers skip the events up to that frame.
   */
  protected apply(
    input: RunAgentInput,
    events$: Observable<BaseEvent>,
    subscribers: AgentSubscriber[],
  ) {
    const gate = this.gate;
    const ids = this.frameIds;
    let index = 0;
    let skipping = false;
    const counter: AgentSubscriber = {
      onEvent: () => {
        const id = ids[index];
        if (id !== undefined && this.run_) this.run_.lastEventId = id;
        skipping = gate !== undefined && (!gate.seen || index < gate.prefix);
        index += 1;
      },
    };
    if (!gate) return super.apply(input, events$, [counter, ...subscribers]);
    const always = new Set(["onRunInitialized", "onRunFailed", "onRunFinalized", "onMessagesChanged", "onStateChanged"]);
    const gated = subscribers.map(
      (s) =>
        new Proxy(s, {
          get(target, property, receiver) {
            const value: unknown = Reflect.get(target, property, receiver);
            if (typeof value !== "function" || typeof property !== "string" || always.has(property)) return value;
            return (...args: unknown[]) => (skipping ? undefined : (value as (...a: unknown[]) => unknown).apply(target, args));
          },
        }),
    );
    return super.apply(input, events$, [counter, ...gated]);
  }

  /** `HttpAgent.clone()` plus this agent's settings. */
  public clone(): ResumableHttpAgent {
    const cloned = super.clone() as ResumableHttpAgent;
    cloned.reconnect = { ...this.reconnect };
    if (this.resume) cloned.resume = { ...this.resume };
    if (this.run_) cloned.run_ = { ...this.run_ };
    cloned.gate = undefined;
    return cloned;
  }

  /** `GET` the run's stream, after `lastEventId` when given. */
  private async openStream(run: ResumableRun, lastEventId: string | undefined, signal?: AbortSignal | null): Promise<Response> {
    const headers: Record<string, string> = {
      ...this.headers,
      Accept: "text/event-stream",
      "X-Run-Token": run.token,
    };
    if (lastEventId !== undefined) headers["Last-Event-ID"] = lastEventId;
    // Its own signal: the caller's abort, or no answer within timeoutMs.
    const own = new AbortController();
    const forward = () => own.abort(signal?.reason);
    if (signal?.aborted) forward();
    signal?.addEventListener("abort", forward, { once: true });
    const timer = setTimeout(
      () => own.abort(new DOMException("no answer within reconnect.timeoutMs", "TimeoutError")),
      this.reconnect.timeoutMs,
    );
    try {
      return await this.fetch(this.streamUrl(run.runId), { method: "GET", headers, signal: own.signal });
    } finally {
      clearTimeout(timer);
    }
  }

  /** A `Response` whose body is `first`'s whole frames, then the run's stream after each break. */
  private resumable(first: Response | undefined, signal: AbortSignal | null | undefined, follow: Follow): Response {
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined = first?.body?.getReader();
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.pump(controller, () => reader, (r) => (reader = r), () => cancelled, signal, follow).catch((error) => {
          // Only a bug lands here (e.g. enqueue after a cancel); the run fails with it.
          if (!cancelled) controller.error(error);
        });
      },
      cancel: async () => {
        cancelled = true;
        await reader?.cancel().catch(() => undefined);
      },
    });
    if (!first) return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
    return new Response(body, { status: first.status, statusText: first.statusText, headers: first.headers });
  }

  private async pump(
    controller: ReadableStreamDefaultController<Uint8Array>,
    current: () => ReadableStreamDefaultReader<Uint8Array> | undefined,
    replace: (r: ReadableStreamDefaultReader<Uint8Array>) => void,
    cancelled: () => boolean,
    signal: AbortSignal | null | undefined,
    follow: Follow,
  ): Promise<void> {
    let framesSeen = 0;
    let idsSeen = 0;
    let failures = 0;
    let lastId: string | undefined;
    let finished = false;
    let broke: unknown;
    let sawMustSee = false;
    // connectAgent() starts with no answer: its first attempt waits for nothing.
    let immediate = current() === undefined;
    for (;;) {
      // Read the current answer to its end or its break, passing on whole frames only.
      let buffer: Uint8Array = new Uint8Array(0);
      const reader = current();
      try {
        while (reader && !finished) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer = concat(buffer, value);
          let start = 0;
          for (let end = frameEnd(buffer, 0); end !== -1; end = frameEnd(buffer, start)) {
            const frame = readFrame(buffer.slice(start, end));
            start = end;
            if (frame.hasData || frame.id !== undefined) {
              framesSeen += 1;
              failures = 0;
            }
            if (frame.id !== undefined) {
              lastId = frame.id;
              idsSeen += 1;
            }
            if (frame.id !== undefined && frame.id === follow.mustSee) sawMustSee = true;
            if (frame.terminal && follow.mustSee !== undefined && !sawMustSee) {
              await reader.cancel().catch(() => undefined);
              controller.error(
                new ResumeError("bad_last_event_id", "the run ended without a frame with the kept lastEventId"),
              );
              return;
            }
            follow.onFrame(frame);
            controller.enqueue(frame.bytes);
            if (frame.terminal) finished = true;
          }
          buffer = buffer.slice(start);
        }
        broke = new Error("the stream ended before the run's terminal");
      } catch (error) {
        broke = error;
      }
      if (cancelled()) return;
      if (finished) {
        await reader?.cancel().catch(() => undefined);
        controller.close();
        return;
      }
      if (signal?.aborted) {
        controller.error(abortError(signal));
        return;
      }
      // The stream broke before the terminal: read on after the last whole frame.
      const run = this.run_;
      if (!run) {
        controller.error(new ResumeError("not_resumable", "the stream broke and the answer carried no X-Run-Id and X-Run-Token", { cause: broke }));
        return;
      }
      if (framesSeen > 0 && idsSeen === 0) {
        controller.error(new ResumeError("not_resumable", "the stream broke and its frames carry no ids (lce serve --sse-ids)", { cause: broke }));
        return;
      }
      const next = await this.reopen(run, lastId, signal, () => failures++, cancelled, immediate);
      immediate = false;
      if (cancelled()) return;
      if (next instanceof Response) {
        replace(next.body!.getReader());
        continue;
      }
      controller.error(next === "aborted" ? abortError(signal) : next);
      return;
    }
  }

  /** Attempts to `GET` the stream until one answers 200, the budget runs out, or an answer ends it. */
  private async reopen(
    run: ResumableRun,
    lastId: string | undefined,
    signal: AbortSignal | null | undefined,
    fail: () => number,
    cancelled: () => boolean,
    immediate: boolean,
  ): Promise<Response | ResumeError | "aborted"> {
    let last: unknown;
    for (let tries = 0; ; tries++) {
      const attempt = fail() + 1;
      if (attempt > this.reconnect.attempts) {
        return new ResumeError(
          "attempts_exhausted",
          `the stream broke and ${this.reconnect.attempts} reconnect attempt(s) in a row got no frame`,
          { cause: last },
        );
      }
      if (!(immediate && tries === 0)) {
        await sleep(Math.min(this.reconnect.backoffMs * 2 ** (attempt - 1), MAX_BACKOFF_MS), signal);
      }
      if (signal?.aborted) return "aborted";
      if (cancelled()) return "aborted";
      try {
        const response = await this.openStream(run, lastId, signal);
        if (response.ok && response.body) return response;
        await response.body?.cancel().catch(() => undefined);
        if (response.status === 404) {
          return new ResumeError("run_not_found", "the gateway has no such run, or refused its token (404)", { status: 404 });
        }
        if (response.status === 400) {
          return new ResumeError("bad_last_event_id", "the gateway refused the Last-Event-ID (400)", { status: 400 });
        }
        last = new Error(`HTTP ${response.status}`);
      } catch (error) {
        if (signal?.aborted) return "aborted";
        last = error;
      }
    }
  }
}
