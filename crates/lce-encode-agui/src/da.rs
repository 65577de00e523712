//! `agui`: DA's AG-UI dialect, byte for byte (wire-formats §4, §6, §7).

use bytes::BytesMut;
use lce_types::{Event, InterruptRequested, Payload, RunInterrupted};
use lce_wire::hold::{Action, Released, ToolStartHold};
use lce_wire::{
    AgentPlace, DA_RESULT_DISPLAY_CHARS, JsonWriter, Style, WireError, truncate_display,
    write_interrupt_payload,
};

use crate::frame::{da_flat, da_frame, json_text};
use crate::{AguiOptions, EncodeError};

/// The state of one DA `agui` stream.
#[derive(Debug)]
pub(crate) struct DaEncoder {
    options: AguiOptions,
    hold: ToolStartHold,
    /// The namespace last announced with `NAMESPACE_CONTEXT` (root at first).
    announced: Vec<String>,
    /// Open text messages, in opening order.
    texts: Vec<String>,
    /// The `interrupt.requested` held for `RUN_FINISHED`.
    interrupt: Option<InterruptRequested>,
    /// A run terminal went out: nothing more until a new `run.started`.
    closed: bool,
}

impl DaEncoder {
    pub(crate) fn new(options: AguiOptions) -> Self {
        DaEncoder {
            options,
            hold: ToolStartHold::new(),
            announced: Vec::new(),
            texts: Vec::new(),
            interrupt: None,
            closed: false,
        }
    }

    pub(crate) fn has_held(&self) -> bool {
        !self.hold.is_empty()
    }

    pub(crate) fn release_ready(&mut self, dst: &mut BytesMut) -> Result<(), EncodeError> {
        if self.closed {
            return Ok(());
        }
        let released: Vec<Released> = self.hold.release_ready().collect();
        for call in &released {
            self.tool_start(dst, call, 0)?;
        }
        Ok(())
    }

    pub(crate) fn encode(&mut self, ev: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let seq = ev.sequence;
        if matches!(ev.payload, Payload::RunStarted(_)) {
            let options = std::mem::take(&mut self.options);
            *self = DaEncoder::new(options);
        } else if self.closed {
            return Ok(());
        }
        let (action, released) = {
            let step = self.hold.feed(ev);
            (step.action, step.released.collect::<Vec<Released>>())
        };
        for call in &released {
            self.tool_start(dst, call, seq)?;
        }
        if action == Action::Suppress {
            return Ok(());
        }
        self.render(ev, dst).map_err(|source| EncodeError::Wire {
            sequence: seq,
            source,
        })
    }

    /// Announces `ns` with `NAMESPACE_CONTEXT` when it differs from the last
    /// one announced.
    fn namespace(&mut self, dst: &mut BytesMut, ns: &[String], ts: f64) -> Result<(), WireError> {
        if self.announced == ns {
            return Ok(());
        }
        da_frame(dst, k!("CUSTOM"), ts, |w| {
            w.field_str_k(k!("name"), "NAMESPACE_CONTEXT");
            w.key_k(k!("value"));
            w.begin_object();
            string_array(w, "namespace", ns);
            w.end_object();
            Ok(())
        })?;
        self.announced = ns.to_vec();
        Ok(())
    }

    /// `[ns] TOOL_CALL_START` + one `TOOL_CALL_ARGS`, stamped with the
    /// call's own `tool.started` timestamp (D13b).
    fn tool_start(
        &mut self,
        dst: &mut BytesMut,
        call: &Released,
        seq: u64,
    ) -> Result<(), EncodeError> {
        if !call.args.is_complete() {
            return Err(EncodeError::IncompleteArguments { sequence: seq });
        }
        let wire = |source| EncodeError::Wire {
            sequence: seq,
            source,
        };
        // The arguments as DA's `json.dumps(args)` (ensure_ascii=True),
        // carried as a string: non-ASCII arrives double-escaped.
        let args = json_text(call.args.json(), Style::PY_ASCII).map_err(wire)?;
        let ts = call.timestamp.unix_seconds_f64();
        self.namespace(dst, &call.namespace, ts).map_err(wire)?;
        da_flat!(dst, "TOOL_CALL_START", ts, "toolCallId" => &call.tool_call_id, "toolCallName" => &call.tool_name)
        .map_err(wire)?;
        da_flat!(dst, "TOOL_CALL_ARGS", ts, "toolCallId" => &call.tool_call_id, "delta" => &args)
            .map_err(wire)
    }

    /// `[ns] TOOL_CALL_RESULT` (when `content` is not empty) +
    /// `TOOL_CALL_END`.
    fn tool_end(
        &mut self,
        dst: &mut BytesMut,
        ev: &Event,
        tool_call_id: &str,
        message_id: &str,
        content: &str,
    ) -> Result<(), WireError> {
        let ts = ev.timestamp.unix_seconds_f64();
        self.namespace(dst, &ev.namespace, ts)?;
        if !content.is_empty() {
            da_flat!(dst, "TOOL_CALL_RESULT", ts, "message_id" => message_id, "tool_call_id" => tool_call_id, "content" => &truncate_display(content, DA_RESULT_DISPLAY_CHARS), "role" => "tool")?;
        }
        da_flat!(dst, "TOOL_CALL_END", ts, "toolCallId" => tool_call_id)
    }

    /// `TEXT_MESSAGE_END` for every open text, in opening order.
    fn close_texts(&mut self, dst: &mut BytesMut, ts: f64) -> Result<(), WireError> {
        for id in std::mem::take(&mut self.texts) {
            da_flat!(dst, "TEXT_MESSAGE_END", ts, "messageId" => &id)?;
        }
        Ok(())
    }

    /// `run.interrupted`: ends the open texts, then `RUN_FINISHED` with the
    /// held interrupt (DA's `interrupt` object and its payload).
    fn run_interrupted(
        &mut self,
        dst: &mut BytesMut,
        ev: &Event,
        ts: f64,
        p: &RunInterrupted,
    ) -> Result<(), WireError> {
        self.close_texts(dst, ts)?;
        self.closed = true;
        let held = self.interrupt.take();
        let agent_name = self.options.agent_name.as_deref();
        da_frame(dst, k!("RUN_FINISHED"), ts, |w| {
            w.field_str_k(k!("runId"), &ev.run_id);
            w.field_str_k(k!("threadId"), &ev.conversation_id);
            w.field_str_k(k!("outcome"), "interrupt");
            w.key_k(k!("interrupt"));
            w.begin_object();
            match &held {
                Some(ir) => {
                    w.field_str_k(k!("id"), &ir.interrupt_id);
                    w.field_str_k(k!("reason"), ir.interrupt_type.reason().as_str());
                    w.key_k(k!("payload"));
                    w.begin_object();
                    let agent = agent_name.unwrap_or(&ir.agent_id);
                    write_interrupt_payload(w, ir, agent, AgentPlace::AfterRequest)?;
                    w.end_object();
                }
                None => {
                    // No interrupt.requested was seen (a contract
                    // violation): the id and reason are all we know.
                    w.field_str_k(k!("id"), &p.interrupt_id);
                    w.field_str_k(k!("reason"), p.reason.as_str());
                    w.key_k(k!("payload"));
                    w.begin_object();
                    w.end_object();
                }
            }
            w.end_object();
            Ok(())
        })
    }

    fn render(&mut self, ev: &Event, dst: &mut BytesMut) -> Result<(), WireError> {
        let ts = ev.timestamp.unix_seconds_f64();
        match &ev.payload {
            Payload::RunStarted(_) => {
                da_flat!(dst, "RUN_STARTED", ts, "runId" => &ev.run_id, "threadId" => &ev.conversation_id)
            }
            Payload::TextStarted(p) => {
                self.namespace(dst, &ev.namespace, ts)?;
                self.texts.push(p.message_id.to_string());
                da_flat!(dst, "TEXT_MESSAGE_START", ts, "messageId" => &p.message_id, "role" => "assistant")
            }
            Payload::TextDelta(p) => {
                // Never empty: the hold suppresses empty deltas (D7).
                self.namespace(dst, &ev.namespace, ts)?;
                da_flat!(dst, "TEXT_MESSAGE_CONTENT", ts, "messageId" => &p.message_id, "delta" => &p.delta)
            }
            Payload::TextFinished(p) => {
                if let Some(pos) = self.texts.iter().position(|id| **id == *p.message_id) {
                    self.texts.remove(pos);
                }
                da_flat!(dst, "TEXT_MESSAGE_END", ts, "messageId" => &p.message_id)
            }
            Payload::ToolFinished(p) => {
                let message_id = p.result_ref.as_deref().unwrap_or(&p.tool_call_id);
                self.tool_end(dst, ev, &p.tool_call_id, message_id, &p.result)
            }
            Payload::ToolError(p) => {
                let mut content = String::with_capacity(7 + p.message.len());
                content.push_str("ERROR: ");
                content.push_str(&p.message);
                self.tool_end(dst, ev, &p.tool_call_id, &p.tool_call_id, &content)
            }
            Payload::Warning(p) => da_frame(dst, k!("CUSTOM"), ts, |w| {
                w.field_str_k(k!("name"), "WARNING");
                w.key_k(k!("value"));
                w.begin_object();
                w.field_str_k(k!("message"), &p.message);
                string_array(w, "namespace", &[]);
                w.end_object();
                Ok(())
            }),
            Payload::InterruptRequested(p) => {
                self.interrupt = Some(p.clone());
                Ok(())
            }
            Payload::RunFinished(_) => {
                self.close_texts(dst, ts)?;
                self.closed = true;
                da_flat!(dst, "RUN_FINISHED", ts, "runId" => &ev.run_id, "threadId" => &ev.conversation_id, "outcome" => "success")
            }
            Payload::RunInterrupted(p) => self.run_interrupted(dst, ev, ts, p),
            Payload::RunError(p) => {
                self.closed = true;
                da_flat!(dst, "RUN_ERROR", ts, "message" => &p.message)
            }
            Payload::RunCancelled(_) => {
                self.closed = true;
                Ok(())
            }
            // Reasoning, namespaces enter/exit, usage, provider metadata,
            // empty deltas and argument deltas: no frame.
            _ => Ok(()),
        }
    }
}

fn string_array(w: &mut JsonWriter<'_>, key: &str, items: &[String]) {
    w.field_str_array(key, items);
}
