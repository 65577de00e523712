//! The benchmark corpus: a deterministic generator of canonical JSON Lines
//! runs shaped like real ones, for benchmarks and memory checks (issue 7).
//! `cargo xtask corpus` is a command line over it, the benches
//! (`lce-benches`) and `cargo xtask memcheck` call it in process.
//!
//! ```
//! use lce_testkit::corpus::{self, Mix, Options};
//! let options = Options { events: 100, mix: Mix::Tools, seed: 7 };
//! let mut out = Vec::new();
//! let stats = corpus::write(&options, &mut out).unwrap();
//! assert_eq!(stats.events(), 100);
//! assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 100);
//! assert_eq!(corpus::to_vec(&options).unwrap(), out); // the same bytes every time
//! ```
//!
//! The output is ONE valid run of exactly `events` events (at least 2):
//! `run.started` at sequence 0, contiguous sequences, every text, reasoning,
//! tool and namespace span closed, and one `run.finished` (with a committed
//! `thread_state`) as the last line. Timestamps start at
//! `2026-08-17T09:00:00.000Z` ([`START_MS`]) and grow
//! by 1 to 9 ms per event. The same seed and mix give the same bytes on every
//! machine: the only randomness is a seeded splitmix64, and no floating point
//! is involved.
//!
//! Memory is constant whatever the count is: each event is handed to the
//! writer (one `write_all` per line) as it is produced; the generator only
//! remembers the open spans (at most three namespace levels, one open block
//! each, a tool's arguments of at most 4 KiB). Wrap a file or a pipe in a
//! [`BufWriter`](std::io::BufWriter).
//!
//! # How a run is built
//!
//! Each namespace level runs a sequence of *blocks*, chosen by the mix's
//! weights (per mille of blocks started):
//!
//! | block | events |
//! |---|---|
//! | text | `text.started`, k `text.delta` (5-40 bytes each, with accents, CJK, emoji and JSON escapes), `text.finished` |
//! | reasoning | the same with `reasoning.*` |
//! | tool, arguments at start | `tool.started` with an arguments object, `tool.finished` (result) or `tool.error` |
//! | tool, streamed arguments | `tool.started` with `{}`, k `tool.arguments.delta` fragments split at any character, `tool.finished` or `tool.error` |
//! | delegation (levels 0 and 1 only) | `tool.started` (`task`), `namespace.entered`, 2-8 child blocks in namespace `parent + [tool_call_id]`, `namespace.exited`, `tool.finished` |
//! | warning, usage, metadata | one `warning`, `usage.updated` or `provider.metadata` |
//!
//! Tool arguments are 100 B to 4 KiB (skewed small), results 0 to 8 KiB
//! (skewed small). When the remaining budget only leaves room to close what
//! is open, the generator closes spans innermost first (a streamed tool's
//! unsent arguments go out as one last fragment); when a new block would not
//! fit, it writes a `usage.updated` instead. So the tail of a run can differ a
//! little from its body, never its validity.
//!
//! The mixes and their measured proportions are documented in
//! `docs/corpus.md`.

use std::fmt::{self, Write as _};
use std::io::{self, Write};

use crate::json::escape_into;
use crate::rng::SplitMix64;
use crate::time::{START_MS, write_rfc3339_ms as write_timestamp};

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// The exact number of events (lines), at least 2: `run.started` and
    /// the terminal.
    pub events: u64,
    /// The kind of run.
    pub mix: Mix,
    /// The PRNG seed; the same seed and mix give the same bytes.
    pub seed: u64,
}

impl Options {
    /// `events` events of the [`Mix::Mixed`] mix with seed 1, the defaults
    /// of `cargo xtask corpus`.
    pub fn new(events: u64) -> Self {
        Options {
            events,
            mix: Mix::Mixed,
            seed: 1,
        }
    }
}

/// Writes one run as `options` describe it to `out`, one `write_all` per
/// line, then flushes `out`. Returns what was written.
///
/// # Errors
///
/// `out`'s errors, as they come; [`io::ErrorKind::InvalidInput`] (before
/// anything is written) when `options.events` is less than 2.
pub fn write(options: &Options, mut out: impl Write) -> io::Result<Stats> {
    generate(&mut out, options)
}

/// The run [`write()`] writes, in memory.
///
/// # Errors
///
/// [`io::ErrorKind::InvalidInput`] when `options.events` is less than 2.
pub fn to_vec(options: &Options) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    generate(&mut out, options)?;
    Ok(out)
}

// ---------------------------------------------------------------- the mixes

/// A kind of run (`docs/corpus.md` has the weights, sizes and measured
/// proportions of each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mix {
    /// About 95% text deltas: long messages, a little reasoning, rare small
    /// tools.
    Text,
    /// Tool-heavy: most blocks are tool calls (half of them with streamed
    /// arguments), with big arguments and results.
    Tools,
    /// A realistic blend of everything, with subagents two deep.
    Mixed,
}

impl Mix {
    /// Every mix.
    pub const ALL: [Mix; 3] = [Mix::Text, Mix::Tools, Mix::Mixed];

    /// The mix's name: `text`, `tools` or `mixed` (what `--mix` takes).
    pub fn name(self) -> &'static str {
        self.shape().name
    }

    /// The mix named `name` (see [`Mix::name`]), if any.
    pub fn from_name(name: &str) -> Option<Mix> {
        Mix::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The weights and sizes of the mix.
    fn shape(self) -> &'static Shape {
        match self {
            Mix::Text => &TEXT,
            Mix::Tools => &TOOLS,
            Mix::Mixed => &MIXED,
        }
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mix's block weights (per mille) and sizes.
#[derive(Debug)]
struct Shape {
    /// The mix's name.
    name: &'static str,
    /// Weights of the blocks, in the order of [`BlockKind::ALL`].
    weights: [u32; 8],
    /// Deltas per text message (inclusive range).
    text_deltas: (u32, u32),
    /// Deltas per reasoning span.
    reasoning_deltas: (u32, u32),
    /// Size of a tool's arguments in bytes.
    args_bytes: (usize, usize),
    /// Size of a tool's result in bytes.
    result_bytes: (usize, usize),
    /// Fragments of streamed arguments.
    fragments: (u32, u32),
    /// Percent of tools that end with `tool.error`.
    tool_error_percent: u64,
    /// Blocks run inside a delegated namespace.
    child_blocks: (u32, u32),
}

/// The kinds of block, in the order of [`Shape::weights`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockKind {
    /// A text message.
    Text,
    /// A reasoning span.
    Reasoning,
    /// A tool call with its arguments in `tool.started`.
    ToolInline,
    /// A tool call whose arguments stream as `tool.arguments.delta`.
    ToolStreamed,
    /// A `task` call delegating to a subagent namespace.
    Delegation,
    /// One `warning`.
    Warning,
    /// One `usage.updated`.
    Usage,
    /// One `provider.metadata`.
    Metadata,
}

impl BlockKind {
    /// Every kind, in weight order.
    const ALL: [BlockKind; 8] = [
        BlockKind::Text,
        BlockKind::Reasoning,
        BlockKind::ToolInline,
        BlockKind::ToolStreamed,
        BlockKind::Delegation,
        BlockKind::Warning,
        BlockKind::Usage,
        BlockKind::Metadata,
    ];
}

/// `mixes! { field: text, tools, mixed; ... }`: the [`Shape`] of each mix
/// ([`Mix`] says what each is for), written as one table: a row per field,
/// a column per mix, so each number reads against the same number of the
/// other mixes (the numbers are the point; the benches and
/// `docs/performance.md` name the mixes).
macro_rules! mixes {
    ($($field:ident: $text:expr, $tools:expr, $mixed:expr;)*) => {
        static TEXT: Shape = Shape { $($field: $text),* };
        static TOOLS: Shape = Shape { $($field: $tools),* };
        static MIXED: Shape = Shape { $($field: $mixed),* };
    };
}

mixes! {
    //                  text                            tools                               mixed
    name:               "text",                         "tools",                            "mixed";
    weights:            [940, 30, 10, 0, 5, 0, 15, 0],  [150, 50, 380, 330, 30, 20, 40, 0], [450, 100, 180, 100, 60, 20, 80, 10];
    text_deltas:        (30, 90),                       (3, 20),                            (5, 60);
    reasoning_deltas:   (5, 40),                        (3, 15),                            (3, 30);
    args_bytes:         (100, 600),                     (100, 4096),                        (100, 4096);
    result_bytes:       (0, 1024),                      (0, 8192),                          (0, 8192);
    fragments:          (3, 12),                        (4, 48),                            (3, 24);
    tool_error_percent: 2,                              5,                                  4;
    child_blocks:       (2, 5),                         (2, 8),                             (2, 8);
}

// ------------------------------------------------------------------ the PRNG

/// The generator's draws: [`SplitMix64`] and the ranges the corpus takes
/// from it.
#[derive(Debug, Clone)]
struct Rng(SplitMix64);

impl Rng {
    /// A generator seeded with `seed`.
    const fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed))
    }

    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`; 0 when `n == 0`).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, (lo, hi): (u32, u32)) -> u32 {
        lo + self.below(u64::from(hi - lo) + 1) as u32
    }

    /// Uniform in `lo..=hi`.
    fn range_usize(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo) as u64 + 1) as usize
    }

    /// Skewed towards `lo`: the smaller of two uniform draws.
    fn skewed(&mut self, (lo, hi): (usize, usize)) -> usize {
        self.range_usize(lo, hi).min(self.range_usize(lo, hi))
    }

    /// True with the given percent probability.
    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }

    /// One element of a non-empty slice.
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

// ------------------------------------------------------------------ content

/// Words text is made of: ASCII, accents, CJK, emoji, other scripts, and
/// characters JSON must escape.
const WORDS: &[&str] = &[
    "the",
    "policy",
    "audit",
    "logs",
    "are",
    "retained",
    "for",
    "400",
    "days",
    "and",
    "then",
    "we",
    "check",
    "ticket",
    "OPS-4412",
    "result",
    "deploy",
    "région",
    "café",
    "Zürich",
    "naïve",
    "résumé",
    "déjà",
    "vu",
    "crédit",
    "refusé",
    "straße",
    "København",
    "Ærø",
    "東京",
    "の",
    "天気",
    "数据",
    "分析",
    "レポート",
    "🚀",
    "☔",
    "👍🏽",
    "🙂",
    "✓",
    "«",
    "»",
    "—",
    "Привет",
    "مرحبا",
    "\"quoted\"",
    "back\\slash",
    "tab\tstop",
    "line\nbreak",
    "18 °C",
    "~/.config",
    "<b>",
    "50%",
    "x=1",
    "it's",
];

/// Tool names for ordinary calls.
const TOOL_NAMES: &[&str] = &[
    "search_docs",
    "get_weather",
    "create_ticket",
    "read_file",
    "run_sql",
    "http_get",
    "write_file",
];

/// Subagents entered from the root, and their display names.
const AGENTS_1: &[(&str, &str)] = &[
    ("researcher", "Research agent"),
    ("coder", "Coding agent"),
    ("planner", "Planning agent"),
];

/// Subagents entered from a subagent.
const AGENTS_2: &[(&str, &str)] = &[
    ("searcher", "Search agent"),
    ("reviewer", "Review agent"),
    ("summarizer", "Summary agent"),
];

/// Appends words (raw, unescaped) to `out` until it holds at least `bytes`
/// bytes.
fn words_into(rng: &mut Rng, out: &mut String, bytes: usize) {
    while out.len() < bytes {
        if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
        out.push_str(rng.pick(WORDS));
    }
}

/// A text delta of 5 to 40 bytes (raw UTF-8), cut on a character boundary.
fn delta_text(rng: &mut Rng, out: &mut String) {
    out.clear();
    let target = rng.range_usize(5, 40);
    if rng.percent(60) {
        out.push(' ');
    }
    words_into(rng, out, target);
    let mut end = out.len().min(40);
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
}

/// A JSON arguments object of `bytes` bytes or a little more, and never more
/// than 4 KiB.
fn arguments_json(rng: &mut Rng, bytes: usize) -> String {
    let bytes = bytes.min(4096 - 32);
    let mut raw = String::new();
    let mut out = String::with_capacity(bytes + 64);
    out.push_str("{\"query\":\"");
    let len = rng_len(rng, 8, 40);
    words_into(rng, &mut raw, len);
    escape_into(&mut out, &raw);
    out.push('"');
    if bytes >= 300 {
        let _ = write!(
            out,
            ",\"path\":\"/srv/data/{}.json\",\"limit\":{},\"ratio\":0.{},\"offset\":-{},\"labels\":[\"billing\",\"ops\"],\"exact\":{},\"cursor\":null",
            rng.below(100_000),
            rng.below(500) + 1,
            rng.below(99) + 1,
            rng.below(50),
            rng.percent(50),
        );
    }
    out.push_str(",\"body\":\"");
    while out.len() + 2 < bytes {
        raw.clear();
        raw.push_str(rng.pick(WORDS));
        raw.push(' ');
        escape_into(&mut out, &raw);
    }
    out.push_str("\"}");
    out
}

/// A length in `lo..=hi`.
fn rng_len(rng: &mut Rng, lo: usize, hi: usize) -> usize {
    rng.range_usize(lo, hi)
}

// ------------------------------------------------------------- the machine

/// How far a delegation got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// `tool.started` written; the namespace not entered yet.
    Started,
    /// The child namespace is the next level.
    Entered,
    /// The child namespace exited; `tool.finished` is next.
    Exited,
}

/// The open block of a level.
#[derive(Debug)]
enum Block {
    /// An open text or reasoning span.
    Text {
        /// `reasoning.*` rather than `text.*`.
        reasoning: bool,
        /// The span's message id.
        id: String,
        /// Deltas still to write.
        left: u32,
    },
    /// An open tool call.
    Tool {
        /// The call id.
        id: String,
        /// The whole arguments text.
        args: String,
        /// Bytes of `args` already written.
        sent: usize,
        /// Fragments still to write (the last one takes the rest).
        fragments: u32,
    },
    /// An open `task` call.
    Delegation {
        /// The call id (and the child namespace's last element).
        id: String,
        /// The subagent.
        agent: (&'static str, &'static str),
        /// How far it got.
        phase: Phase,
    },
}

impl Block {
    /// Events needed to close this block (children not included).
    fn closing_cost(&self) -> u64 {
        match self {
            Block::Text { .. } => 1,
            Block::Tool { args, sent, .. } => 1 + u64::from(*sent < args.len()),
            Block::Delegation {
                phase: Phase::Entered,
                ..
            } => 2,
            Block::Delegation { .. } => 1,
        }
    }
}

/// One namespace level.
#[derive(Debug)]
struct Level {
    /// The namespace of events at this level.
    namespace: Vec<String>,
    /// The open block, if any.
    open: Option<Block>,
    /// Blocks a child level may still start (`None` at the root).
    blocks_left: Option<u32>,
}

/// What [`write()`] wrote: counts of events and bytes, and of each event type.
/// Its [`Display`](fmt::Display) is the table `cargo xtask corpus --stats`
/// prints (types by count, with their share of the run).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events per type, in first-seen order.
    by_type: Vec<(&'static str, u64)>,
    /// Events written.
    events: u64,
    /// Bytes written.
    bytes: u64,
}

impl Stats {
    /// Events (lines) written.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bytes written, newlines included.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Events of type `ty` (its wire name, e.g. `text.delta`).
    pub fn count(&self, ty: &str) -> u64 {
        self.by_type
            .iter()
            .find(|(t, _)| *t == ty)
            .map_or(0, |(_, n)| *n)
    }

    /// Each event type written (wire name) with its count, in the order the
    /// types first appeared.
    pub fn by_type(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.by_type.iter().copied()
    }

    /// Counts one event.
    fn add(&mut self, ty: &'static str, bytes: usize) {
        self.events += 1;
        self.bytes += bytes as u64;
        match self.by_type.iter_mut().find(|(t, _)| *t == ty) {
            Some((_, n)) => *n += 1,
            None => self.by_type.push((ty, 1)),
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "events {}  bytes {}", self.events, self.bytes)?;
        let mut rows = self.by_type.clone();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (ty, n) in rows {
            let permille = n * 1000 / self.events.max(1);
            writeln!(
                f,
                "{ty:<22} {n:>12} {:>3}.{}%",
                permille / 10,
                permille % 10
            )?;
        }
        Ok(())
    }
}

/// The generator: PRNG, open spans, and the writer. Not generic over the
/// writer, so the whole generator is compiled (and optimised) here once,
/// whichever crate calls it.
struct Generator<'a> {
    /// Where lines go.
    out: &'a mut dyn Write,
    /// The mix's weights and sizes.
    mix: &'static Shape,
    /// The PRNG.
    rng: Rng,
    /// `run_id`.
    run_id: String,
    /// `conversation_id`.
    conversation_id: String,
    /// Next sequence number.
    sequence: u64,
    /// Current timestamp, milliseconds since the epoch.
    now_ms: i64,
    /// Counter making ids unique.
    next_id: u64,
    /// Namespace levels, root first.
    levels: Vec<Level>,
    /// Cumulative usage figures.
    tokens: (u64, u64),
    /// The line being built.
    line: String,
    /// Scratch text.
    scratch: String,
    /// What was written.
    stats: Stats,
}

/// Writes one run of `options.events` events to `out`.
fn generate(out: &mut dyn Write, options: &Options) -> io::Result<Stats> {
    if options.events < 2 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a corpus run has at least 2 events (run.started and a terminal)",
        ));
    }
    let mut g = Generator {
        out,
        mix: options.mix.shape(),
        rng: Rng::new(options.seed ^ 0x6C63_6563_6F72_7075), // "lcecorpu"
        run_id: format!("run-corpus-{}-{}", options.mix.name(), options.seed),
        conversation_id: format!("conv-corpus-{}", options.seed),
        sequence: 0,
        now_ms: START_MS,
        next_id: 1,
        levels: vec![Level {
            namespace: Vec::new(),
            open: None,
            blocks_left: None,
        }],
        tokens: (0, 0),
        line: String::with_capacity(16 * 1024),
        scratch: String::with_capacity(256),
        stats: Stats::default(),
    };
    let n = options.events;
    g.emit("run.started", 0, |g, d| {
        let _ = write!(
            d,
            "\"harness_id\":\"deepagents\",\"adapter_version\":\"1.0.0\",\"provider_run_id\":\"resp_{:016x}\"",
            g.rng.next_u64()
        );
    })?;
    while g.sequence < n - 1 {
        let room = n - 1 - g.sequence; // events left before the terminal
        let cost: u64 = g
            .levels
            .iter()
            .filter_map(|l| l.open.as_ref())
            .map(Block::closing_cost)
            .sum();
        if room <= cost {
            g.close_one()?;
        } else {
            g.step(room - 1 - cost)?;
        }
    }
    let revision = g.rng.below(1000) + 1;
    let head = g.rng.next_u64();
    g.emit("run.finished", 0, |_, d| {
        let _ = write!(
            d,
            "\"outcome\":\"success\",\"stop_reason\":\"end_turn\",\"thread_state\":{{\"durability\":\"committed\",\"durable_revision\":{revision},\"head_ref\":\"head-{head:016x}\"}}"
        );
    })?;
    g.out.flush()?;
    Ok(g.stats)
}

impl Generator<'_> {
    /// Writes one event at level `level`; `data` appends the payload's members.
    fn emit(
        &mut self,
        ty: &'static str,
        level: usize,
        data: impl FnOnce(&mut Self, &mut String),
    ) -> io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let _ = write!(
            line,
            "{{\"version\":1,\"type\":\"{ty}\",\"run_id\":\"{}\",\"conversation_id\":\"{}\",\"sequence\":{},\"timestamp\":\"",
            self.run_id, self.conversation_id, self.sequence
        );
        write_timestamp(&mut line, self.now_ms);
        line.push_str("\",\"namespace\":[");
        for (i, part) in self.levels[level].namespace.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push('"');
            line.push_str(part);
            line.push('"');
        }
        line.push_str("],\"data\":{");
        data(self, &mut line);
        line.push_str("}}\n");
        self.out.write_all(line.as_bytes())?;
        self.stats.add(ty, line.len());
        self.line = line;
        self.sequence += 1;
        self.now_ms += 1 + self.rng.below(9) as i64;
        Ok(())
    }

    /// A fresh id with a prefix.
    fn id(&mut self, prefix: &str) -> String {
        let n = self.next_id;
        self.next_id += 1;
        format!("{prefix}{n}_{:04x}", self.rng.below(0x1_0000))
    }

    /// Writes the next event that closes something (innermost first).
    fn close_one(&mut self) -> io::Result<()> {
        let level = self.levels.len() - 1;
        match self.levels[level].open.take() {
            Some(Block::Text { reasoning, id, .. }) => self.finish_text(level, reasoning, &id),
            Some(Block::Tool { id, args, sent, .. }) if sent < args.len() => {
                let rest = args[sent..].to_owned();
                self.args_delta(level, &id, &rest)?;
                let sent = args.len();
                self.levels[level].open = Some(Block::Tool {
                    id,
                    args,
                    sent,
                    fragments: 0,
                });
                Ok(())
            }
            Some(Block::Tool { id, .. }) => self.finish_tool(level, &id, false),
            Some(Block::Delegation { id, .. }) => self.finish_tool(level, &id, false),
            None => self.exit_namespace(),
        }
    }

    /// Writes the next event of the innermost level; `slack` is how many more
    /// closing events this one may add.
    fn step(&mut self, slack: u64) -> io::Result<()> {
        let level = self.levels.len() - 1;
        match self.levels[level].open.take() {
            Some(Block::Text {
                reasoning,
                id,
                left,
            }) => {
                if left == 0 {
                    return self.finish_text(level, reasoning, &id);
                }
                let mut text = std::mem::take(&mut self.scratch);
                delta_text(&mut self.rng, &mut text);
                let ty = if reasoning {
                    "reasoning.delta"
                } else {
                    "text.delta"
                };
                self.emit(ty, level, |_, d| {
                    d.push_str("\"message_id\":\"");
                    d.push_str(&id);
                    d.push_str("\",\"delta\":\"");
                    escape_into(d, &text);
                    d.push('"');
                })?;
                self.scratch = text;
                self.levels[level].open = Some(Block::Text {
                    reasoning,
                    id,
                    left: left - 1,
                });
                Ok(())
            }
            Some(Block::Tool {
                id,
                args,
                sent,
                fragments,
            }) if sent < args.len() => {
                let remaining = args.len() - sent;
                let end = if fragments <= 1 {
                    args.len()
                } else {
                    let mean = remaining / fragments as usize;
                    let mut end = sent + self.rng.range_usize(1, (2 * mean).max(1)).min(remaining);
                    while !args.is_char_boundary(end) {
                        end += 1;
                    }
                    end
                };
                let fragment = args[sent..end].to_owned();
                self.args_delta(level, &id, &fragment)?;
                let fragments = fragments.saturating_sub(1);
                self.levels[level].open = Some(Block::Tool {
                    id,
                    args,
                    sent: end,
                    fragments,
                });
                Ok(())
            }
            Some(Block::Tool { id, .. }) => {
                let error = self.rng.percent(self.mix.tool_error_percent);
                self.finish_tool(level, &id, error)
            }
            Some(Block::Delegation {
                id,
                agent,
                phase: Phase::Started,
            }) => {
                if slack == 0 {
                    self.levels[level].open = Some(Block::Delegation {
                        id,
                        agent,
                        phase: Phase::Started,
                    });
                    return self.usage(level);
                }
                self.emit("namespace.entered", level, |_, d| {
                    let _ = write!(
                        d,
                        "\"agent_id\":\"{}\",\"agent_name\":\"{}\",\"parent_tool_call_id\":\"{id}\"",
                        agent.0, agent.1
                    );
                })?;
                let mut namespace = self.levels[level].namespace.clone();
                namespace.push(id.clone());
                let blocks = self.rng.range(self.mix.child_blocks);
                self.levels[level].open = Some(Block::Delegation {
                    id,
                    agent,
                    phase: Phase::Entered,
                });
                self.levels.push(Level {
                    namespace,
                    open: None,
                    blocks_left: Some(blocks),
                });
                Ok(())
            }
            Some(Block::Delegation { id, .. }) => self.finish_tool(level, &id, false),
            None if self.levels[level].blocks_left == Some(0) => self.exit_namespace(),
            None => self.start_block(level, slack),
        }
    }

    /// Starts a block chosen by the mix's weights at `level`.
    fn start_block(&mut self, level: usize, slack: u64) -> io::Result<()> {
        let total: u32 = self.mix.weights.iter().sum();
        let mut draw = self.rng.below(u64::from(total)) as u32;
        let mut kind = BlockKind::Usage;
        for (k, w) in BlockKind::ALL.iter().zip(self.mix.weights) {
            if draw < w {
                kind = *k;
                break;
            }
            draw -= w;
        }
        if kind == BlockKind::Delegation && self.levels[level].namespace.len() >= 2 {
            kind = BlockKind::ToolInline;
        }
        let adds = match kind {
            BlockKind::ToolStreamed => 2,
            BlockKind::Text
            | BlockKind::Reasoning
            | BlockKind::ToolInline
            | BlockKind::Delegation => 1,
            _ => 0,
        };
        if adds > slack {
            kind = BlockKind::Usage;
        }
        if let Some(left) = &mut self.levels[level].blocks_left {
            *left -= 1;
        }
        match kind {
            BlockKind::Text | BlockKind::Reasoning => {
                let reasoning = kind == BlockKind::Reasoning;
                let (prefix, ty, range) = if reasoning {
                    ("rsn-", "reasoning.started", self.mix.reasoning_deltas)
                } else {
                    ("msg-", "text.started", self.mix.text_deltas)
                };
                let id = self.id(prefix);
                let left = self.rng.range(range);
                self.emit(ty, level, |_, d| {
                    let _ = write!(d, "\"message_id\":\"{id}\",\"role\":\"assistant\"");
                })?;
                self.levels[level].open = Some(Block::Text {
                    reasoning,
                    id,
                    left,
                });
            }
            BlockKind::ToolInline | BlockKind::ToolStreamed => {
                let id = self.id("call_");
                let name = self.rng.pick(TOOL_NAMES);
                let bytes = self.rng.skewed(self.mix.args_bytes);
                let args = arguments_json(&mut self.rng, bytes);
                let streamed = kind == BlockKind::ToolStreamed;
                let parent = self.rng.percent(30).then(|| self.rng.next_u64());
                self.emit("tool.started", level, |_, d| {
                    let _ = write!(
                        d,
                        "\"tool_call_id\":\"{id}\",\"tool_name\":\"{name}\",\"arguments\":"
                    );
                    d.push_str(if streamed { "{}" } else { &args });
                    if let Some(parent) = parent {
                        let _ = write!(d, ",\"parent_message_id\":\"msg-parent-{parent:08x}\"");
                    }
                })?;
                let (sent, fragments) = if streamed {
                    (0, self.rng.range(self.mix.fragments))
                } else {
                    (args.len(), 0)
                };
                self.levels[level].open = Some(Block::Tool {
                    id,
                    args,
                    sent,
                    fragments,
                });
            }
            BlockKind::Delegation => {
                let id = self.id("call_task_");
                let agent = self.rng.pick(if self.levels[level].namespace.is_empty() {
                    AGENTS_1
                } else {
                    AGENTS_2
                });
                let mut description = std::mem::take(&mut self.scratch);
                description.clear();
                let len = rng_len(&mut self.rng, 60, 300);
                words_into(&mut self.rng, &mut description, len);
                self.emit("tool.started", level, |_, d| {
                    let _ = write!(
                        d,
                        "\"tool_call_id\":\"{id}\",\"tool_name\":\"task\",\"arguments\":{{\"subagent_type\":\"{}\",\"description\":\"",
                        agent.0
                    );
                    escape_into(d, &description);
                    d.push_str("\"}");
                })?;
                self.scratch = description;
                self.levels[level].open = Some(Block::Delegation {
                    id,
                    agent,
                    phase: Phase::Started,
                });
            }
            BlockKind::Warning => {
                let (code, message) = self.rng.pick(&[
                    (
                        "mcp_server_unavailable",
                        "The calendar tool server is unavailable; answering without it.",
                    ),
                    (
                        "rate_limited_retrying",
                        "The model provider is rate limiting; retrying.",
                    ),
                    (
                        "context_truncated",
                        "Older messages were left out to fit the context window.",
                    ),
                ]);
                let attempts = self.rng.below(5) + 1;
                let details = self.rng.percent(70);
                self.emit("warning", level, |_, d| {
                    let _ = write!(d, "\"code\":\"{code}\",\"message\":\"{message}\"");
                    if details {
                        let _ = write!(
                            d,
                            ",\"details\":{{\"server\":\"calendar-mcp\",\"attempts\":{attempts},\"retry\":{{\"backoff_ms\":[100,200,400]}}}}"
                        );
                    }
                })?;
            }
            BlockKind::Usage => self.usage(level)?,
            BlockKind::Metadata => {
                let request = self.rng.next_u64();
                let latency = self.rng.below(3000) + 50;
                self.emit("provider.metadata", level, |_, d| {
                    let _ = write!(
                        d,
                        "\"provider\":\"openai\",\"model\":\"gpt-4.1-2025-04-14\",\"metadata\":{{\"request_id\":\"req_{request:016x}\",\"region\":\"eu-west-1\",\"latency_ms\":{latency},\"service_tier\":\"default\"}}"
                    );
                })?;
            }
        }
        Ok(())
    }

    /// Writes a `usage.updated` with growing totals.
    fn usage(&mut self, level: usize) -> io::Result<()> {
        self.tokens.0 += self.rng.below(2000) + 1;
        self.tokens.1 += self.rng.below(400) + 1;
        let (input, output) = self.tokens;
        let cached = self.rng.percent(50).then_some(input / 2);
        self.emit("usage.updated", level, |_, d| {
            let _ = write!(d, "\"input_tokens\":{input},\"output_tokens\":{output}");
            if let Some(cached) = cached {
                let _ = write!(d, ",\"cached_input_tokens\":{cached}");
            }
            d.push_str(",\"final\":false");
        })
    }

    /// Writes `text.finished` or `reasoning.finished`.
    fn finish_text(&mut self, level: usize, reasoning: bool, id: &str) -> io::Result<()> {
        let ty = if reasoning {
            "reasoning.finished"
        } else {
            "text.finished"
        };
        self.emit(ty, level, |_, d| {
            let _ = write!(d, "\"message_id\":\"{id}\"");
        })
    }

    /// Writes one `tool.arguments.delta`.
    fn args_delta(&mut self, level: usize, id: &str, fragment: &str) -> io::Result<()> {
        self.emit("tool.arguments.delta", level, |_, d| {
            let _ = write!(d, "\"tool_call_id\":\"{id}\",\"delta\":\"");
            escape_into(d, fragment);
            d.push('"');
        })
    }

    /// Writes `tool.finished` (a result of up to 8 KiB) or `tool.error`.
    fn finish_tool(&mut self, level: usize, id: &str, error: bool) -> io::Result<()> {
        if error {
            let retryable = self.rng.percent(30);
            return self.emit("tool.error", level, |_, d| {
                let _ = write!(
                    d,
                    "\"tool_call_id\":\"{id}\",\"code\":\"tool_error\",\"message\":\"The tool timed out after 30 s.\",\"retryable\":{retryable}"
                );
            });
        }
        let mut result = std::mem::take(&mut self.scratch);
        result.clear();
        let bytes = self.rng.skewed(self.mix.result_bytes);
        if bytes > 0 {
            words_into(&mut self.rng, &mut result, bytes);
            let mut end = result.len().min(self.mix.result_bytes.1);
            while !result.is_char_boundary(end) {
                end -= 1;
            }
            result.truncate(end);
        }
        let reference = self.rng.percent(20).then(|| self.rng.next_u64());
        self.emit("tool.finished", level, |_, d| {
            let _ = write!(d, "\"tool_call_id\":\"{id}\",\"result\":\"");
            escape_into(d, &result);
            d.push('"');
            if let Some(reference) = reference {
                let _ = write!(d, ",\"result_ref\":\"artifact://{reference:016x}\"");
            }
        })?;
        self.scratch = result;
        Ok(())
    }

    /// Writes `namespace.exited` for the innermost level and pops it.
    fn exit_namespace(&mut self) -> io::Result<()> {
        let Some(parent) = self.levels.len().checked_sub(2) else {
            return Err(io::Error::other("corpus: no namespace to exit"));
        };
        let (id, agent) = match &self.levels[parent].open {
            Some(Block::Delegation { id, agent, .. }) => (id.clone(), *agent),
            _ => {
                return Err(io::Error::other(
                    "corpus: a child namespace without its delegation",
                ));
            }
        };
        self.emit("namespace.exited", parent, |_, d| {
            let _ = write!(
                d,
                "\"agent_id\":\"{}\",\"parent_tool_call_id\":\"{id}\",\"outcome\":\"success\"",
                agent.0
            );
        })?;
        self.levels.pop();
        self.levels[parent].open = Some(Block::Delegation {
            id,
            agent,
            phase: Phase::Exited,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn mixes_by_name() {
        for mix in Mix::ALL {
            assert_eq!(Mix::from_name(mix.name()), Some(mix));
            assert_eq!(mix.to_string(), mix.name());
        }
        assert_eq!(Mix::from_name("nope"), None);
        assert_eq!(Options::new(10).mix, Mix::Mixed);
    }

    #[test]
    fn fewer_than_two_events_is_refused_before_writing() {
        for events in [0, 1] {
            let mut out = Vec::new();
            let err = write(&Options::new(events), &mut out).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(out.is_empty());
        }
    }

    #[test]
    fn exact_counts_same_bytes_and_stats_that_add_up() {
        for mix in Mix::ALL {
            for events in [2, 3, 5, 64, 1000] {
                let options = Options {
                    events,
                    mix,
                    seed: 9,
                };
                let mut out = Vec::new();
                let stats = write(&options, &mut out).unwrap();
                assert_eq!(to_vec(&options).unwrap(), out, "{options:?}");
                let lines = out.iter().filter(|&&b| b == b'\n').count() as u64;
                assert_eq!((stats.events(), lines), (events, events), "{options:?}");
                assert_eq!(stats.bytes(), out.len() as u64);
                assert_eq!(stats.by_type().map(|(_, n)| n).sum::<u64>(), events);
                assert_eq!(stats.by_type().next(), Some(("run.started", 1)));
                assert_eq!(stats.count("run.finished"), 1);
                assert_eq!(stats.count("no.such.type"), 0);
                let table = stats.to_string();
                assert!(table.starts_with(&format!("events {events}  bytes {}\n", out.len())));
                assert_eq!(table.lines().count(), 1 + stats.by_type().count());
            }
        }
        let a = to_vec(&Options::new(500)).unwrap();
        let b = to_vec(&Options {
            seed: 2,
            ..Options::new(500)
        })
        .unwrap();
        assert_ne!(a, b, "another seed, another run");
    }

    #[test]
    fn deltas_are_5_to_40_bytes() {
        let mut rng = Rng::new(7);
        let mut s = String::new();
        for _ in 0..10_000 {
            delta_text(&mut rng, &mut s);
            assert!((5..=40).contains(&s.len()), "{s:?}");
        }
    }

    #[test]
    fn arguments_are_100_bytes_to_4_kib() {
        let mut rng = Rng::new(3);
        for target in [100, 101, 299, 300, 500, 4000, 4096] {
            let args = arguments_json(&mut rng, target);
            assert!(
                args.len() >= target.min(4000) && args.len() <= 4096,
                "{target}: {}",
                args.len()
            );
            assert!(args.starts_with('{') && args.ends_with('}'));
        }
    }
}
