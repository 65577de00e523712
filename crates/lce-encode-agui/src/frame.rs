//! Frame helpers: every byte goes through `lce-wire`.

use bytes::BytesMut;
use lce_wire::{
    JsonWriter, Key, Member, Style, WireError, write_data_json, write_event_json, write_opaque,
};

/// Writes one DA `agui` frame: `event: <name>\ndata: {"type": <name>, ...,
/// "timestamp": <float seconds>}\n\n`, Python `json.dumps` style with
/// `ensure_ascii=False`. `body` writes the members between `type` and
/// `timestamp`.
pub(crate) fn da_frame(
    dst: &mut BytesMut,
    name: &Key,
    unix_seconds: f64,
    body: impl FnOnce(&mut JsonWriter<'_>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    write_event_json(dst, name, Style::PY_UTF8, |w| {
        w.begin_object();
        w.members(&[Member::Const(k!("type"), name)])?;
        body(w)?;
        w.members(&[Member::F64(k!("timestamp"), unix_seconds)])?;
        w.end_object();
        Ok(())
    })
}

/// Writes a DA `agui` frame whose members are `type`, then `members` (all
/// strings), then `timestamp`: the bytes [`da_frame`] would write, the whole
/// object through one [`JsonWriter::object`] call (one stage, one copy).
pub(crate) fn flat_frame(
    dst: &mut BytesMut,
    name: &Key,
    members: &[Member<'_>],
) -> Result<(), WireError> {
    write_event_json(dst, name, Style::PY_UTF8, |w| w.object(members))
}

/// `da_flat!(dst, "NAME", ts, "key" => value, ...)`: [`flat_frame`] with the
/// `type` and `timestamp` members around the given string members.
macro_rules! da_flat {
    ($dst:expr, $name:literal, $ts:expr, $($k:literal => $v:expr),* $(,)?) => {{
        let name = k!($name);
        $crate::frame::flat_frame(
            $dst,
            name,
            &[
                lce_wire::Member::Const(k!("type"), name),
                $(lce_wire::Member::Str(k!($k), $v),)*
                lce_wire::Member::F64(k!("timestamp"), $ts),
            ],
        )
    }};
}
pub(crate) use da_flat;

/// The members an AG-UI 1.0 event carries before its own fields.
pub(crate) struct V1Head<'a> {
    /// The event type.
    pub(crate) ty: &'a Key,
    /// Integer milliseconds since the Unix epoch.
    pub(crate) millis: i64,
    /// `metadata.lce.error.code` (tool errors only).
    pub(crate) error_code: Option<&'a str>,
    /// `subagentRunId` (attributable events in a subagent).
    pub(crate) subagent: Option<&'a str>,
}

/// Writes one standard AG-UI 1.0 frame: `data: <compact json>\n\n`, members
/// in the official order `type, timestamp, metadata, subagentRunId`, then
/// what `body` writes (the event's own members in schema order).
pub(crate) fn v1_frame(
    dst: &mut BytesMut,
    head: &V1Head<'_>,
    body: impl FnOnce(&mut JsonWriter<'_>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    write_data_json(dst, Style::Compact, |w| {
        w.begin_object();
        w.members(&[
            Member::Const(k!("type"), head.ty),
            Member::I64(k!("timestamp"), head.millis),
        ])?;
        if let Some(code) = head.error_code {
            w.key_k(k!("metadata"));
            w.begin_object();
            w.key_k(k!("lce"));
            w.begin_object();
            w.key_k(k!("error"));
            w.begin_object();
            w.field_str_k(k!("code"), code);
            w.end_object();
            w.end_object();
            w.end_object();
        }
        if let Some(sub) = head.subagent {
            w.field_str_k(k!("subagentRunId"), sub);
        }
        body(w)?;
        w.end_object();
        Ok(())
    })
}

/// Writes a standard AG-UI 1.0 frame whose JSON is the flat object of
/// `members`: the bytes [`v1_frame`] would write for the same members,
/// through one [`JsonWriter::object`] call.
pub(crate) fn v1_flat_frame(dst: &mut BytesMut, members: &[Member<'_>]) -> Result<(), WireError> {
    write_data_json(dst, Style::Compact, |w| w.object(members))
}

/// `v1_flat!(dst, "TYPE", millis, subagent, Str "key" => value, OptStr
/// "key" => option, ...)`: [`v1_flat_frame`] with `type`, `timestamp` and
/// (when `subagent` is `Some`) `subagentRunId` before the given members,
/// as [`v1_frame`] with no error code writes them.
macro_rules! v1_flat {
    ($dst:expr, $name:literal, $millis:expr, $sub:expr, $($kind:ident $k:literal => $v:expr),* $(,)?) => {
        $crate::frame::v1_flat_frame(
            $dst,
            &[
                lce_wire::Member::Const(k!("type"), k!($name)),
                lce_wire::Member::I64(k!("timestamp"), $millis),
                lce_wire::Member::OptStr(k!("subagentRunId"), $sub),
                $(lce_wire::Member::$kind(k!($k), $v),)*
            ],
        )
    };
}
pub(crate) use v1_flat;

/// `raw_json` (one valid JSON value) re-laid in `style`, as a `String`.
pub(crate) fn json_text(raw_json: &str, style: Style) -> Result<String, WireError> {
    let mut buf = BytesMut::with_capacity(raw_json.len() + 16);
    write_opaque(&mut buf, raw_json, style)?;
    String::from_utf8(Vec::from(buf)).map_err(|e| WireError::InvalidJson {
        offset: e.utf8_error().valid_up_to(),
    })
}
