//! [`RunBuilder`]: the events of one run, written as JSON Lines text and
//! parsed back with the real parser.

use std::fmt::Write as _;

use lce_types::{Event, EventParser, ParseError, Payload, Timestamp};

use crate::json::{escape_into, json_string};
use crate::time::{START_MS, write_rfc3339_ms};

/// Builds the events of one run, in order: each event gets the run's ids,
/// the next `sequence` (from 0), the current namespace and the next tick of
/// a deterministic clock, and is parsed from its JSON line by
/// [`lce_types::EventParser`], so every event a test uses went through the
/// same strict parsing (D17) as an adapter's.
///
/// The clock starts at `2026-08-17T09:00:00.000Z`
/// ([`START_MS`](crate::time::START_MS)) and moves 1 ms per event
/// ([`set_time_ms`](Self::set_time_ms), [`set_step_ms`](Self::set_step_ms)
/// change both; [`set_timestamp`](Self::set_timestamp) writes one event's
/// timestamp as given text instead). The namespace is root until
/// [`at`](Self::at) sets another one for the events that follow.
///
/// The shorthands (`run_started`, `text_delta`, `tool_started`, ...) write
/// the payload's required members with fixed, valid values; for anything else
/// [`event`](Self::event) takes the type and the `data` object as JSON text
/// ([`json_string`](crate::json_string) quotes a string for it),
/// [`try_event`](Self::try_event) returns the parser's refusal,
/// [`line`](Self::line) gives the JSON line itself (for JSON Lines input),
/// and [`payload`](Self::payload) wraps a payload built in Rust (values no
/// line can carry, such as NaN).
///
/// ```
/// use lce_testkit::RunBuilder;
/// use lce_types::{EventType, Payload};
///
/// let mut run = RunBuilder::new("run-1", "conv-1");
/// let events = vec![
///     run.run_started(),
///     run.tool_started("call_1", "task", r#"{"subagent_type":"researcher"}"#),
///     run.namespace_entered("researcher", "Research agent", "call_1"),
///     run.at(["call_1"]).text_started("msg-1"),
///     run.text_delta("msg-1", "Hello \"world\""),
///     run.text_finished("msg-1"),
///     run.root().namespace_exited("researcher", "call_1"),
///     run.tool_finished("call_1", "done"),
///     run.event("usage.updated", r#"{"input_tokens":12,"final":true}"#),
///     run.run_finished(),
/// ];
/// assert_eq!(events[4].sequence, 4);
/// assert_eq!(events[4].namespace, ["call_1"]);
/// assert!(matches!(&events[4].payload, Payload::TextDelta(d) if d.delta == "Hello \"world\""));
/// assert_eq!(events[4].timestamp.as_str(), "2026-08-17T09:00:00.004Z");
/// assert_eq!(events[9].event_type(), EventType::RunFinished);
/// ```
#[derive(Clone, Debug)]
pub struct RunBuilder {
    /// `run_id` of every event.
    run_id: String,
    /// `conversation_id` of every event.
    conversation_id: String,
    /// The next event's `sequence`.
    sequence: u64,
    /// The next events' `namespace`.
    namespace: Vec<String>,
    /// The next event's timestamp, milliseconds since the Unix epoch.
    now_ms: i64,
    /// How far the clock moves after each event, in milliseconds.
    step_ms: i64,
    /// The next event's timestamp text when a test set it
    /// ([`set_timestamp`](Self::set_timestamp)), instead of the clock's.
    timestamp_text: Option<String>,
    /// The parser every line goes through; it shares ids between
    /// consecutive events as a stream's decoder does.
    parser: EventParser,
}

impl RunBuilder {
    /// A run with these ids, at sequence 0, in the root namespace, with its
    /// clock at [`START_MS`](crate::time::START_MS) moving 1 ms per event.
    pub fn new(run_id: impl Into<String>, conversation_id: impl Into<String>) -> Self {
        RunBuilder {
            run_id: run_id.into(),
            conversation_id: conversation_id.into(),
            sequence: 0,
            namespace: Vec::new(),
            now_ms: START_MS,
            step_ms: 1,
            timestamp_text: None,
            parser: EventParser::new(),
        }
    }

    /// The run's `run_id`.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The run's `conversation_id`.
    pub fn conversation_id(&self) -> &str {
        &self.conversation_id
    }

    /// Sets the namespace of the events that follow (until the next `at` or
    /// [`root`](Self::root)); returns the builder, so
    /// `run.at(["call_1"]).text_delta(..)` reads as one step.
    pub fn at<I>(&mut self, namespace: I) -> &mut Self
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        self.namespace = namespace
            .into_iter()
            .map(|part| part.as_ref().to_owned())
            .collect();
        self
    }

    /// Back to the root namespace (`[]`) for the events that follow.
    pub fn root(&mut self) -> &mut Self {
        self.namespace.clear();
        self
    }

    /// The namespace the next event gets.
    pub fn namespace(&self) -> &[String] {
        &self.namespace
    }

    /// Sets the next event's `sequence`; the ones after count on from it.
    /// For gaps, repeats and sequences that do not start at 0.
    pub fn set_sequence(&mut self, sequence: u64) -> &mut Self {
        self.sequence = sequence;
        self
    }

    /// The `sequence` the next event gets.
    pub fn next_sequence(&self) -> u64 {
        self.sequence
    }

    /// Sets the next event's timestamp, in milliseconds since the Unix
    /// epoch (UTC); the clock moves on from there.
    pub fn set_time_ms(&mut self, ms: i64) -> &mut Self {
        self.now_ms = ms;
        self
    }

    /// Sets how many milliseconds the clock moves after each event (0 keeps
    /// every following event at one instant).
    pub fn set_step_ms(&mut self, step_ms: i64) -> &mut Self {
        self.step_ms = step_ms;
        self
    }

    /// Writes the next event's timestamp as `text`, exactly as given,
    /// instead of the clock's: for a test whose expected bytes carry an
    /// adapter's own timestamp text (`2026-08-17T00:00:00Z`, without
    /// milliseconds) or a timestamp it writes wrong on purpose (the parser
    /// judges it, as it judges the rest of the line). Only the next event;
    /// the clock is not changed and still moves on after it.
    pub fn set_timestamp(&mut self, text: impl Into<String>) -> &mut Self {
        self.timestamp_text = Some(text.into());
        self
    }

    /// The next event as one canonical JSON line (no newline) with type
    /// `ty` and `data` (a JSON object's text, inserted as is), without
    /// parsing it. Counts as an event: the sequence and the clock move on.
    /// For JSON Lines input and for lines a test then breaks on purpose.
    pub fn line(&mut self, ty: &str, data: &str) -> String {
        let mut line = String::with_capacity(160 + data.len());
        line.push_str("{\"version\":1,\"type\":\"");
        escape_into(&mut line, ty);
        line.push_str("\",\"run_id\":\"");
        escape_into(&mut line, &self.run_id);
        line.push_str("\",\"conversation_id\":\"");
        escape_into(&mut line, &self.conversation_id);
        let _ = write!(line, "\",\"sequence\":{},\"timestamp\":\"", self.sequence);
        match self.timestamp_text.take() {
            Some(text) => escape_into(&mut line, &text),
            None => write_rfc3339_ms(&mut line, self.now_ms),
        }
        line.push_str("\",\"namespace\":[");
        for (i, part) in self.namespace.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push('"');
            escape_into(&mut line, part);
            line.push('"');
        }
        line.push_str("],\"data\":");
        line.push_str(data);
        line.push('}');
        self.sequence = self.sequence.wrapping_add(1);
        self.now_ms = self.now_ms.wrapping_add(self.step_ms);
        line
    }

    /// The next event, [`line`](Self::line) parsed strictly; the parser's
    /// error when the line is not a valid event. The sequence and the clock
    /// move on either way.
    ///
    /// # Errors
    ///
    /// What [`EventParser::parse_json`] refuses: an unknown type, a `data`
    /// that does not match the type's payload, a bad id or namespace, ...
    pub fn try_event(&mut self, ty: &str, data: &str) -> Result<Event, ParseError> {
        let line = self.line(ty, data);
        self.parser.parse_json(&line)
    }

    /// The next event of type `ty` with `data` (a JSON object's text),
    /// parsed strictly.
    ///
    /// # Panics
    ///
    /// When the parser refuses the line, with the line and the error: in a
    /// test that is the failure to report.
    #[allow(clippy::panic)]
    #[track_caller]
    pub fn event(&mut self, ty: &str, data: &str) -> Event {
        let line = self.line(ty, data);
        match self.parser.parse_json(&line) {
            Ok(event) => event,
            Err(e) => panic!("RunBuilder: not a valid event: {e}\n  {line}"),
        }
    }

    /// The next event with a payload built in Rust, not parsed: for values
    /// no JSON line can carry (a NaN cost, an over-long field the sanitizer
    /// must cut). Same envelope as [`event`](Self::event): the run's ids,
    /// the next sequence, the clock's timestamp, the current namespace.
    ///
    /// # Panics
    ///
    /// When the clock is outside the years 0-9999 (see
    /// [`set_time_ms`](Self::set_time_ms)), or the text given to
    /// [`set_timestamp`](Self::set_timestamp) is not an RFC 3339 timestamp.
    #[allow(clippy::panic)]
    #[track_caller]
    pub fn payload(&mut self, payload: Payload) -> Event {
        let text = self
            .timestamp_text
            .take()
            .unwrap_or_else(|| crate::time::rfc3339_ms(self.now_ms));
        let timestamp = match Timestamp::parse(&text) {
            Ok(timestamp) => timestamp,
            Err(e) => panic!("RunBuilder: clock at {text}: {e}"),
        };
        let event = Event {
            run_id: self.run_id.as_str().into(),
            conversation_id: self.conversation_id.as_str().into(),
            sequence: self.sequence,
            timestamp,
            namespace: self.namespace.clone(),
            payload,
        };
        self.sequence = self.sequence.wrapping_add(1);
        self.now_ms = self.now_ms.wrapping_add(self.step_ms);
        event
    }

    /// `run.started` with `harness_id` `h` and `adapter_version` `1`.
    #[track_caller]
    pub fn run_started(&mut self) -> Event {
        self.event("run.started", r#"{"harness_id":"h","adapter_version":"1"}"#)
    }

    /// `text.started` of `message_id`, role `assistant`.
    #[track_caller]
    pub fn text_started(&mut self, message_id: &str) -> Event {
        self.span_started("text.started", message_id)
    }

    /// `text.delta` of `message_id` with `text` (escaped here).
    #[track_caller]
    pub fn text_delta(&mut self, message_id: &str, text: &str) -> Event {
        self.span_delta("text.delta", message_id, text)
    }

    /// `text.finished` of `message_id`.
    #[track_caller]
    pub fn text_finished(&mut self, message_id: &str) -> Event {
        self.span_finished("text.finished", message_id)
    }

    /// `reasoning.started` of `message_id`, role `assistant`.
    #[track_caller]
    pub fn reasoning_started(&mut self, message_id: &str) -> Event {
        self.span_started("reasoning.started", message_id)
    }

    /// `reasoning.delta` of `message_id` with `text` (escaped here).
    #[track_caller]
    pub fn reasoning_delta(&mut self, message_id: &str, text: &str) -> Event {
        self.span_delta("reasoning.delta", message_id, text)
    }

    /// `reasoning.finished` of `message_id`.
    #[track_caller]
    pub fn reasoning_finished(&mut self, message_id: &str) -> Event {
        self.span_finished("reasoning.finished", message_id)
    }

    /// `tool.started` of `tool_call_id` calling `tool_name` with
    /// `arguments_json` (a JSON object's text, as is; `{}` when the
    /// arguments will stream as [`tool_arguments_delta`](Self::tool_arguments_delta)).
    #[track_caller]
    pub fn tool_started(
        &mut self,
        tool_call_id: &str,
        tool_name: &str,
        arguments_json: &str,
    ) -> Event {
        let data = format!(
            "{{\"tool_call_id\":{},\"tool_name\":{},\"arguments\":{arguments_json}}}",
            json_string(tool_call_id),
            json_string(tool_name)
        );
        self.event("tool.started", &data)
    }

    /// `tool.arguments.delta` of `tool_call_id`: `fragment` (raw text of the
    /// arguments' JSON, escaped here as the string it travels in).
    #[track_caller]
    pub fn tool_arguments_delta(&mut self, tool_call_id: &str, fragment: &str) -> Event {
        let data = format!(
            "{{\"tool_call_id\":{},\"delta\":{}}}",
            json_string(tool_call_id),
            json_string(fragment)
        );
        self.event("tool.arguments.delta", &data)
    }

    /// `tool.finished` of `tool_call_id` with `result` (escaped here).
    #[track_caller]
    pub fn tool_finished(&mut self, tool_call_id: &str, result: &str) -> Event {
        let data = format!(
            "{{\"tool_call_id\":{},\"result\":{}}}",
            json_string(tool_call_id),
            json_string(result)
        );
        self.event("tool.finished", &data)
    }

    /// `tool.error` of `tool_call_id` with `code` and `message`, not
    /// retryable.
    #[track_caller]
    pub fn tool_error(&mut self, tool_call_id: &str, code: &str, message: &str) -> Event {
        let data = format!(
            "{{\"tool_call_id\":{},\"code\":{},\"message\":{},\"retryable\":false}}",
            json_string(tool_call_id),
            json_string(code),
            json_string(message)
        );
        self.event("tool.error", &data)
    }

    /// `namespace.entered` of `agent_id` (`agent_name`), under the open
    /// call `parent_tool_call_id`. Written in the current (parent)
    /// namespace; call [`at`](Self::at) for the child's events.
    #[track_caller]
    pub fn namespace_entered(
        &mut self,
        agent_id: &str,
        agent_name: &str,
        parent_tool_call_id: &str,
    ) -> Event {
        let data = format!(
            "{{\"agent_id\":{},\"agent_name\":{},\"parent_tool_call_id\":{}}}",
            json_string(agent_id),
            json_string(agent_name),
            json_string(parent_tool_call_id)
        );
        self.event("namespace.entered", &data)
    }

    /// `namespace.exited` of `agent_id` under `parent_tool_call_id`, outcome
    /// `success`. Written in the current namespace, which should be the
    /// parent's again.
    #[track_caller]
    pub fn namespace_exited(&mut self, agent_id: &str, parent_tool_call_id: &str) -> Event {
        let data = format!(
            "{{\"agent_id\":{},\"parent_tool_call_id\":{},\"outcome\":\"success\"}}",
            json_string(agent_id),
            json_string(parent_tool_call_id)
        );
        self.event("namespace.exited", &data)
    }

    /// `warning` with `code` and `message`, no details.
    #[track_caller]
    pub fn warning(&mut self, code: &str, message: &str) -> Event {
        let data = format!(
            "{{\"code\":{},\"message\":{}}}",
            json_string(code),
            json_string(message)
        );
        self.event("warning", &data)
    }

    /// `usage.updated` with these token totals.
    #[track_caller]
    pub fn usage_updated(&mut self, input_tokens: u64, output_tokens: u64) -> Event {
        let data = format!("{{\"input_tokens\":{input_tokens},\"output_tokens\":{output_tokens}}}");
        self.event("usage.updated", &data)
    }

    /// `run.finished`, outcome `success`, with a committed `thread_state`
    /// (`durable_revision` 1, `head_ref` `h`): the terminal every mode of the
    /// validator accepts. A bare `{"outcome":"success"}` is
    /// `event("run.finished", ..)`.
    #[track_caller]
    pub fn run_finished(&mut self) -> Event {
        self.event(
            "run.finished",
            r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"h"}}"#,
        )
    }

    /// `run.error` with `code` and `message`, not retryable,
    /// `side_effect_status` `none`.
    #[track_caller]
    pub fn run_error(&mut self, code: &str, message: &str) -> Event {
        let data = format!(
            "{{\"code\":{},\"message\":{},\"retryable\":false,\"side_effect_status\":\"none\"}}",
            json_string(code),
            json_string(message)
        );
        self.event("run.error", &data)
    }

    /// `run.cancelled`, reason `client_request`, `side_effect_status` `none`.
    #[track_caller]
    pub fn run_cancelled(&mut self) -> Event {
        self.event(
            "run.cancelled",
            r#"{"reason":"client_request","side_effect_status":"none"}"#,
        )
    }

    /// `text.started` or `reasoning.started`.
    #[track_caller]
    fn span_started(&mut self, ty: &str, message_id: &str) -> Event {
        let data = format!(
            "{{\"message_id\":{},\"role\":\"assistant\"}}",
            json_string(message_id)
        );
        self.event(ty, &data)
    }

    /// `text.delta` or `reasoning.delta`.
    #[track_caller]
    fn span_delta(&mut self, ty: &str, message_id: &str, text: &str) -> Event {
        let data = format!(
            "{{\"message_id\":{},\"delta\":{}}}",
            json_string(message_id),
            json_string(text)
        );
        self.event(ty, &data)
    }

    /// `text.finished` or `reasoning.finished`.
    #[track_caller]
    fn span_finished(&mut self, ty: &str, message_id: &str) -> Event {
        let data = format!("{{\"message_id\":{}}}", json_string(message_id));
        self.event(ty, &data)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;
    use lce_types::{
        CancelReason, Durability, EventType, NamespaceOutcome, Payload, SideEffectStatus,
    };

    /// Every shorthand once, in an order that makes a valid run.
    fn every_shorthand(run: &mut RunBuilder) -> Vec<Event> {
        vec![
            run.run_started(),
            run.reasoning_started("rsn-1"),
            run.reasoning_delta("rsn-1", "thinking"),
            run.reasoning_finished("rsn-1"),
            run.tool_started("call_task", "task", r#"{"subagent_type":"coder"}"#),
            run.namespace_entered("coder", "Coding agent", "call_task"),
            run.at(["call_task"])
                .tool_started("call_2", "read_file", "{}"),
            run.tool_arguments_delta("call_2", "{\"path\":\"/tmp/"),
            run.tool_arguments_delta("call_2", "a\"}"),
            run.tool_finished("call_2", "contents"),
            run.tool_started("call_3", "run_sql", r#"{"q":1}"#),
            run.tool_error("call_3", "tool_error", "timed out"),
            run.root().namespace_exited("coder", "call_task"),
            run.tool_finished("call_task", "done"),
            run.text_started("msg-1"),
            run.text_delta("msg-1", "Hi"),
            run.text_finished("msg-1"),
            run.warning("context_truncated", "Older messages were left out."),
            run.usage_updated(10, 2),
            run.run_finished(),
        ]
    }

    #[test]
    fn shorthands_make_the_types_they_name_in_order() {
        let mut run = RunBuilder::new("run-1", "conv-1");
        let events = every_shorthand(&mut run);
        let types: Vec<&str> = events.iter().map(|e| e.event_type().as_str()).collect();
        assert_eq!(
            types,
            [
                "run.started",
                "reasoning.started",
                "reasoning.delta",
                "reasoning.finished",
                "tool.started",
                "namespace.entered",
                "tool.started",
                "tool.arguments.delta",
                "tool.arguments.delta",
                "tool.finished",
                "tool.started",
                "tool.error",
                "namespace.exited",
                "tool.finished",
                "text.started",
                "text.delta",
                "text.finished",
                "warning",
                "usage.updated",
                "run.finished",
            ]
        );
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.sequence, i as u64);
            assert_eq!(&*e.run_id, "run-1");
            assert_eq!(&*e.conversation_id, "conv-1");
            let in_child = (6..=11).contains(&i);
            assert_eq!(e.namespace.len(), usize::from(in_child), "event {i}");
        }
        assert_eq!(run.next_sequence(), 20);
        let Payload::RunFinished(f) = &events[19].payload else {
            panic!("{:?}", events[19]);
        };
        let state = f.thread_state.as_ref().unwrap();
        assert_eq!(state.durability, Durability::Committed);
        assert_eq!((state.durable_revision, state.head_ref.as_str()), (1, "h"));
        let Payload::NamespaceExited(n) = &events[12].payload else {
            panic!("{:?}", events[12]);
        };
        assert_eq!(n.outcome, NamespaceOutcome::Success);
        let streamed: String = events[7..9]
            .iter()
            .map(|e| match &e.payload {
                Payload::ToolArgumentsDelta(d) => d.delta.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(streamed, r#"{"path":"/tmp/a"}"#);
    }

    #[test]
    fn other_terminals() {
        let mut run = RunBuilder::new("r", "c");
        let e = run.run_error("provider_error", "The provider failed.");
        let Payload::RunError(p) = &e.payload else {
            panic!("{e:?}");
        };
        assert_eq!(
            (p.code.as_str(), p.retryable, p.side_effect_status),
            ("provider_error", false, SideEffectStatus::None)
        );
        let e = run.run_cancelled();
        let Payload::RunCancelled(p) = &e.payload else {
            panic!("{e:?}");
        };
        assert_eq!(p.reason, CancelReason::ClientRequest);
        assert_eq!(e.sequence, 1);
    }

    #[test]
    fn lines_are_what_the_events_are_parsed_from() {
        let mut a = RunBuilder::new("r", "c");
        let mut b = a.clone();
        let line = a.line("text.delta", r#"{"message_id":"m","delta":"x"}"#);
        assert_eq!(
            line,
            r#"{"version":1,"type":"text.delta","run_id":"r","conversation_id":"c","sequence":0,"timestamp":"2026-08-17T09:00:00.000Z","namespace":[],"data":{"message_id":"m","delta":"x"}}"#
        );
        assert_eq!(b.text_delta("m", "x"), Event::from_json(&line).unwrap());
        assert_eq!(a.next_sequence(), b.next_sequence());
    }

    #[test]
    fn text_is_escaped_and_survives_the_round_trip() {
        let nasty = "q\"uote\\ back\nnew\ttab\u{1}ctl é 東京 🚀 \u{2028}";
        let mut run = RunBuilder::new("run \"1\"", "conv\\1");
        run.at(["call \"x\"", "ns\n2"]);
        let e = run.text_delta("msg\t1", nasty);
        assert_eq!(&*e.run_id, "run \"1\"");
        assert_eq!(&*e.conversation_id, "conv\\1");
        assert_eq!(e.namespace, ["call \"x\"", "ns\n2"]);
        assert!(
            matches!(&e.payload, Payload::TextDelta(d) if d.delta == nasty && &*d.message_id == "msg\t1")
        );
        let e = run.tool_finished("c", nasty);
        assert!(matches!(&e.payload, Payload::ToolFinished(f) if f.result == nasty));
        let e = run.tool_arguments_delta("c", nasty);
        assert!(matches!(&e.payload, Payload::ToolArgumentsDelta(d) if d.delta == nasty));
    }

    #[test]
    fn namespaces_stay_until_changed() {
        let mut run = RunBuilder::new("r", "c");
        assert!(run.namespace().is_empty());
        run.at(vec!["a".to_owned(), "b".to_owned()]);
        assert_eq!(run.namespace(), ["a", "b"]);
        assert_eq!(run.text_delta("m", "1").namespace, ["a", "b"]);
        assert_eq!(run.text_delta("m", "2").namespace, ["a", "b"]);
        assert_eq!(run.at(["a"]).text_delta("m", "3").namespace, ["a"]);
        assert!(run.root().text_delta("m", "4").namespace.is_empty());
        assert_eq!(
            run.at::<[&str; 0]>([]).text_delta("m", "5").namespace.len(),
            0
        );
    }

    #[test]
    fn sequences_and_clock_are_deterministic_and_settable() {
        let mut run = RunBuilder::new("r", "c");
        let t = |e: &Event| e.timestamp.as_str().to_owned();
        assert_eq!(t(&run.text_delta("m", "a")), "2026-08-17T09:00:00.000Z");
        assert_eq!(t(&run.text_delta("m", "a")), "2026-08-17T09:00:00.001Z");
        run.set_time_ms(START_MS + 59_999).set_step_ms(1000);
        let e = run.text_delta("m", "a");
        assert_eq!(
            (e.sequence, t(&e)),
            (2, "2026-08-17T09:00:59.999Z".to_owned())
        );
        assert_eq!(t(&run.text_delta("m", "a")), "2026-08-17T09:01:00.999Z");
        run.set_step_ms(0).set_sequence(40);
        let a = run.text_delta("m", "a");
        let b = run.text_delta("m", "a");
        assert_eq!((a.sequence, b.sequence), (40, 41));
        assert_eq!(a.timestamp, b.timestamp);
        // The same calls give the same events.
        let again: Vec<Event> = (0..2)
            .flat_map(|_| every_shorthand(&mut RunBuilder::new("r", "c")))
            .collect();
        assert_eq!(again[..20], again[20..]);
    }

    #[test]
    fn a_set_timestamp_text_is_written_as_given_for_one_event() {
        let mut run = RunBuilder::new("r", "c");
        let t = |e: &Event| e.timestamp.as_str().to_owned();
        let e = run.set_timestamp("2026-08-17T00:00:02.5Z").run_started();
        assert_eq!(t(&e), "2026-08-17T00:00:02.5Z");
        assert_eq!(e.timestamp.unix_millis(), 1_786_924_802_500);
        // The clock was not moved by it: the next event has its second tick.
        assert_eq!(t(&run.text_started("m")), "2026-08-17T09:00:00.001Z");
        let e = run
            .set_timestamp("2026-08-17T00:00:00Z")
            .payload(Payload::TextFinished(lce_types::SpanFinished {
                message_id: "m".into(),
            }));
        assert_eq!((e.sequence, t(&e)), (2, "2026-08-17T00:00:00Z".to_owned()));
        assert_eq!(t(&run.text_delta("m", "x")), "2026-08-17T09:00:00.003Z");
        // A wrong one is the parser's to refuse.
        assert!(
            run.set_timestamp("2026-08-17 00:00:00")
                .try_event("text.delta", r#"{"message_id":"m","delta":"x"}"#)
                .is_err()
        );
    }

    #[test]
    fn parsing_is_the_strict_parser() {
        let mut run = RunBuilder::new("r", "c");
        // An unknown member, an unknown type, a wrong member type: refused,
        // and the sequence moves on regardless.
        assert!(
            run.try_event("text.delta", r#"{"message_id":"m","delta":"x","extra":1}"#)
                .is_err()
        );
        assert!(
            run.try_event("text.shouted", r#"{"message_id":"m"}"#)
                .is_err()
        );
        assert!(
            run.try_event(
                "tool.started",
                r#"{"tool_call_id":"t","tool_name":"n","arguments":[]}"#
            )
            .is_err()
        );
        assert!(
            run.try_event(
                "text.delta",
                r#"{"message_id":"m","delta":"x","delta":"y"}"#
            )
            .is_err()
        );
        assert_eq!(run.next_sequence(), 4);
        let ok = run
            .try_event("text.delta", r#"{"message_id":"m","delta":"x"}"#)
            .unwrap();
        assert_eq!((ok.sequence, ok.event_type()), (4, EventType::TextDelta));
    }

    #[test]
    fn payloads_built_in_rust_get_the_same_envelope() {
        let mut a = RunBuilder::new("r", "c");
        let mut b = a.clone();
        a.at(["ns"]);
        b.at(["ns"]);
        let parsed = a.warning("w", "m");
        let Payload::Warning(w) = parsed.payload.clone() else {
            panic!("{parsed:?}");
        };
        assert_eq!(b.payload(Payload::Warning(w)), parsed);
        assert_eq!(a.next_sequence(), b.next_sequence());
        let nan = lce_types::UsageUpdated {
            cost: Some(f64::NAN),
            ..lce_types::UsageUpdated::default()
        };
        let e = b.payload(Payload::UsageUpdated(nan));
        assert_eq!(
            (e.sequence, e.timestamp.as_str()),
            (1, "2026-08-17T09:00:00.001Z")
        );
    }

    #[test]
    #[should_panic(expected = "RunBuilder: not a valid event")]
    fn event_panics_with_the_line_on_a_refused_one() {
        RunBuilder::new("r", "c").event("text.delta", r#"{"delta":"x"}"#);
    }

    #[test]
    fn consecutive_events_share_their_ids() {
        let mut run = RunBuilder::new("r", "c");
        let a = run.run_started();
        let b = run.text_started("m");
        assert!(std::sync::Arc::ptr_eq(&a.run_id, &b.run_id));
    }
}
