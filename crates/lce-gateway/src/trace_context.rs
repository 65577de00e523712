//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): a client's
//! `traceparent` (and `tracestate`) continued to the upstream.
//!
//! A run's request that carries a valid `traceparent` keeps its trace id
//! and flags; lce takes a new span id of its own (8 random bytes), which
//! the upstream gets as the parent in its `traceparent`, so the harness's
//! spans are children of lce's span. A request without one, or with one
//! that does not parse strictly (version `00`, 32 lowercase hex digits of
//! trace id not all zero, 16 of parent id not all zero, 2 of flags),
//! starts a new trace: a random trace id, sampled. `tracestate` goes on
//! unchanged with a valid `traceparent` only (W3C: never without one).
//!
//! [`TraceContext::span`] is the `tracing` span of a run's request
//! (target [`SPAN_TARGET`], name [`SPAN_NAME`]): its fields name the ids,
//! the route, the run and the conversation, never a payload, so that an
//! exporter (`lce serve --otlp-endpoint`) can export it with exactly these
//! ids. Nothing here depends on an OpenTelemetry crate.

use axum::http::{HeaderMap, HeaderValue};

/// The target of the `tracing` span of a run's request.
pub const SPAN_TARGET: &str = "lce::trace";
/// The name of the `tracing` span of a run's request.
pub const SPAN_NAME: &str = "lce.run";

/// The longest `tracestate` passed on (W3C: at most 32 members; a
/// platform's are far shorter). A longer one is dropped, not cut.
const MAX_TRACESTATE_BYTES: usize = 8192;

/// The trace a run's request belongs to and lce's span in it.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent_id: Option<[u8; 8]>,
    flags: u8,
    tracestate: Option<HeaderValue>,
}

impl std::fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceContext")
            .field("traceparent", &self.traceparent())
            .field("parent_id", &self.parent_id.as_ref().map(|p| hex(p)))
            .finish_non_exhaustive()
    }
}

impl TraceContext {
    /// The trace of a request with `headers`: the client's continued when
    /// its `traceparent` is valid (exactly one, W3C version `00`), else a
    /// new one. lce's span id is new either way.
    pub fn from_headers(headers: &HeaderMap) -> TraceContext {
        let mut parents = headers.get_all("traceparent").iter();
        let parent = match (parents.next(), parents.next()) {
            (Some(only), None) => parse_traceparent(only.as_bytes()),
            _ => None,
        };
        match parent {
            Some(parent) => TraceContext::child_of(parent, tracestate(headers)),
            None => TraceContext::new_root(),
        }
    }

    /// The trace of a request whose `traceparent` is `traceparent` (and
    /// `tracestate` its `tracestate`), from any transport: continued when
    /// it is valid, else new (as [`TraceContext::from_headers`]).
    pub fn from_traceparent(traceparent: Option<&str>, tracestate: Option<&str>) -> TraceContext {
        match traceparent.and_then(|t| parse_traceparent(t.as_bytes())) {
            Some(parent) => {
                let state = tracestate
                    .filter(|s| {
                        s.len() <= MAX_TRACESTATE_BYTES
                            && !s.trim().is_empty()
                            && s.bytes().all(|b| (0x20..0x7f).contains(&b))
                    })
                    .and_then(|s| HeaderValue::from_str(s).ok());
                TraceContext::child_of(parent, state)
            }
            None => TraceContext::new_root(),
        }
    }

    /// lce's new span in the client's trace.
    fn child_of(
        (trace_id, parent_id, flags): ([u8; 16], [u8; 8], u8),
        tracestate: Option<HeaderValue>,
    ) -> TraceContext {
        TraceContext {
            trace_id,
            span_id: random_nonzero(),
            parent_id: Some(parent_id),
            flags,
            tracestate,
        }
    }

    /// A new trace (random trace id, sampled) with lce's span at its root.
    pub fn new_root() -> TraceContext {
        TraceContext {
            trace_id: random_nonzero(),
            span_id: random_nonzero(),
            parent_id: None,
            flags: SAMPLED,
            tracestate: None,
        }
    }

    /// The trace id (the client's, or new).
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// lce's own span id: the parent id the upstream gets.
    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }

    /// The client's span (its `traceparent`'s parent id); `None` when lce
    /// started the trace.
    pub fn parent_id(&self) -> Option<[u8; 8]> {
        self.parent_id
    }

    /// The trace flags (the client's, or `01` for a new trace).
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// Whether the trace is sampled (flag `01`).
    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// The client's `tracestate`, with its valid `traceparent` only.
    pub fn tracestate(&self) -> Option<&HeaderValue> {
        self.tracestate.as_ref()
    }

    /// The `traceparent` the upstream gets:
    /// `00-{trace id}-{lce's span id}-{flags}`.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.span_id),
            self.flags
        )
    }

    /// Sets `traceparent` (and `tracestate`) on an outgoing request.
    pub fn apply(&self, headers: &mut HeaderMap) {
        // Hex and dashes only: always a valid header value.
        if let Ok(value) = HeaderValue::from_str(&self.traceparent()) {
            headers.insert("traceparent", value);
        }
        match &self.tracestate {
            Some(state) => {
                headers.insert("tracestate", state.clone());
            }
            None => {
                headers.remove("tracestate");
            }
        }
    }

    /// The `tracing` span of a run's request on `route` (`start`,
    /// `resume`, `agui`, `invoke`): target [`SPAN_TARGET`], name
    /// [`SPAN_NAME`], level INFO, with the fields `route`, `run_id`,
    /// `conversation_id`, `trace_id`, `span_id`, `parent_id` (empty when
    /// lce started the trace), `trace_flags` (two hex digits) and
    /// `tracestate` (empty without one). No payload.
    pub fn span(&self, route: &'static str, run_id: &str, conversation_id: &str) -> tracing::Span {
        let parent = self.parent_id.as_ref().map(|p| hex(p)).unwrap_or_default();
        let state = self
            .tracestate
            .as_ref()
            .and_then(|s| s.to_str().ok())
            .unwrap_or("");
        tracing::info_span!(
            target: "lce::trace",
            "lce.run",
            route,
            run_id,
            conversation_id,
            trace_id = %hex(&self.trace_id),
            span_id = %hex(&self.span_id),
            parent_id = %parent,
            trace_flags = %format_args!("{:02x}", self.flags),
            tracestate = state,
        )
    }
}

/// The sampled flag.
const SAMPLED: u8 = 0x01;

/// A `traceparent` value parsed strictly as W3C version `00`: exactly
/// `00-` 32 lowercase hex digits (not all zero) `-` 16 (not all zero) `-`
/// 2; the trace id, the parent id and the flags. Anything else is `None`.
pub fn parse_traceparent(value: &[u8]) -> Option<([u8; 16], [u8; 8], u8)> {
    if value.len() != 55 || &value[..3] != b"00-" || value[35] != b'-' || value[52] != b'-' {
        return None;
    }
    let trace_id: [u8; 16] = unhex(&value[3..35])?;
    let parent_id: [u8; 8] = unhex(&value[36..52])?;
    let [flags]: [u8; 1] = unhex(&value[53..55])?;
    if trace_id == [0; 16] || parent_id == [0; 8] {
        return None;
    }
    Some((trace_id, parent_id, flags))
}

/// The client's `tracestate` headers, joined by commas (HTTP's rule for a
/// list header); dropped when empty, not visible ASCII or too long.
fn tracestate(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut joined = Vec::new();
    for value in headers.get_all("tracestate") {
        let bytes = value.as_bytes();
        if !bytes.iter().all(|b| (0x20..0x7f).contains(b)) {
            return None;
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if !joined.is_empty() {
            joined.push(b',');
        }
        joined.extend_from_slice(bytes);
    }
    if joined.is_empty() || joined.len() > MAX_TRACESTATE_BYTES {
        return None;
    }
    HeaderValue::from_bytes(&joined).ok()
}

/// `N` bytes from lowercase hex of exactly `2 * N` digits.
fn unhex<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    if digits.len() != 2 * N {
        return None;
    }
    let digit = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    crate::tokens::hex(bytes)
}

/// `N` random bytes, not all zero (W3C: an all-zero id is invalid). When
/// the OS has no randomness (a run id would then be refused anyway), a
/// process-unique value from the clock and a counter stands in: a trace id
/// needs to be unique, not secret.
fn random_nonzero<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if getrandom::fill(&mut bytes).is_err() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(1);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mixed = nanos.to_le_bytes().into_iter().chain(count.to_le_bytes());
        for (b, m) in bytes.iter_mut().zip(mixed.cycle()) {
            *b ^= m;
        }
    }
    if bytes.iter().all(|b| *b == 0) {
        if let Some(last) = bytes.last_mut() {
            *last = 1;
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn a_valid_traceparent_is_continued_with_a_new_span_id() {
        let cx = TraceContext::from_headers(&headers(&[
            ("traceparent", VALID),
            ("tracestate", "congo=t61rcWkgMzE"),
        ]));
        assert_eq!(hex(&cx.trace_id()), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(cx.parent_id().map(|p| hex(&p)).unwrap(), "00f067aa0ba902b7");
        assert_ne!(cx.span_id(), [0; 8]);
        assert_ne!(Some(cx.span_id()), cx.parent_id());
        assert!(cx.sampled());
        let sent = cx.traceparent();
        assert_eq!(
            sent,
            format!(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01",
                hex(&cx.span_id())
            )
        );
        assert_eq!(parse_traceparent(sent.as_bytes()).unwrap().1, cx.span_id());
        let mut out = HeaderMap::new();
        cx.apply(&mut out);
        assert_eq!(out.get("traceparent").unwrap(), sent.as_str());
        assert_eq!(out.get("tracestate").unwrap(), "congo=t61rcWkgMzE");
    }

    #[test]
    fn a_traceparent_from_another_transport_is_read_alike() {
        let cx = TraceContext::from_traceparent(Some(VALID), Some("a=1"));
        assert_eq!(hex(&cx.trace_id()), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(cx.tracestate().unwrap(), "a=1");
        let cx = TraceContext::from_traceparent(Some("00-bad"), Some("a=1"));
        assert_eq!((cx.parent_id(), cx.tracestate()), (None, None));
        let cx = TraceContext::from_traceparent(Some(VALID), Some("a=\u{7f}"));
        assert_eq!(cx.tracestate(), None);
    }

    #[test]
    fn flags_are_kept() {
        let unsampled = VALID.replace("-01", "-00");
        let cx = TraceContext::from_headers(&headers(&[("traceparent", &unsampled)]));
        assert!(!cx.sampled());
        assert!(cx.traceparent().ends_with("-00"));
        let other = VALID.replace("-01", "-03");
        let cx = TraceContext::from_headers(&headers(&[("traceparent", &other)]));
        assert_eq!(cx.flags(), 3);
    }

    #[test]
    fn without_a_traceparent_a_new_sampled_trace_starts() {
        let a = TraceContext::from_headers(&headers(&[("tracestate", "a=b")]));
        let b = TraceContext::from_headers(&HeaderMap::new());
        assert_ne!(a.trace_id(), b.trace_id());
        assert_ne!(a.trace_id(), [0; 16]);
        assert_eq!(a.parent_id(), None);
        assert!(a.sampled());
        // No tracestate without a valid traceparent.
        assert_eq!(a.tracestate(), None);
        let mut out = headers(&[("tracestate", "stale=1")]);
        a.apply(&mut out);
        assert!(out.get("tracestate").is_none());
        assert!(parse_traceparent(out.get("traceparent").unwrap().as_bytes()).is_some());
    }

    #[test]
    fn invalid_traceparents_are_ignored() {
        let bad = [
            "",
            "00",
            // version other than 00, and the forbidden ff
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            // all-zero ids
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            // uppercase, non-hex, wrong lengths, wrong separators
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ];
        for value in bad {
            assert_eq!(parse_traceparent(value.as_bytes()), None, "{value:?}");
            let cx = TraceContext::from_headers(&headers(&[
                ("traceparent", value),
                ("tracestate", "a=b"),
            ]));
            assert_eq!(cx.parent_id(), None, "{value:?}");
            assert_eq!(cx.tracestate(), None, "{value:?}");
        }
        // Two traceparents: neither is trusted.
        let cx =
            TraceContext::from_headers(&headers(&[("traceparent", VALID), ("traceparent", VALID)]));
        assert_eq!(cx.parent_id(), None);
    }

    #[test]
    fn parsing_never_panics_on_any_bytes() {
        let mut value = VALID.as_bytes().to_vec();
        for i in 0..value.len() {
            for b in [0u8, b'-', b'0', b'f', b'g', 0xff, b' '] {
                let old = value[i];
                value[i] = b;
                let _ = parse_traceparent(&value);
                let _ = parse_traceparent(&value[..i]);
                value[i] = old;
            }
        }
        // Multi-byte UTF-8 around the separators.
        let _ = parse_traceparent("00-é3577b34da6a3ce929d0e0e4736é-00f067aa0ba902b7-01".as_bytes());
    }

    #[test]
    fn tracestate_headers_are_joined_and_bounded() {
        let cx = TraceContext::from_headers(&headers(&[
            ("traceparent", VALID),
            ("tracestate", "a=1"),
            ("tracestate", "b=2"),
        ]));
        assert_eq!(cx.tracestate().unwrap(), "a=1,b=2");
        let long = "x=".to_owned() + &"y".repeat(MAX_TRACESTATE_BYTES);
        let cx =
            TraceContext::from_headers(&headers(&[("traceparent", VALID), ("tracestate", &long)]));
        assert_eq!(cx.tracestate(), None);
    }

    #[test]
    fn debug_shows_ids_only() {
        let cx = TraceContext::from_headers(&headers(&[
            ("traceparent", VALID),
            ("tracestate", "vendor=secretish"),
        ]));
        let shown = format!("{cx:?}");
        assert!(shown.contains("4bf92f3577b34da6a3ce929d0e0e4736"));
        assert!(!shown.contains("secretish"));
    }
}
