//! `cargo xtask memcheck`: peak RSS of `lce encode` over generated runs of
//! different lengths, to show it stays flat (issue 7).
//!
//! For each count the corpus generator ([`lce_testkit::corpus`], seed 1, on a
//! thread of this process) streams the run through a pipe into
//! `target/release/lce encode --to FORMAT` (built first), whose output goes to
//! `/dev/null`: nothing touches the disk, so 10M events (3.2 GB of `mixed`)
//! need no space. The generator is as fast as this binary's build: about
//! 130k `mixed` events/s in the debug build `cargo xtask` runs, slower than
//! `lce encode`, so the times are the generator's; for times, run
//! `cargo run --release -p xtask -- memcheck` (the peaks do not depend on
//! it). The peak RSS comes from
//! `/usr/bin/time -v` when it is installed, else from polling the process's
//! `VmHWM` in `/proc`. Prints each peak, the time taken, and the ratio of the
//! largest run's peak to the smallest's. Each run is killed after `--timeout`
//! seconds (default 600).

use std::io::{self, BufWriter, Read as _, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lce_testkit::corpus::{self, Mix, Options};

use crate::util::{lce, workspace_root};

/// What one `lce encode` run measured.
struct Measured {
    events: u64,
    peak_kib: u64,
    seconds: f64,
    exit: String,
    first_stderr_line: String,
    generator_done: bool,
}

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The run lengths, comma-separated (each at least 2).
    #[arg(long = "events", value_name = "N,N", value_delimiter = ',',
          default_value = "100000,10000000", value_parser = at_least_two)]
    counts: Vec<u64>,
    /// The mix of event kinds: text, tools or mixed.
    #[arg(long, default_value = "mixed", value_parser = crate::corpus::mix)]
    mix: Mix,
    /// The format `lce encode` writes.
    #[arg(long = "to", value_name = "FORMAT", default_value = "custom")]
    format: String,
    /// Each run is killed after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    timeout: u64,
}

/// A run length: a count of at least 2.
fn at_least_two(text: &str) -> Result<u64, String> {
    match crate::corpus::count(text.trim())? {
        n if n < 2 => Err("--events needs counts of at least 2".into()),
        n => Ok(n),
    }
}

/// Runs the task with the arguments after `memcheck`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let Args {
        counts,
        mix,
        format,
        timeout,
    } = args;
    let timeout = Duration::from_secs(timeout);
    let root = workspace_root();
    let lce = lce(&root, true, true)?;
    let time_v = Path::new("/usr/bin/time").is_file();
    println!(
        "memcheck: lce encode --to {format}, {mix} runs, peak RSS by {}",
        if time_v {
            "/usr/bin/time -v"
        } else {
            "polling /proc/PID/status VmHWM"
        }
    );
    let mut results = Vec::new();
    for &n in &counts {
        let m = measure(&lce, n, mix, &format, time_v, timeout)?;
        println!(
            "  {:>11} events: peak RSS {:>8.2} MiB  {:>7.1} s  ({:.2} M events/s)  exit {}{}{}",
            m.events,
            m.peak_kib as f64 / 1024.0,
            m.seconds,
            m.events as f64 / m.seconds / 1e6,
            m.exit,
            if m.generator_done {
                ""
            } else {
                " (stopped reading early)"
            },
            if m.first_stderr_line.is_empty() {
                String::new()
            } else {
                format!("; stderr: {}", m.first_stderr_line)
            }
        );
        results.push(m);
    }
    if let (Some(small), Some(large)) = (results.first(), results.last()) {
        if results.len() > 1 && small.peak_kib > 0 {
            let ratio = large.peak_kib as f64 / small.peak_kib as f64;
            println!(
                "  ratio {} / {} events: {ratio:.3} (target <= 1.10); largest peak {:.2} MiB (target < 32 MiB)",
                large.events,
                small.events,
                large.peak_kib as f64 / 1024.0
            );
        }
    }
    Ok(())
}

/// A writer that fails once `stop` is set: how the generator's thread is
/// told to end (and so to close the pipe) when a run is abandoned.
struct Stoppable<W> {
    inner: W,
    stop: Arc<AtomicBool>,
}

impl<W: Write> Write for Stoppable<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(io::Error::other("memcheck: generator stopped"));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Streams `n` generated events into `lce encode` and measures it.
fn measure(
    lce: &Path,
    n: u64,
    mix: Mix,
    format: &str,
    time_v: bool,
    timeout: Duration,
) -> Result<Measured, String> {
    let mut cmd = if time_v {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-v").arg(lce);
        c
    } else {
        Command::new(lce)
    };
    let start = Instant::now();
    // The D19 defaults end a run at 1M events or 256 MiB; the point here is
    // a long run, so the limits are raised for it (as a deployment would,
    // through the environment).
    let mut child = cmd
        .args(["encode", "--to", format])
        .env("LCE_LIMIT_EVENTS_PER_RUN", n.saturating_add(10).to_string())
        .env("LCE_LIMIT_BYTES_PER_RUN", (1u64 << 40).to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start lce: {e}"))?;
    // The generator writes into lce's stdin from a thread; when lce stops
    // reading early its writes fail (a closed pipe) and the thread ends,
    // closing its end of the pipe.
    let stdin = child.stdin.take().ok_or("lce has no stdin")?;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = Stoppable {
        inner: BufWriter::with_capacity(1 << 16, stdin),
        stop: Arc::clone(&stop),
    };
    let options = Options {
        events: n,
        mix,
        seed: 1,
    };
    let generator = std::thread::spawn(move || corpus::write(&options, writer));
    // Drain stderr on a thread so a chatty child never blocks.
    let mut stderr = child.stderr.take().ok_or("lce has no stderr")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut polled_kib = 0u64;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if !time_v {
            polled_kib =
                polled_kib.max(crate::util::proc_status_kib(child.id(), "VmHWM").unwrap_or(0));
        }
        if start.elapsed() > timeout {
            // The generator's thread is not waited for: it ends at its next
            // write, which also ends an `lce` left behind by a killed
            // `/usr/bin/time` (end of input).
            stop.store(true, Ordering::Relaxed);
            kill(&mut child);
            return Err(format!("{n} events: killed after {} s", timeout.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let seconds = start.elapsed().as_secs_f64();
    // lce may stop before the end of its input (the coordinator ends a run
    // that breaks a limit): then the generator's last write failed on the
    // closed pipe, and the run did not go through whole.
    stop.store(true, Ordering::Relaxed);
    let generator_done = matches!(generator.join(), Ok(Ok(_)));
    let err = reader.join().unwrap_or_default();
    let peak_kib = if time_v {
        err.lines()
            .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or("no `Maximum resident set size` in /usr/bin/time's output")?
    } else {
        polled_kib
    };
    let first_stderr_line = err
        .lines()
        .take_while(|l| !l.starts_with("\tCommand being timed") && !l.starts_with("Command "))
        .next()
        .unwrap_or("")
        .to_owned();
    Ok(Measured {
        events: n,
        peak_kib,
        seconds,
        exit: status
            .code()
            .map_or_else(|| "by signal".to_owned(), |c| c.to_string()),
        first_stderr_line,
        generator_done,
    })
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}
