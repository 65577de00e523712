//! An answer's body read as canonical events: NDJSON lines or SSE frames,
//! as `docs/upstream.md` allows them, with the framing checked.

use lce_types::{DEFAULT_MAX_LINE_BYTES, LineParser};
use tokio::time::Instant;

use crate::check::RunCheck;
use crate::http::{Answer, Chunk};

/// How a body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `application/x-ndjson` (or `jsonl`, `json-lines`).
    Ndjson,
    /// `text/event-stream`.
    Sse,
}

impl Framing {
    /// The framing of an accepted media type.
    pub(crate) fn of(media_type: &str) -> Option<Framing> {
        match media_type {
            "application/x-ndjson" | "application/jsonl" | "application/json-lines" => {
                Some(Framing::Ndjson)
            }
            "text/event-stream" => Some(Framing::Sse),
            _ => None,
        }
    }
}

/// Where a body's reading stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Not yet.
    No,
    /// The body ended.
    Yes,
    /// It broke, or the deadline passed (reported already).
    Failed,
}

/// One run's body, read as it arrives into its [`RunCheck`].
pub(crate) struct RunBody {
    answer: Answer,
    framing: Framing,
    parser: LineParser,
    /// Bytes of an unfinished line.
    pending: Vec<u8>,
    /// Skipping the rest of an over-long line.
    discarding: bool,
    /// SSE: the `data:` lines of the frame being read.
    data: Option<String>,
    lines: u64,
    /// The checks of the run.
    pub(crate) check: RunCheck,
    /// Where the reading stands.
    pub(crate) ended: Ended,
}

impl RunBody {
    /// Reads `answer` (2xx, an accepted media type) into `check`.
    pub(crate) fn new(answer: Answer, framing: Framing, check: RunCheck) -> RunBody {
        RunBody {
            answer,
            framing,
            parser: LineParser::new(usize::MAX),
            pending: Vec::new(),
            discarding: false,
            data: None,
            lines: 0,
            check,
            ended: Ended::No,
        }
    }

    /// Reads until `done` holds of the checks, the body ends, or `deadline`
    /// (a timeout of the request: reported).
    pub(crate) async fn read_until(&mut self, deadline: Instant, done: impl Fn(&RunCheck) -> bool) {
        self.read(deadline, true, done).await;
    }

    /// [`RunBody::read_until`], where `deadline` is a bound the caller
    /// judges: passing it is not reported, and reading may go on.
    pub(crate) async fn read_soft(&mut self, deadline: Instant, done: impl Fn(&RunCheck) -> bool) {
        self.read(deadline, false, done).await;
    }

    async fn read(&mut self, deadline: Instant, hard: bool, done: impl Fn(&RunCheck) -> bool) {
        while self.ended == Ended::No && !done(&self.check) {
            match self.answer.chunk(deadline).await {
                Chunk::TimedOut if !hard => return,
                Chunk::Data(bytes) => self.bytes(&bytes),
                Chunk::End => {
                    self.end_of_body();
                    self.ended = Ended::Yes;
                    self.check.finish(None);
                }
                Chunk::Broken => {
                    self.ended = Ended::Failed;
                    self.check.finish(Some("the connection broke mid-body"));
                }
                Chunk::TimedOut => {
                    self.ended = Ended::Failed;
                    self.check
                        .finish(Some("the body did not end before the timeout"));
                }
            }
        }
    }

    /// Reads the body to its end (events after a terminal included).
    pub(crate) async fn read_to_end(&mut self, deadline: Instant) {
        self.read_until(deadline, |_| false).await;
    }

    fn bytes(&mut self, mut bytes: &[u8]) {
        while let Some(i) = bytes.iter().position(|&b| b == b'\n') {
            let (line, rest) = bytes.split_at(i);
            bytes = rest.get(1..).unwrap_or(&[]);
            if self.discarding {
                self.discarding = false;
                continue;
            }
            if self.pending.is_empty() {
                self.line(line);
            } else {
                let mut whole = std::mem::take(&mut self.pending);
                whole.extend_from_slice(line);
                self.line(&whole);
            }
        }
        if self.discarding {
            return;
        }
        self.pending.extend_from_slice(bytes);
        if self.pending.len() > DEFAULT_MAX_LINE_BYTES {
            self.lines += 1;
            let n = self.pending.len();
            self.check.malformed(
                "line_bound",
                format!(
                    "line {}: over {n} bytes, beyond the 4 MiB bound (D8)",
                    self.lines
                ),
            );
            self.pending.clear();
            self.discarding = true;
        }
    }

    fn end_of_body(&mut self) {
        if !self.pending.is_empty() && !self.discarding {
            let last = std::mem::take(&mut self.pending);
            self.line(&last);
        }
        if self.framing == Framing::Sse && self.data.is_some() {
            self.data = None;
            self.check.malformed(
                "sse_framing",
                "the body ended inside a frame (no blank line after its data): the frame is lost",
            );
        }
    }

    fn line(&mut self, line: &[u8]) {
        self.lines += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > DEFAULT_MAX_LINE_BYTES {
            let (n, lines) = (line.len(), self.lines);
            let message = format!("line {lines}: {n} bytes, beyond the 4 MiB bound (D8)");
            self.check.malformed("line_bound", message);
            return;
        }
        if self.lines == 1 && line.starts_with(&[0xEF, 0xBB, 0xBF]) {
            let check = if self.framing == Framing::Sse {
                "sse_framing"
            } else {
                "ndjson_framing"
            };
            self.check
                .malformed(check, "the body starts with a byte-order mark");
        }
        match self.framing {
            Framing::Ndjson if line.is_empty() => self.check.malformed(
                "ndjson_framing",
                format!(
                    "line {}: a blank line (NDJSON has none: a malformed event, D8)",
                    self.lines
                ),
            ),
            Framing::Ndjson => self.parse(line),
            Framing::Sse => self.sse_line(line),
        }
    }

    fn sse_line(&mut self, line: &[u8]) {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                self.parse(data.as_bytes());
            }
            return;
        }
        if line.starts_with(b":") {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, &[][..]),
        };
        if field != b"data" {
            return;
        }
        let value = value.strip_prefix(b" ").unwrap_or(value);
        let Ok(value) = std::str::from_utf8(value) else {
            let lines = self.lines;
            self.check
                .malformed("parse", format!("line {lines}: data that is not UTF-8"));
            return;
        };
        let d = match self.data.as_mut() {
            Some(d) => {
                // A second data line joins the first with a newline.
                d.push('\n');
                d
            }
            None => self.data.insert(String::new()),
        };
        d.push_str(value);
        if d.len() > DEFAULT_MAX_LINE_BYTES {
            let n = d.len();
            self.data = None;
            self.check.malformed(
                "line_bound",
                format!("a frame's data over {n} bytes, beyond the 4 MiB bound (D8)"),
            );
        }
    }
    fn parse(&mut self, line: &[u8]) {
        match self.parser.parse_line(line) {
            Ok(event) => self.check.event(event),
            Err(mut e) => {
                // The body's own line number is said in front.
                e.line = None;
                let lines = self.lines;
                self.check.malformed(
                    "parse",
                    format!("line {lines}: not a canonical event (D8): {e}"),
                );
            }
        }
    }
}
