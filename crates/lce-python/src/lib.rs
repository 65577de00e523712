//! `lce-python`: the Python module `lce`, built from the lce crates with
//! PyO3 and maturin (`pip install crates/lce-python`).
//!
//! What it offers Python (the stubs in `python/lce/__init__.pyi` are the
//! reference): `RunValidator` and `check` (the contract's rules, as
//! `lce check`), `sanitize` and `Limits` (bounds and hygiene, loaded as the
//! CLI loads them), `Encoder` (an SSE encoder, event by event) and
//! `encode` / `encode_run` (a whole run through the coordinator, the bytes
//! of `lce encode`), and the exceptions `LceError` (a `ValueError`),
//! `Violation`, `Rejected`, `ParseError` and `LimitsError`.
//!
//! It holds no logic of the contract: every rule, bound, cleaning and byte
//! on the wire comes from the library crates through the facade `lce`; this
//! crate converts Python objects to events and lines ([`input`]; [`dump`]
//! writes a `dict` as `json.dumps` would, without calling it), runs the
//! library's types, and maps their errors to exceptions ([`errors`]). The
//! chain of `encode` is the one `lce encode` builds. Batches of lines run
//! with the GIL released, and an iterable of lines is read lazily. No input
//! reaches a panic (the library crates do not panic); should one happen all
//! the same, [`shield`] turns it into `lce.LceError` rather than letting it
//! unwind into Python.
//!
//! May depend on: the facade `lce` (every layer through it), `pyo3`,
//! `tokio` (a current-thread runtime with timers: the coordinator's commit
//! timeout is a tokio timer), `futures`, `bytes` and `memchr`. Nothing depends on it.
//!
//! Built by maturin as the extension module `lce._lce` (no Cargo feature:
//! maturin >= 1.9.4 tells PyO3 it builds an extension module), so the
//! workspace's `cargo build` and `cargo test` link it against libpython like
//! any other crate; it has no Rust tests of its own: `tests/` is a pytest
//! suite (`ci.sh`).

use pyo3::prelude::*;

mod dump;
mod encode;
mod errors;
mod input;
mod limits;
mod sanitize;
mod validate;

/// Runs `f`, turning a panic into `lce.LceError` instead of letting it reach
/// Python. The library crates do not panic on any input; this is the last
/// line of defence, and says nothing of the input.
pub(crate) fn shield<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|_| errors::other("internal error in lce (please report it): a Rust panic"))
}

/// The native module `lce._lce`; the package `lce` re-exports it.
#[pymodule]
fn _lce(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<limits::PyLimits>()?;
    m.add_class::<validate::PyRunValidator>()?;
    m.add_class::<validate::PyProblem>()?;
    m.add_class::<encode::PyEncoder>()?;
    m.add_class::<encode::PyEncodeResult>()?;
    m.add_function(wrap_pyfunction!(validate::check, m)?)?;
    m.add_function(wrap_pyfunction!(sanitize::sanitize, m)?)?;
    m.add_function(wrap_pyfunction!(encode::encode, m)?)?;
    m.add_function(wrap_pyfunction!(encode::encode_run, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
