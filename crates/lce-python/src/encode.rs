//! `lce.Encoder` (an SSE encoder, event by event) and `lce.encode` /
//! `lce.encode_run` (a whole run through the chain `lce encode` builds).

use std::sync::Mutex;

use bytes::BytesMut;
use futures::StreamExt;
use lce::prelude::*;
use lce::stream::{Cause, EncodeOptions, FrameEncoder};
use lce::types::EventParser;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::input::{self, PyLines};
use crate::limits::{self, PyLimits};
use crate::{errors, shield};

/// The wire format named `to`, or `ValueError`.
fn format(to: &str) -> PyResult<WireFormat> {
    WireFormat::from_name(to).ok_or_else(|| {
        let formats = WireFormat::ALL.map(WireFormat::name).join(", ");
        PyValueError::new_err(format!(
            "unknown format `{}` (one of {formats})",
            to.escape_debug()
        ))
    })
}

/// An SSE encoder for one run (`lce_stream::WireEncoder`): canonical events
/// in, frames out, with no validation (use `lce.encode` for a run from an
/// adapter you do not trust, or check with `lce.RunValidator` first).
///
/// `encode(event)` returns the frames the event leads to (often none: DA's
/// formats hold a tool call's start until its arguments are complete,
/// D13); `idle()` returns what may go out while the producer has nothing
/// ready (D13a: held starts whose arguments are complete); `finish()` is
/// `idle()` at the end of the run, after which the encoder takes no more
/// events.
#[pyclass(name = "Encoder", module = "lce")]
pub(crate) struct PyEncoder {
    inner: WireEncoder,
    buf: BytesMut,
    finished: bool,
    /// Parses the events (consecutive events share their ids).
    parser: EventParser,
    /// Where a `dict` event is written as JSON.
    scratch: BytesMut,
}

impl PyEncoder {
    /// The bytes in the buffer, as `bytes`.
    fn take<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let out = PyBytes::new(py, &self.buf);
        self.buf.clear();
        out
    }

    fn check_open(&self) -> PyResult<()> {
        if self.finished {
            return Err(errors::other("the encoder was finished"));
        }
        Ok(())
    }
}

#[pymethods]
impl PyEncoder {
    /// An encoder for `to` (`"custom"`, `"agui"` or `"agui-v1"`);
    /// `agent_name` is the root agent's display name where the format has
    /// one (DA interrupts, D15).
    #[new]
    #[pyo3(signature = (to, agent_name = None))]
    fn new(to: &str, agent_name: Option<String>) -> PyResult<Self> {
        Ok(PyEncoder {
            inner: WireEncoder::new(format(to)?, agent_name),
            buf: BytesMut::with_capacity(4096),
            finished: false,
            parser: EventParser::new(),
            scratch: BytesMut::new(),
        })
    }

    /// The frames for `event` (a `str` or `bytes` JSON line, or a `dict`).
    fn encode<'py>(
        &mut self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.check_open()?;
        let (event, _) = input::parse_event(event, &mut self.parser, &mut self.scratch)?;
        let (encoder, buf) = (&mut self.inner, &mut self.buf);
        if let Err(e) = shield(|| encoder.encode_frame(&event, buf))? {
            self.buf.clear();
            return Err(errors::other(format!("encode error: {e}")));
        }
        Ok(self.take(py))
    }

    /// What may go out while the producer has nothing ready (D13a).
    fn idle<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.check_open()?;
        let (encoder, buf) = (&mut self.inner, &mut self.buf);
        if let Err(e) = shield(|| encoder.on_idle(buf))? {
            self.buf.clear();
            return Err(errors::other(format!("encode error: {e}")));
        }
        Ok(self.take(py))
    }

    /// The last frames of the run (what `idle()` would give); the encoder
    /// takes no more events.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let out = self.idle(py)?;
        self.finished = true;
        Ok(out)
    }

    /// The wire format's name.
    #[getter]
    fn format(&self) -> &'static str {
        self.inner.format().name()
    }
}

/// What `lce.encode_run` returns: the bytes, and whether (and why) the
/// coordinator stepped in.
///
/// `intervened` is `False` when the input was a valid run (`lce encode`
/// exits 0); otherwise `reason` is what `lce encode` writes on stderr after
/// `FILE:` (`LINE: message`, payload-free), `line` the 1-based line that
/// decided it, `cause` what the input broke (`"5"`, `"X"`, `"parse"`,
/// `"sanitize"`, ... as in the audit record), `code` the terminal's
/// `run.error` code, and `terminal` its type.
#[pyclass(name = "EncodeResult", module = "lce", frozen)]
pub(crate) struct PyEncodeResult {
    /// The SSE bytes, exactly as `lce encode` writes them.
    #[pyo3(get)]
    data: Py<PyBytes>,
    /// Whether the coordinator had to intervene.
    #[pyo3(get)]
    intervened: bool,
    /// `lce encode`'s message (`LINE: message`), when it intervened.
    #[pyo3(get)]
    reason: Option<String>,
    /// The line that decided the intervention.
    #[pyo3(get)]
    line: Option<u64>,
    /// What the input broke (`Cause::as_str`).
    #[pyo3(get)]
    cause: Option<&'static str>,
    /// The `run.error` code or `run.cancelled` reason of the terminal.
    #[pyo3(get)]
    code: Option<String>,
    /// The terminal's event type, when the coordinator intervened.
    #[pyo3(get)]
    terminal: Option<&'static str>,
}

#[pymethods]
impl PyEncodeResult {
    fn __bytes__(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "EncodeResult(<{} bytes>, intervened={}, reason={})",
            self.data.bind(py).as_bytes().len(),
            if self.intervened { "True" } else { "False" },
            self.reason
                .as_deref()
                .map_or_else(|| "None".to_owned(), |r| format!("{r:?}")),
        )
    }
}

/// What one run through the chain gave.
struct RunOutput {
    data: Vec<u8>,
    /// Where and why the coordinator stepped in, if it did.
    intervention: Option<Intervened>,
}

/// Where and why the coordinator stepped in, in `lce encode`'s words.
struct Intervened {
    line: u64,
    reason: String,
    cause: Option<Cause>,
    code: Option<String>,
    terminal: EventType,
}

/// The whole chain over `lines`, as `lce encode FILE` builds it
/// (crates/lce-cli/src/encode.rs): the run's ids from the first line, the
/// coordinator (sanitize, validate, commit to an in-memory store) and the
/// chosen encoder. `Err` only when the coordinator's output did not encode
/// (never, by its guarantee).
fn run_chain(lines: &mut PyLines, options: EncodeOptions) -> Result<RunOutput, String> {
    // A runtime from the pool, put back after the run: a call from within
    // a run (an iterable that encodes) or from another thread finds none
    // and builds its own; one whose run panicked is not put back.
    let pooled = RUNTIMES.lock().ok().and_then(|mut pool| pool.pop());
    let runtime = match pooled {
        Some(runtime) => runtime,
        None => tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?,
    };
    let out = chain_on(&runtime, lines, options);
    if let Ok(mut pool) = RUNTIMES.lock() {
        if pool.len() < MAX_POOLED_RUNTIMES {
            pool.push(runtime);
        }
    }
    out
}

/// The current-thread runtimes `encode` runs its chains on, kept between
/// calls (building one cost more than encoding a short run). A static is
/// never dropped, so no runtime is dropped in a thread's exit.
static RUNTIMES: Mutex<Vec<tokio::runtime::Runtime>> = Mutex::new(Vec::new());

/// Runtimes kept in [`RUNTIMES`] at most (one per thread that encodes at
/// the same time, up to this).
const MAX_POOLED_RUNTIMES: usize = 8;

/// [`run_chain`] on `runtime`.
fn chain_on(
    runtime: &tokio::runtime::Runtime,
    lines: &mut PyLines,
    options: EncodeOptions,
) -> Result<RunOutput, String> {
    runtime.block_on(async move {
        let items = lines.by_ref().map(|item| item.map_err(LceError::Parse));
        // The run's ids: the first line's, when it parses (as `lce encode`).
        let mut frames = lce::stream::encode_chain(futures::stream::iter(items), options).await;
        let mut data = Vec::new();
        while let Some(frame) = frames.next().await {
            match frame {
                Ok(frame) => data.extend_from_slice(&frame),
                Err(e) => return Err(format!("cannot encode: {e}")),
            }
        }
        let coordinated = frames.get_mut();
        let error = coordinated.take_error();
        let intervention = coordinated.intervention().map(|i| {
            // One item per line: the item's position is its line.
            let (line, reason) = match (i.cause, &error) {
                (Some(Cause::Parse), Some(LceError::Parse(e))) => {
                    (e.line.unwrap_or(i.position), errors::without_line(e))
                }
                _ => {
                    let reason = i.reason.clone().unwrap_or_else(|| {
                        format!(
                            "the coordinator ended the run with {}",
                            i.code.clone().unwrap_or_default()
                        )
                    });
                    (i.position, reason)
                }
            };
            Intervened {
                line,
                reason,
                cause: i.cause,
                code: i.code,
                terminal: i.terminal,
            }
        });
        Ok(RunOutput { data, intervention })
    })
}

/// Runs the chain over `lines` with the GIL released, and raises what the
/// iterable raised.
fn encode_lines(
    py: Python<'_>,
    lines: &Bound<'_, PyAny>,
    options: EncodeOptions,
) -> PyResult<RunOutput> {
    let mut lines = PyLines::new(lines)?;
    let out = py.detach(|| shield(|| run_chain(&mut lines, options)))?;
    if let Some(e) = lines.take_error() {
        return Err(e);
    }
    out.map_err(errors::other)
}

/// The options of `encode` and `encode_run`.
fn run_options(
    to: &str,
    agent_name: Option<String>,
    ephemeral: bool,
    limits: Option<&PyLimits>,
) -> PyResult<EncodeOptions> {
    let mut options = EncodeOptions::new(format(to)?);
    (options.agent_name, options.ephemeral) = (agent_name, ephemeral);
    options.limits = limits::or_default(limits);
    Ok(options)
}

/// A pyfunction with the signature `encode` and `encode_run` share
/// (`lines`, then the keyword-only `to`, `agent_name`, `ephemeral` and
/// `limits`): it encodes the run, then answers `$answer`, made of `$py` and
/// the run's output `$out`.
macro_rules! run_pyfunction {
    (
        $(#[doc = $doc:literal])*
        fn $name:ident<$py_lt:lifetime>(..) -> $ret:ty { |$py:ident, $out:ident| $answer:expr }
    ) => {
        $(#[doc = $doc])*
        #[pyfunction]
        #[pyo3(signature = (lines, *, to, agent_name = None, ephemeral = false, limits = None))]
        pub(crate) fn $name<$py_lt>(
            $py: Python<$py_lt>,
            lines: &Bound<$py_lt, PyAny>,
            to: &str,
            agent_name: Option<String>,
            ephemeral: bool,
            limits: Option<PyRef<'_, PyLimits>>,
        ) -> PyResult<$ret> {
            let options = run_options(to, agent_name, ephemeral, limits.as_deref())?;
            let $out = encode_lines($py, lines, options)?;
            Ok($answer)
        }
    };
}

run_pyfunction! {
    /// A whole run through the coordinator and the encoder: the same bytes as
    /// `lce encode --to TO [--agent-name NAME] [--ephemeral] FILE`.
    ///
    /// `lines` is an iterable of lines (`str`, `bytes` or `dict` items; a file
    /// object works) or one `str`/`bytes` of JSON Lines, read lazily; the GIL
    /// is released while Rust works on each batch. The output is always a
    /// well-formed stream: whatever the input, the coordinator ends the run
    /// with a terminal. `encode_run` also says whether it had to intervene.
    /// `limits=None` is the defaults, not the environment.
    fn encode<'py>(..) -> Bound<'py, PyBytes> { |py, out| PyBytes::new(py, &out.data) }
}

run_pyfunction! {
    /// `encode`, and whether the coordinator intervened: an `EncodeResult`.
    fn encode_run<'py>(..) -> PyEncodeResult { |py, out| encode_result(py, out) }
}

/// The `EncodeResult` of a run's output.
fn encode_result(py: Python<'_>, out: RunOutput) -> PyEncodeResult {
    let data = PyBytes::new(py, &out.data).unbind();
    match out.intervention {
        None => PyEncodeResult {
            data,
            intervened: false,
            reason: None,
            line: None,
            cause: None,
            code: None,
            terminal: None,
        },
        Some(i) => PyEncodeResult {
            data,
            intervened: true,
            reason: Some(format!("{}: {}", i.line, i.reason)),
            line: Some(i.line),
            cause: i.cause.map(Cause::as_str),
            code: i.code,
            terminal: Some(i.terminal.as_str()),
        },
    }
}
