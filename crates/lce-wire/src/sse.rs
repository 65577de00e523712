//! Server-sent-events framing (wire-formats §2).
//!
//! Every function appends one whole frame or nothing: on any error the
//! buffer is truncated back to the length it had before the call.

use bytes::BytesMut;

use crate::escape::Stage;
use crate::writer::put_words;
use crate::{JsonWriter, Key, Style, WireError};

/// Whether `s` holds a CR or LF byte.
#[inline]
fn has_newline(s: &[u8]) -> bool {
    // A vectorised scan: this check runs over every frame's JSON.
    memchr::memchr2(b'\n', b'\r', s).is_some()
}

/// Runs `data` to append the frame's JSON, then checks it holds no raw CR/LF.
fn data_part(
    out: &mut BytesMut,
    data: impl FnOnce(&mut BytesMut) -> Result<(), WireError>,
) -> Result<(), WireError> {
    out.extend_from_slice(b"data: ");
    let start = out.len();
    data(out)?;
    if out.get(start..).is_none_or(has_newline) {
        return Err(WireError::InjectedNewline);
    }
    out.extend_from_slice(b"\n\n");
    Ok(())
}

/// Appends `event: <event>\ndata: <json>\n\n` (DA `custom` and `agui`), the
/// JSON written by `data`.
///
/// An event name holding CR or LF, JSON holding a raw CR or LF, or an error
/// from `data` leaves `out` as it was and returns the error
/// ([`WireError::InjectedNewline`] for the newline cases).
pub fn write_event_frame(
    out: &mut BytesMut,
    event: &str,
    data: impl FnOnce(&mut BytesMut) -> Result<(), WireError>,
) -> Result<(), WireError> {
    if has_newline(event.as_bytes()) {
        return Err(WireError::InjectedNewline);
    }
    let start = out.len();
    out.reserve(event.len() + 64);
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(event.as_bytes());
    out.extend_from_slice(b"\n");
    let r = data_part(out, data);
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// [`write_event_frame`] with the JSON written by `data` through a
/// [`JsonWriter`] in `style`, and an event name fixed at build time: the
/// same bytes, and the same errors.
///
/// The JSON is scanned for a raw CR or LF only when `data` copied text in
/// unescaped ([`JsonWriter::raw`], opaque JSON): everything else the writer
/// writes escapes control chars, and a [`Key`] that needs no escape holds
/// none.
pub fn write_event_json(
    out: &mut BytesMut,
    event: &Key,
    style: Style,
    data: impl FnOnce(&mut JsonWriter<'_>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let Some((words, len)) = event.plain_words() else {
        return write_event_frame(out, event.as_str(), |out| {
            data(&mut JsonWriter::new(out, style))
        });
    };
    let start = out.len();
    out.reserve(len + 128);
    let mut st = Stage::new();
    st.put(out, u64::from_le_bytes(*b"event: \0"), 7);
    put_words(&mut st, out, words, len);
    st.put(out, u64::from_le_bytes(*b"\ndata: \0"), 7);
    st.flush(out);
    json_and_blank_line(out, start, style, data)
}

/// Appends `data: <json>\n\n` (standard AG-UI 1.0), the JSON written by
/// `data`.
///
/// JSON holding a raw CR or LF, or an error from `data`, leaves `out` as it
/// was and returns the error.
pub fn write_data_frame(
    out: &mut BytesMut,
    data: impl FnOnce(&mut BytesMut) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let start = out.len();
    let r = data_part(out, data);
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// [`write_data_frame`] with the JSON written by `data` through a
/// [`JsonWriter`] in `style`: the same bytes, and the same errors.
///
/// The JSON is scanned for a raw CR or LF only when `data` copied text in
/// unescaped ([`JsonWriter::raw`], opaque JSON), as in [`write_event_json`].
pub fn write_data_json(
    out: &mut BytesMut,
    style: Style,
    data: impl FnOnce(&mut JsonWriter<'_>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let start = out.len();
    out.reserve(128);
    out.extend_from_slice(b"data: ");
    json_and_blank_line(out, start, style, data)
}

/// The end of [`write_event_json`] and [`write_data_json`]: the JSON of
/// `data` and the blank line closing the frame. On an error, or a raw CR or
/// LF in text `data` copied in unescaped, `out` is cut back to `start` (the
/// frame's first byte) and the error returned.
#[inline(always)]
fn json_and_blank_line(
    out: &mut BytesMut,
    start: usize,
    style: Style,
    data: impl FnOnce(&mut JsonWriter<'_>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let json_start = out.len();
    let mut w = JsonWriter::new(out, style);
    let mut r = data(&mut w);
    if r.is_ok() && w.copied() && out.get(json_start..).is_none_or(has_newline) {
        r = Err(WireError::InjectedNewline);
    }
    match r {
        Ok(()) => out.extend_from_slice(b"\n\n"),
        Err(_) => out.truncate(start),
    }
    r
}

/// Appends the comment frame `: <text>\n\n` (e.g. a keep-alive).
///
/// Text holding CR or LF gives [`WireError::InjectedNewline`] and writes
/// nothing.
pub fn write_comment(out: &mut BytesMut, text: &str) -> Result<(), WireError> {
    if has_newline(text.as_bytes()) {
        return Err(WireError::InjectedNewline);
    }
    out.reserve(text.len() + 4);
    out.extend_from_slice(b": ");
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\n\n");
    Ok(())
}
