//! `cargo xtask corpus`: a deterministic generator of canonical JSON Lines
//! runs shaped like real ones, for benchmarks and memory checks.
//!
//! ```text
//! cargo xtask corpus --events N [--mix text|tools|mixed] [--seed S] [--out FILE] [--stats]
//! ```
//!
//! The output is ONE valid run of exactly `N` events (`N >= 2`): `run.started`
//! at sequence 0, contiguous sequences, every text, reasoning, tool and
//! namespace span closed, and one `run.finished` (with a committed
//! `thread_state`) as the last line. Timestamps start at
//! `2026-08-17T09:00:00.000Z` and grow by 1 to 9 ms per event. The same seed
//! and mix give the same bytes on every machine: the only randomness is a
//! seeded splitmix64, and no floating point is involved.
//!
//! Memory is constant whatever `N` is: events are written through a
//! `BufWriter` as they are produced; the generator only remembers the open
//! spans (at most three namespace levels, one open block each, a tool's
//! arguments of at most 4 KiB).
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

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// Usage line of the task.
const USAGE: &str = "usage: cargo xtask corpus --events N [--mix text|tools|mixed] [--seed S] [--out FILE] [--stats]";

/// Milliseconds since the Unix epoch of 2026-08-17T09:00:00Z.
const START_MS: i64 = 1_786_957_200_000;

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    /// `--events N`: the exact number of events.
    events: u64,
    /// `--mix`: the kind of run.
    mix: &'static Mix,
    /// `--seed S`: the PRNG seed.
    seed: u64,
    /// `--out FILE`: where to write (stdout when absent).
    out: Option<PathBuf>,
    /// `--stats`: print the count of each event type to stderr.
    stats: bool,
}

/// Runs the task with the arguments after `corpus`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = parse_args(args)?;
    let stats = match &options.out {
        Some(path) => {
            let file =
                File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            generate(BufWriter::with_capacity(1 << 16, file), &options)
        }
        None => {
            let stdout = io::stdout();
            generate(BufWriter::with_capacity(1 << 16, stdout.lock()), &options)
        }
    }
    .map_err(|e| format!("corpus: cannot write: {e}"))?;
    if options.stats {
        eprint!("{}", stats.render());
    }
    Ok(())
}

/// Parses the arguments after `corpus`.
fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut events = None;
    let mut mix = &MIXED;
    let mut seed = 1;
    let mut out = None;
    let mut stats = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = |name: &str| {
            iter.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--events" => {
                let text = value("--events")?;
                let n: u64 = text
                    .replace('_', "")
                    .parse()
                    .map_err(|_| format!("--events: `{text}` is not a count"))?;
                if n < 2 {
                    return Err("--events must be at least 2 (run.started and a terminal)".into());
                }
                events = Some(n);
            }
            "--mix" => {
                let text = value("--mix")?;
                mix = MIXES
                    .iter()
                    .copied()
                    .find(|m| m.name == text)
                    .ok_or_else(|| format!("--mix: `{text}` is not one of text, tools, mixed"))?;
            }
            "--seed" => {
                let text = value("--seed")?;
                seed = text
                    .parse()
                    .map_err(|_| format!("--seed: `{text}` is not an unsigned integer"))?;
            }
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--stats" => stats = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("corpus: unknown argument `{other}`\n{USAGE}")),
        }
    }
    let events = events.ok_or_else(|| format!("--events is required\n{USAGE}"))?;
    Ok(Options {
        events,
        mix,
        seed,
        out,
        stats,
    })
}

// ---------------------------------------------------------------- the mixes

/// A kind of run: block weights (per mille) and sizes.
#[derive(Debug)]
struct Mix {
    /// Name on the command line.
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

/// The kinds of block, in the order of [`Mix::weights`].
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

/// ≈95% text deltas: long messages, a little reasoning, rare small tools.
static TEXT: Mix = Mix {
    name: "text",
    weights: [940, 30, 10, 0, 5, 0, 15, 0],
    text_deltas: (30, 90),
    reasoning_deltas: (5, 40),
    args_bytes: (100, 600),
    result_bytes: (0, 1024),
    fragments: (3, 12),
    tool_error_percent: 2,
    child_blocks: (2, 5),
};

/// Tool-heavy: most blocks are tool calls with big arguments and results.
static TOOLS: Mix = Mix {
    name: "tools",
    weights: [150, 50, 380, 330, 30, 20, 40, 0],
    text_deltas: (3, 20),
    reasoning_deltas: (3, 15),
    args_bytes: (100, 4096),
    result_bytes: (0, 8192),
    fragments: (4, 48),
    tool_error_percent: 5,
    child_blocks: (2, 8),
};

/// A realistic blend of everything, with subagents two deep.
static MIXED: Mix = Mix {
    name: "mixed",
    weights: [450, 100, 180, 100, 60, 20, 80, 10],
    text_deltas: (5, 60),
    reasoning_deltas: (3, 30),
    args_bytes: (100, 4096),
    result_bytes: (0, 8192),
    fragments: (3, 24),
    tool_error_percent: 4,
    child_blocks: (2, 8),
};

/// Every mix, for `--mix`.
static MIXES: [&Mix; 3] = [&TEXT, &TOOLS, &MIXED];

// ------------------------------------------------------------------ the PRNG

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, good enough here.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    /// The next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
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

/// Appends `s` to `out` as the inside of a JSON string.
fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

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

/// Counts of what was written.
#[derive(Debug, Default)]
struct Stats {
    /// Events per type, in first-seen order.
    by_type: Vec<(&'static str, u64)>,
    /// Events written.
    events: u64,
    /// Bytes written.
    bytes: u64,
}

impl Stats {
    /// Counts one event.
    fn count(&mut self, ty: &'static str, bytes: usize) {
        self.events += 1;
        self.bytes += bytes as u64;
        match self.by_type.iter_mut().find(|(t, _)| *t == ty) {
            Some((_, n)) => *n += 1,
            None => self.by_type.push((ty, 1)),
        }
    }

    /// A table for stderr.
    fn render(&self) -> String {
        let mut out = format!("events {}  bytes {}\n", self.events, self.bytes);
        let mut rows = self.by_type.clone();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (ty, n) in rows {
            let permille = n * 1000 / self.events.max(1);
            let _ = writeln!(
                out,
                "{ty:<22} {n:>12} {:>3}.{}%",
                permille / 10,
                permille % 10
            );
        }
        out
    }
}

/// The generator: PRNG, open spans, and the writer.
struct Generator<'a, W: Write> {
    /// Where lines go.
    out: W,
    /// The mix.
    mix: &'a Mix,
    /// The PRNG.
    rng: Rng,
    /// `run_id` and `conversation_id`.
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
fn generate<W: Write>(out: W, options: &Options) -> io::Result<Stats> {
    let mut g = Generator {
        out,
        mix: options.mix,
        rng: Rng(options.seed ^ 0x6C63_6563_6F72_7075), // "lcecorpu"
        run_id: format!("run-corpus-{}-{}", options.mix.name, options.seed),
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

impl<W: Write> Generator<'_, W> {
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
        self.stats.count(ty, line.len());
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

/// Appends `ms` (milliseconds since the Unix epoch) as RFC 3339 UTC with
/// milliseconds, e.g. `2026-08-17T09:00:00.000Z`.
fn write_timestamp(out: &mut String, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    );
}

/// Year, month, day of a count of days since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_timestamp() {
        let mut s = String::new();
        write_timestamp(&mut s, START_MS);
        assert_eq!(s, "2026-08-17T09:00:00.000Z");
        s.clear();
        write_timestamp(&mut s, START_MS + 15 * 3_600_000 + 1);
        assert_eq!(s, "2026-08-18T00:00:00.001Z");
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn deltas_are_5_to_40_bytes() {
        let mut rng = Rng(7);
        let mut s = String::new();
        for _ in 0..10_000 {
            delta_text(&mut rng, &mut s);
            assert!((5..=40).contains(&s.len()), "{s:?}");
        }
    }

    #[test]
    fn arguments_are_100_bytes_to_4_kib() {
        let mut rng = Rng(3);
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
