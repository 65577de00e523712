//! `agui-v1`: standard AG-UI 1.0 (wire-formats §5, §7; `docs/wire.md`).

use bytes::BytesMut;
use lce_types::{
    Event, InterruptRequested, InterruptType, NamespaceEntered, NamespaceExited, NamespaceOutcome,
    Payload, ProviderMetadata, RunError, RunInterrupted, SpanDelta, SpanStarted,
    ToolArgumentsDelta, ToolError, ToolFinished, ToolStarted, UsageUpdated, Warning,
};
use lce_wire::{JsonWriter, Key, Member, Style, WireError};

use crate::AguiOptions;
use crate::frame::{V1Head, json_text, v1_flat, v1_flat_frame, v1_frame};

/// The largest integer AG-UI 1.0 accepts for a token count (2^53 - 1).
const MAX_SAFE: u64 = (1 << 53) - 1;

/// A text or reasoning span that is open.
#[derive(Debug)]
struct Span {
    id: String,
    sub: Option<String>,
}

/// A tool call that has a `TOOL_CALL_START` but no `TOOL_CALL_END` yet.
#[derive(Debug)]
struct OpenTool {
    id: String,
    sub: Option<String>,
    namespace: Vec<String>,
    parent_message_id: Option<String>,
}

/// A subagent that has a `SUBAGENT_STARTED` but no finish yet.
#[derive(Debug)]
struct OpenSubagent {
    /// Its full namespace path (the parent's path plus its own element).
    path: Vec<String>,
}

impl OpenSubagent {
    fn id(&self) -> &str {
        self.path.last().map_or("", String::as_str)
    }
}

/// The last known usage counts.
#[derive(Debug, Default)]
struct Usage {
    input: Option<u64>,
    output: Option<u64>,
    cached_input: Option<u64>,
}

/// How open subagents are closed at a run terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closing {
    Success,
    Suspended,
    Cancelled,
}

/// The state of one `agui-v1` stream.
#[derive(Debug, Default)]
pub(crate) struct V1Encoder {
    options: AguiOptions,
    texts: Vec<Span>,
    reasonings: Vec<Span>,
    tools: Vec<OpenTool>,
    subagents: Vec<OpenSubagent>,
    interrupt: Option<(Vec<String>, InterruptRequested)>,
    usage: Option<Usage>,
    provider: Option<(String, Option<String>)>,
    /// A run terminal went out: nothing more until a new `run.started`
    /// (`verifyEvents` rejects anything after `RUN_FINISHED`/`RUN_ERROR`).
    closed: bool,
}

impl V1Encoder {
    pub(crate) fn new(options: AguiOptions) -> Self {
        V1Encoder {
            options,
            ..V1Encoder::default()
        }
    }

    fn reset(&mut self) {
        let options = std::mem::take(&mut self.options);
        *self = V1Encoder::new(options);
    }

    pub(crate) fn encode(&mut self, ev: &Event, dst: &mut BytesMut) -> Result<(), WireError> {
        if self.closed && !matches!(ev.payload, Payload::RunStarted(_)) {
            return Ok(());
        }
        if ev.event_type().is_terminal() {
            self.closed = true;
        }
        let millis = ev.timestamp.unix_millis();
        let sub = ev.namespace.last().map(String::as_str);
        match &ev.payload {
            Payload::RunStarted(_) => self.run_started(dst, ev, millis),
            Payload::TextStarted(p) => {
                open_span(&mut self.texts, &p.message_id, sub);
                v1_flat!(dst, "TEXT_MESSAGE_START", millis, sub,
                    Str "messageId" => &p.message_id,
                    Str "role" => "assistant",
                )
            }
            Payload::TextDelta(p) => {
                let ty = k!("TEXT_MESSAGE_CONTENT");
                span_content(dst, ty, millis, &self.texts, sub, p)
            }
            Payload::TextFinished(p) => match take_span(&mut self.texts, &p.message_id) {
                Some(span) => text_end(dst, millis, &span),
                None => Ok(()), // never opened: nothing to close
            },
            Payload::ReasoningStarted(p) => self.reasoning_started(dst, millis, sub, p),
            Payload::ReasoningDelta(p) => {
                let ty = k!("REASONING_MESSAGE_CONTENT");
                span_content(dst, ty, millis, &self.reasonings, sub, p)
            }
            Payload::ReasoningFinished(p) => match take_span(&mut self.reasonings, &p.message_id) {
                Some(span) => reasoning_end(dst, millis, &span),
                None => Ok(()),
            },
            Payload::ToolStarted(p) => self.tool_started(dst, millis, &ev.namespace, p),
            Payload::ToolArgumentsDelta(p) => self.tool_arguments(dst, millis, sub, p),
            Payload::ToolFinished(p) => self.tool_finished(dst, millis, sub, p),
            Payload::ToolError(p) => self.tool_error(dst, millis, sub, p),
            Payload::InterruptRequested(p) => {
                self.interrupt = Some((ev.namespace.clone(), p.clone()));
                Ok(())
            }
            Payload::NamespaceEntered(p) => self.subagent_started(dst, millis, &ev.namespace, p),
            Payload::NamespaceExited(p) => self.subagent_exited(dst, millis, &ev.namespace, p),
            Payload::Warning(p) => warning(dst, millis, sub, p),
            Payload::UsageUpdated(p) => {
                self.merge_usage(p);
                Ok(())
            }
            Payload::ProviderMetadata(p) => {
                self.merge_provider(p);
                Ok(())
            }
            Payload::RunFinished(_) => self.run_ended(dst, ev, millis, Closing::Success),
            Payload::RunInterrupted(p) => self.run_interrupted(dst, ev, millis, p),
            Payload::RunCancelled(_) => self.run_ended(dst, ev, millis, Closing::Cancelled),
            Payload::RunError(p) => self.run_error(dst, millis, p),
            _ => Ok(()),
        }
    }

    /// `run.started`: a fresh stream state, then `RUN_STARTED`.
    fn run_started(
        &mut self,
        dst: &mut BytesMut,
        ev: &Event,
        millis: i64,
    ) -> Result<(), WireError> {
        self.reset();
        v1_flat!(dst, "RUN_STARTED", millis, None,
            Str "threadId" => &ev.conversation_id,
            Str "runId" => &ev.run_id,
            Str "protocolVersion" => "1.0",
        )
    }

    /// `reasoning.started`: `REASONING_START` then `REASONING_MESSAGE_START`.
    #[inline]
    fn reasoning_started(
        &mut self,
        dst: &mut BytesMut,
        millis: i64,
        sub: Option<&str>,
        p: &SpanStarted,
    ) -> Result<(), WireError> {
        open_span(&mut self.reasonings, &p.message_id, sub);
        v1_flat!(dst, "REASONING_START", millis, sub,
            Str "messageId" => &p.message_id,
        )?;
        v1_flat!(dst, "REASONING_MESSAGE_START", millis, sub,
            Str "messageId" => &p.message_id,
            Str "role" => "reasoning",
        )
    }

    /// `tool.started`: `TOOL_CALL_START`, then the arguments given at start
    /// (not `{}`) as one `TOOL_CALL_ARGS`.
    #[inline]
    fn tool_started(
        &mut self,
        dst: &mut BytesMut,
        millis: i64,
        namespace: &[String],
        p: &ToolStarted,
    ) -> Result<(), WireError> {
        let sub = namespace.last().map(String::as_str);
        self.tools.push(OpenTool {
            id: p.tool_call_id.clone(),
            sub: sub.map(str::to_owned),
            namespace: namespace.to_vec(),
            parent_message_id: p.parent_message_id.clone(),
        });
        v1_flat!(dst, "TOOL_CALL_START", millis, sub,
            Str "toolCallId" => &p.tool_call_id,
            Str "toolCallName" => &p.tool_name,
            OptStr "parentMessageId" => p.parent_message_id.as_deref(),
        )?;
        if p.arguments.is_empty_object() {
            return Ok(());
        }
        let text = json_text(p.arguments.get(), Style::Compact)?;
        v1_flat!(dst, "TOOL_CALL_ARGS", millis, sub,
            Str "toolCallId" => &p.tool_call_id,
            Str "delta" => &text,
        )
    }

    /// `tool.arguments.delta`: `TOOL_CALL_ARGS`, attributed where the call
    /// started.
    #[inline]
    fn tool_arguments(
        &self,
        dst: &mut BytesMut,
        millis: i64,
        sub: Option<&str>,
        p: &ToolArgumentsDelta,
    ) -> Result<(), WireError> {
        if p.delta.is_empty() {
            return Ok(()); // D7
        }
        let sub = self
            .tools
            .iter()
            .find(|t| t.id == p.tool_call_id)
            .map_or(sub, |t| t.sub.as_deref());
        v1_flat!(dst, "TOOL_CALL_ARGS", millis, sub,
            Str "toolCallId" => &p.tool_call_id,
            Str "delta" => &p.delta,
        )
    }

    /// `tool.finished`: `TOOL_CALL_END`, then a `TOOL_CALL_RESULT` of the
    /// result (its message id the result reference, else the call's id).
    #[inline]
    fn tool_finished(
        &mut self,
        dst: &mut BytesMut,
        millis: i64,
        sub: Option<&str>,
        p: &ToolFinished,
    ) -> Result<(), WireError> {
        self.tool_end(dst, millis, &p.tool_call_id)?;
        let message_id = p.result_ref.as_deref().unwrap_or(&p.tool_call_id);
        let head = v1_head(k!("TOOL_CALL_RESULT"), millis, sub);
        tool_result(dst, &head, message_id, &p.tool_call_id, &p.result)
    }

    /// `tool.error`: `TOOL_CALL_END`, then a `TOOL_CALL_RESULT` of
    /// `ERROR: <message>` with the code in `metadata.lce.error.code`.
    fn tool_error(
        &mut self,
        dst: &mut BytesMut,
        millis: i64,
        sub: Option<&str>,
        p: &ToolError,
    ) -> Result<(), WireError> {
        self.tool_end(dst, millis, &p.tool_call_id)?;
        let content = format!("ERROR: {}", p.message);
        let head = V1Head {
            error_code: Some(&p.code),
            ..v1_head(k!("TOOL_CALL_RESULT"), millis, sub)
        };
        tool_result(dst, &head, &p.tool_call_id, &p.tool_call_id, &content)
    }

    /// `namespace.entered`: `SUBAGENT_STARTED`, linked to its parent
    /// subagent, its delegation call and that call's message.
    fn subagent_started(
        &mut self,
        dst: &mut BytesMut,
        millis: i64,
        namespace: &[String],
        p: &NamespaceEntered,
    ) -> Result<(), WireError> {
        let sub = namespace.last().map(String::as_str);
        let mut path = namespace.to_vec();
        path.push(p.parent_tool_call_id.clone());
        let parent_message = self
            .tools
            .iter()
            .find(|t| t.id == p.parent_tool_call_id)
            .and_then(|t| t.parent_message_id.clone());
        self.subagents.push(OpenSubagent { path });
        let head = v1_head(k!("SUBAGENT_STARTED"), millis, Some(&p.parent_tool_call_id));
        v1_frame(dst, &head, |w| {
            w.field_str_k(k!("name"), &p.agent_name);
            if let Some(parent) = sub {
                w.field_str_k(k!("parentSubagentRunId"), parent);
            }
            w.field_str_k(k!("parentToolCallId"), &p.parent_tool_call_id);
            if let Some(m) = &parent_message {
                w.field_str_k(k!("parentMessageId"), m);
            }
            Ok(())
        })
    }

    /// `namespace.exited`: closes the announced subagent by its outcome
    /// (nothing for one never announced).
    fn subagent_exited(
        &mut self,
        dst: &mut BytesMut,
        millis: i64,
        namespace: &[String],
        p: &NamespaceExited,
    ) -> Result<(), WireError> {
        let pos = self.subagents.iter().position(|s| {
            s.path.last() == Some(&p.parent_tool_call_id)
                && s.path.get(..s.path.len().saturating_sub(1)) == Some(namespace)
        });
        let Some(pos) = pos else {
            return Ok(()); // never announced: nothing to finish
        };
        let subagent = self.subagents.remove(pos);
        let closing = match p.outcome {
            NamespaceOutcome::Success => Closing::Success,
            NamespaceOutcome::Interrupted => Closing::Suspended,
            NamespaceOutcome::Cancelled => Closing::Cancelled,
            _ => return subagent_error(dst, millis, subagent.id(), false),
        };
        self.subagent_close(dst, millis, &subagent, closing)
    }

    /// `provider.metadata`: remembered for `usage`. A later event for the
    /// same provider that names no model keeps the model already known.
    fn merge_provider(&mut self, p: &ProviderMetadata) {
        let model = match (&self.provider, &p.model) {
            (_, Some(m)) => Some(m.clone()),
            (Some((provider, known)), None) if *provider == p.provider => known.clone(),
            _ => None,
        };
        self.provider = Some((p.provider.clone(), model));
    }

    /// `run.finished` (`closing` is `Success`) or `run.cancelled`
    /// (`Cancelled`): closes everything, then `RUN_FINISHED` with the
    /// outcome `success` or `cancelled`.
    fn run_ended(
        &mut self,
        dst: &mut BytesMut,
        ev: &Event,
        millis: i64,
        closing: Closing,
    ) -> Result<(), WireError> {
        self.close_all(dst, millis, closing)?;
        let outcome = if closing == Closing::Cancelled {
            "cancelled"
        } else {
            "success"
        };
        self.run_finished(dst, ev, millis, |w| {
            w.field_str_k(k!("type"), outcome);
            Ok(())
        })
    }

    /// `run.error`: `RUN_ERROR` with the message, the code and the usage.
    fn run_error(&self, dst: &mut BytesMut, millis: i64, p: &RunError) -> Result<(), WireError> {
        let head = v1_head(k!("RUN_ERROR"), millis, None);
        v1_frame(dst, &head, |w| {
            w.field_str_k(k!("message"), &p.message);
            w.field_str_k(k!("code"), &p.code);
            self.write_usage(w);
            Ok(())
        })
    }

    /// `run.interrupted`: closes everything (subagents suspended), then
    /// `RUN_FINISHED` with the pending interrupt's items.
    fn run_interrupted(
        &mut self,
        dst: &mut BytesMut,
        ev: &Event,
        millis: i64,
        p: &RunInterrupted,
    ) -> Result<(), WireError> {
        self.close_all(dst, millis, Closing::Suspended)?;
        let held = self.interrupt.take();
        let agent = self.options.agent_name.clone();
        self.run_finished(dst, ev, millis, |w| {
            w.field_str_k(k!("type"), "interrupt");
            w.key_k(k!("interrupts"));
            w.begin_array();
            match &held {
                Some((ns, ir)) => write_interrupts(w, ns, ir, agent.as_deref())?,
                None => {
                    w.begin_object();
                    w.field_str_k(k!("id"), &p.interrupt_id);
                    w.field_str_k(k!("reason"), p.reason.as_str());
                    w.end_object();
                }
            }
            w.end_array();
            Ok(())
        })
    }

    fn merge_usage(&mut self, p: &UsageUpdated) {
        let usage = self.usage.get_or_insert_with(Usage::default);
        if p.input_tokens.is_some() {
            usage.input = p.input_tokens;
        }
        if p.output_tokens.is_some() {
            usage.output = p.output_tokens;
        }
        if p.cached_input_tokens.is_some() {
            usage.cached_input = p.cached_input_tokens;
        }
    }

    /// `usage: [{provider?, model?, inputTokens?, outputTokens?,
    /// cachedInputTokens?}]`, when any `usage.updated` was seen.
    fn write_usage(&self, w: &mut JsonWriter<'_>) {
        let Some(usage) = &self.usage else { return };
        w.key_k(k!("usage"));
        w.begin_array();
        w.begin_object();
        if let Some((provider, model)) = &self.provider {
            w.field_str_k(k!("provider"), provider);
            if let Some(model) = model {
                w.field_str_k(k!("model"), model);
            }
        }
        for (key, value) in [
            ("inputTokens", usage.input),
            ("outputTokens", usage.output),
            ("cachedInputTokens", usage.cached_input),
        ] {
            if let Some(v) = value.filter(|v| *v <= MAX_SAFE) {
                w.field_u64(key, v);
            }
        }
        w.end_object();
        w.end_array();
    }

    fn run_finished(
        &mut self,
        dst: &mut BytesMut,
        ev: &Event,
        millis: i64,
        outcome: impl FnOnce(&mut JsonWriter<'_>) -> Result<(), WireError>,
    ) -> Result<(), WireError> {
        let head = V1Head {
            ty: k!("RUN_FINISHED"),
            millis,
            error_code: None,
            subagent: None,
        };
        v1_frame(dst, &head, |w| {
            w.members(&[
                Member::Str(k!("threadId"), &ev.conversation_id),
                Member::Str(k!("runId"), &ev.run_id),
            ])?;
            w.key_k(k!("outcome"));
            w.begin_object();
            outcome(w)?;
            w.end_object();
            self.write_usage(w);
            Ok(())
        })
    }

    /// `TOOL_CALL_END` for an open call (nothing for a call never started).
    fn tool_end(&mut self, dst: &mut BytesMut, millis: i64, id: &str) -> Result<(), WireError> {
        let Some(pos) = self.tools.iter().position(|t| t.id == id) else {
            return Ok(());
        };
        let tool = self.tools.remove(pos);
        write_tool_end(dst, millis, &tool)
    }

    /// Closes one subagent: its open tool calls, then the subagent itself.
    fn subagent_close(
        &mut self,
        dst: &mut BytesMut,
        millis: i64,
        subagent: &OpenSubagent,
        closing: Closing,
    ) -> Result<(), WireError> {
        if closing == Closing::Cancelled {
            return subagent_error(dst, millis, subagent.id(), true);
        }
        let head = V1Head {
            ty: k!("SUBAGENT_FINISHED"),
            millis,
            error_code: None,
            subagent: Some(subagent.id()),
        };
        let own_interrupts: Vec<String> = match (&self.interrupt, closing) {
            (Some((ns, ir)), Closing::Suspended) if *ns == subagent.path => interrupt_ids(ir),
            _ => Vec::new(),
        };
        v1_frame(dst, &head, |w| {
            w.key_k(k!("outcome"));
            w.begin_object();
            if closing == Closing::Suspended {
                w.field_str_k(k!("type"), "suspended");
                if !own_interrupts.is_empty() {
                    w.key_k(k!("interruptIds"));
                    w.begin_array();
                    for id in &own_interrupts {
                        w.string(id);
                    }
                    w.end_array();
                }
            } else {
                w.field_str_k(k!("type"), "success");
            }
            w.end_object();
            Ok(())
        })
    }

    /// Before `RUN_FINISHED`: ends open text and reasoning (in opening
    /// order), then each open subagent from the last opened (its tool calls
    /// first), then the remaining tool calls, so `verifyEvents` sees nothing
    /// open.
    fn close_all(
        &mut self,
        dst: &mut BytesMut,
        millis: i64,
        closing: Closing,
    ) -> Result<(), WireError> {
        for span in std::mem::take(&mut self.texts) {
            text_end(dst, millis, &span)?;
        }
        for span in std::mem::take(&mut self.reasonings) {
            reasoning_end(dst, millis, &span)?;
        }
        while let Some(subagent) = self.subagents.pop() {
            let (inside, rest): (Vec<OpenTool>, Vec<OpenTool>) = std::mem::take(&mut self.tools)
                .into_iter()
                .partition(|t| t.namespace == subagent.path);
            self.tools = rest;
            for tool in &inside {
                write_tool_end(dst, millis, tool)?;
            }
            self.subagent_close(dst, millis, &subagent, closing)?;
        }
        for tool in std::mem::take(&mut self.tools) {
            write_tool_end(dst, millis, &tool)?;
        }
        Ok(())
    }
}

/// The head of a frame with no error code.
#[inline]
fn v1_head<'a>(ty: &'a Key, millis: i64, subagent: Option<&'a str>) -> V1Head<'a> {
    V1Head {
        ty,
        millis,
        error_code: None,
        subagent,
    }
}

/// `warning`: `CUSTOM` named `WARNING` with `{code, message, details?}`.
fn warning(
    dst: &mut BytesMut,
    millis: i64,
    sub: Option<&str>,
    p: &Warning,
) -> Result<(), WireError> {
    v1_frame(dst, &v1_head(k!("CUSTOM"), millis, sub), |w| {
        w.field_str_k(k!("name"), "WARNING");
        w.key_k(k!("value"));
        w.begin_object();
        w.field_str_k(k!("code"), &p.code);
        w.field_str_k(k!("message"), &p.message);
        if let Some(details) = &p.details {
            w.field_opaque("details", details.get())?;
        }
        w.end_object();
        Ok(())
    })
}

/// `text.delta` or `reasoning.delta`: the `ty` content frame, attributed
/// where the span started (nothing for an empty delta, D7).
#[inline]
fn span_content(
    dst: &mut BytesMut,
    ty: &Key,
    millis: i64,
    spans: &[Span],
    sub: Option<&str>,
    p: &SpanDelta,
) -> Result<(), WireError> {
    if p.delta.is_empty() {
        return Ok(()); // D7
    }
    let sub = opener_sub(spans, &p.message_id, sub);
    v1_flat_frame(
        dst,
        &[
            Member::Const(k!("type"), ty),
            Member::I64(k!("timestamp"), millis),
            Member::OptStr(k!("subagentRunId"), sub),
            Member::Str(k!("messageId"), &p.message_id),
            Member::Str(k!("delta"), &p.delta),
        ],
    )
}

/// Opens a text or reasoning span: remembers its id and where it started.
#[inline]
fn open_span(spans: &mut Vec<Span>, id: &str, sub: Option<&str>) {
    spans.push(Span {
        id: id.to_owned(),
        sub: sub.map(str::to_owned),
    });
}

fn opener_sub<'a>(spans: &'a [Span], id: &str, fallback: Option<&'a str>) -> Option<&'a str> {
    spans
        .iter()
        .find(|s| s.id == id)
        .map_or(fallback, |s| s.sub.as_deref())
}

fn take_span(spans: &mut Vec<Span>, id: &str) -> Option<Span> {
    let pos = spans.iter().position(|s| s.id == id)?;
    Some(spans.remove(pos))
}

fn text_end(dst: &mut BytesMut, millis: i64, span: &Span) -> Result<(), WireError> {
    v1_flat!(dst, "TEXT_MESSAGE_END", millis, span.sub.as_deref(),
        Str "messageId" => &span.id,
    )
}

fn reasoning_end(dst: &mut BytesMut, millis: i64, span: &Span) -> Result<(), WireError> {
    for ty in [k!("REASONING_MESSAGE_END"), k!("REASONING_END")] {
        let head = V1Head {
            ty,
            millis,
            error_code: None,
            subagent: span.sub.as_deref(),
        };
        v1_frame(dst, &head, |w| {
            w.field_str_k(k!("messageId"), &span.id);
            Ok(())
        })?;
    }
    Ok(())
}

fn write_tool_end(dst: &mut BytesMut, millis: i64, tool: &OpenTool) -> Result<(), WireError> {
    let head = V1Head {
        ty: k!("TOOL_CALL_END"),
        millis,
        error_code: None,
        subagent: tool.sub.as_deref(),
    };
    v1_frame(dst, &head, |w| {
        w.field_str_k(k!("toolCallId"), &tool.id);
        Ok(())
    })
}

fn tool_result(
    dst: &mut BytesMut,
    head: &V1Head<'_>,
    message_id: &str,
    tool_call_id: &str,
    content: &str,
) -> Result<(), WireError> {
    v1_frame(dst, head, |w| {
        w.field_str_k(k!("messageId"), message_id);
        w.field_str_k(k!("toolCallId"), tool_call_id);
        w.field_str_k(k!("content"), content);
        w.field_str_k(k!("role"), "tool");
        Ok(())
    })
}

/// `SUBAGENT_ERROR` for a subagent that failed or was cancelled. The
/// canonical exit carries no message, so the message is fixed text.
fn subagent_error(
    dst: &mut BytesMut,
    millis: i64,
    id: &str,
    cancelled: bool,
) -> Result<(), WireError> {
    let head = V1Head {
        ty: k!("SUBAGENT_ERROR"),
        millis,
        error_code: None,
        subagent: Some(id),
    };
    let (message, code) = if cancelled {
        ("The subagent was cancelled.", "subagent_cancelled")
    } else {
        ("The subagent failed.", "subagent_error")
    };
    v1_frame(dst, &head, |w| {
        w.field_str_k(k!("message"), message);
        w.field_str_k(k!("code"), code);
        Ok(())
    })
}

/// The AG-UI interrupt ids of one canonical interrupt: the canonical id for a
/// form or a single approval; `<interrupt_id>:<tool_call_id>` for each of
/// several approvals (ids must be unique: a resume answers each by id).
fn interrupt_ids(ir: &InterruptRequested) -> Vec<String> {
    match ir.interrupt_type {
        InterruptType::ToolApproval => {
            let approvals = ir.tool_approvals.as_deref().unwrap_or_default();
            if approvals.len() <= 1 {
                vec![ir.interrupt_id.clone()]
            } else {
                approvals
                    .iter()
                    .map(|a| format!("{}:{}", ir.interrupt_id, a.tool_call_id))
                    .collect()
            }
        }
        _ => vec![ir.interrupt_id.clone()],
    }
}

/// Writes the `interrupts` items of one canonical interrupt (see
/// `docs/wire.md`, `## agui-v1`).
fn write_interrupts(
    w: &mut JsonWriter<'_>,
    ns: &[String],
    ir: &InterruptRequested,
    agent_name: Option<&str>,
) -> Result<(), WireError> {
    let ids = interrupt_ids(ir);
    let agent = agent_name.unwrap_or(&ir.agent_id);
    let sub = ns.last();
    let lce_head = |w: &mut JsonWriter<'_>| {
        w.key_k(k!("metadata"));
        w.begin_object();
        w.key_k(k!("lce"));
        w.begin_object();
        w.field_str_k(k!("interruptId"), &ir.interrupt_id);
        w.field_str_k(k!("agentId"), &ir.agent_id);
        w.field_str_k(k!("agent"), agent);
    };
    let lce_tail = |w: &mut JsonWriter<'_>| {
        w.end_object();
        w.end_object();
        if let Some(sub) = sub {
            w.field_str_k(k!("subagentRunId"), sub);
        }
    };
    match ir.interrupt_type {
        InterruptType::ToolApproval => {
            let approvals = ir.tool_approvals.as_deref().unwrap_or_default();
            for (approval, id) in approvals.iter().zip(&ids) {
                w.begin_object();
                w.field_str_k(k!("id"), id);
                w.field_str_k(k!("reason"), "tool_approval");
                w.field_str_k(k!("toolCallId"), &approval.tool_call_id);
                lce_head(w);
                w.field_str_k(k!("toolName"), &approval.tool_name);
                w.field_opaque("toolArgs", approval.tool_args.get())?;
                w.key_k(k!("allowedDecisions"));
                w.begin_array();
                for d in approval.decisions() {
                    w.string(d.as_str());
                }
                w.end_array();
                lce_tail(w);
                w.end_object();
            }
            if approvals.is_empty() {
                // Not a valid interrupt (the contract requires at least one
                // approval), but the outcome still needs one item.
                w.begin_object();
                w.field_str_k(k!("id"), &ir.interrupt_id);
                w.field_str_k(k!("reason"), "tool_approval");
                lce_head(w);
                lce_tail(w);
                w.end_object();
            }
        }
        _ => {
            w.begin_object();
            w.field_str_k(k!("id"), &ir.interrupt_id);
            w.field_str_k(k!("reason"), ir.interrupt_type.reason().as_str());
            if let Some(prompt) = &ir.prompt {
                w.field_str_k(k!("message"), prompt);
            }
            lce_head(w);
            w.key_k(k!("fields"));
            w.begin_array();
            for field in ir.fields.as_deref().unwrap_or_default() {
                lce_wire::write_form_field(w, field)?;
            }
            w.end_array();
            lce_tail(w);
            w.end_object();
        }
    }
    Ok(())
}
