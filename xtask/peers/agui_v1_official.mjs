// The official Node AG-UI 1.0 packages over agui-v1 events, for
// `cargo xtask bench-peers`: per event, in the timed loop, JSON.parse of the
// frame's data, @ag-ui/client 1.0.0 `verifyEvents` (the client's ordering
// state machine, an rxjs operator over the whole run) and @ag-ui/encoder
// 1.0.0 `EventEncoder.encodeSSE`.
//
//   node agui_v1_official.mjs [--seconds S] FILE.sse
//
// Prints one JSON line: {"events": n, "seconds": t}. Run from the folder
// holding the pinned node_modules (target/peers-node).
import { readFileSync } from "node:fs";
import { verifyEvents } from "@ag-ui/client";
import { EventEncoder } from "@ag-ui/encoder";
import { from, lastValueFrom, map, toArray } from "rxjs";

const args = process.argv.slice(2);
let seconds = 5;
let file;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--seconds") seconds = Number(args[++i]);
  else file = args[i];
}
const datas = readFileSync(file, "utf8")
  .split("\n")
  .filter((l) => l.startsWith("data: "))
  .map((l) => l.slice(6));
const encoder = new EventEncoder();
let n = 0;
const t0 = process.hrtime.bigint();
let el = 0;
for (;;) {
  const out = await lastValueFrom(
    from(datas).pipe(
      map((d) => JSON.parse(d)),
      verifyEvents(),
      map((e) => encoder.encodeSSE(e)),
      toArray(),
    ),
  );
  if (out.length !== datas.length) throw new Error(`verified ${out.length} of ${datas.length}`);
  n += datas.length;
  el = Number(process.hrtime.bigint() - t0) / 1e9;
  if (el >= seconds) break;
}
console.log(JSON.stringify({ events: n, seconds: el }));
