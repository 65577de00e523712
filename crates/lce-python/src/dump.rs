//! A `dict` event as the JSON text `json.dumps` writes for it, without
//! calling `json.dumps` (issue 33: the conversion cost more than the rest of
//! `RunValidator.push`).
//!
//! [`write_event`] walks the object and writes the bytes of
//! `json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`, byte for
//! byte, as long as it meets only the builtin types themselves (not
//! subclasses): `dict` with `str` keys, `list`, `tuple`, `str`, `int` that
//! fits in 64 bits, finite `float` (written with `float.__repr__`, as
//! `json.dumps` does), `bool` and `None`, at most [`MAX_DEPTH`] deep. On
//! anything else it answers `false` and the caller hands the whole event to
//! `json.dumps`, so every other case (subclasses, non-`str` keys, `NaN`,
//! big integers, lone surrogates, circular or very deep structures, objects
//! `json.dumps` refuses) behaves exactly as before.

use bytes::{BufMut, BytesMut};
use lce::wire::{Style, write_json_string};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Nesting beyond which the walk gives up (and `json.dumps` decides, with
/// its own recursion checks).
const MAX_DEPTH: usize = 64;

/// Appends `json.dumps(obj, ensure_ascii=False, separators=(",", ":"))` to
/// `out` when `obj` is made of the builtin types only; `Ok(false)` (with
/// `out` in any state) when it is not.
pub(crate) fn write_event(obj: &Bound<'_, PyAny>, out: &mut BytesMut) -> PyResult<bool> {
    value(obj, out, 0)
}

fn value(obj: &Bound<'_, PyAny>, out: &mut BytesMut, depth: usize) -> PyResult<bool> {
    if let Ok(s) = obj.cast_exact::<PyString>() {
        return Ok(string(s, out));
    }
    if let Ok(d) = obj.cast_exact::<PyDict>() {
        if depth >= MAX_DEPTH {
            return Ok(false);
        }
        out.put_u8(b'{');
        let mut first = true;
        for (k, v) in d.iter() {
            if !first {
                out.put_u8(b',');
            }
            first = false;
            let Ok(k) = k.cast_exact::<PyString>() else {
                return Ok(false);
            };
            if !string(k, out) {
                return Ok(false);
            }
            out.put_u8(b':');
            if !value(&v, out, depth + 1)? {
                return Ok(false);
            }
        }
        out.put_u8(b'}');
        return Ok(true);
    }
    if obj.is_none() {
        out.extend_from_slice(b"null");
        return Ok(true);
    }
    if let Ok(b) = obj.cast_exact::<PyBool>() {
        out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
        return Ok(true);
    }
    if let Ok(i) = obj.cast_exact::<PyInt>() {
        return Ok(match i.extract::<i64>() {
            Ok(n) => {
                out.extend_from_slice(n.to_string().as_bytes());
                true
            }
            Err(_) => false,
        });
    }
    if let Ok(l) = obj.cast_exact::<PyList>() {
        return sequence(l.iter(), out, depth);
    }
    if let Ok(t) = obj.cast_exact::<PyTuple>() {
        return sequence(t.iter(), out, depth);
    }
    if let Ok(f) = obj.cast_exact::<PyFloat>() {
        if !f.value().is_finite() {
            return Ok(false);
        }
        let repr = f.repr()?;
        out.extend_from_slice(repr.to_str()?.as_bytes());
        return Ok(true);
    }
    Ok(false)
}

fn sequence<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    out: &mut BytesMut,
    depth: usize,
) -> PyResult<bool> {
    if depth >= MAX_DEPTH {
        return Ok(false);
    }
    out.put_u8(b'[');
    let mut first = true;
    for item in items {
        if !first {
            out.put_u8(b',');
        }
        first = false;
        if !value(&item, out, depth + 1)? {
            return Ok(false);
        }
    }
    out.put_u8(b']');
    Ok(true)
}

/// A `str` as `json.dumps(s, ensure_ascii=False)` writes it (`lce-wire`'s
/// writer in the Python style: `"` and `\` escaped, `\n \r \t \b \f` by
/// name, the other characters below U+0020 as `\u00xx`, everything else as
/// it is). `false` for a `str` that is not UTF-8 (lone surrogates).
fn string(s: &Bound<'_, PyString>, out: &mut BytesMut) -> bool {
    let Ok(text) = s.to_str() else {
        return false;
    };
    if needs_escape(text.as_bytes()) {
        write_json_string(
            out,
            text,
            Style::Python {
                ensure_ascii: false,
            },
        );
    } else {
        out.reserve(text.len() + 2);
        out.put_u8(b'"');
        out.extend_from_slice(text.as_bytes());
        out.put_u8(b'"');
    }
    true
}

/// Whether `bytes` hold a `"`, a backslash or a byte below 0x20 (what
/// `json.dumps(ensure_ascii=False)` escapes); 32 bytes at a time, without
/// branches inside a block, so the compiler can vectorise it.
fn needs_escape(bytes: &[u8]) -> bool {
    bytes.chunks(32).any(|block| {
        block.iter().fold(false, |hit, &b| {
            hit | (b < 0x20) | (b == b'"') | (b == b'\\')
        })
    })
}
