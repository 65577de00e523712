//! `ag-ui` (crates.io, 0.5.0-alpha.3) over agui-v1 events: per event, in the
//! timed loop, `serde_json` into `ag_ui::Event`, the client `Verifier`
//! (the counterpart of `@ag-ui/client`'s `verifyEvents`) and the
//! `SseFormatter`. Prints `{"events": n, "seconds": t}`.
//!
//!     lce-peer-ag-ui-rs [--seconds S] FILE.sse

use std::time::Instant;

use ag_ui::client::Verifier;
use ag_ui::{Event, EventStreamFormatter, SseFormatter};

fn main() {
    let mut seconds = 5.0f64;
    let mut file = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--seconds" {
            seconds = args.next().and_then(|s| s.parse().ok()).expect("--seconds S");
        } else {
            file = Some(a);
        }
    }
    let text = std::fs::read_to_string(file.expect("FILE.sse")).expect("read the SSE file");
    let datas: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    let formatter = SseFormatter::new();
    let mut n = 0u64;
    let t0 = Instant::now();
    let mut out = Vec::with_capacity(text.len() * 2);
    loop {
        out.clear();
        let mut verifier = Verifier::new();
        for d in &datas {
            let event: Event = serde_json::from_str(d).expect("an AG-UI event");
            verifier.verify(&event).expect("verified");
            out.extend_from_slice(&formatter.encode(&event).expect("encoded"));
        }
        verifier.finish().expect("a finished run");
        n += datas.len() as u64;
        if t0.elapsed().as_secs_f64() >= seconds {
            break;
        }
    }
    println!(r#"{{"events": {n}, "seconds": {}}}"#, t0.elapsed().as_secs_f64());
}
