//! The checks on one run's events: the validator in adapter mode, the
//! sanitizer's bounds, error texts free of traces and secrets.

use lce_sanitize::Sanitizer;
use lce_types::{Event, EventType, InterruptRequested, Limits, Payload};
use lce_validate::{Mode, RunValidator, ValidatorOptions};

use crate::Finding;
use crate::leak;

/// One run as the probe read it.
pub(crate) struct RunCheck {
    step: String,
    run_id: String,
    conversation_id: String,
    validator: RunValidator,
    sanitizer: Sanitizer,
    /// What was found in this run.
    pub(crate) findings: Vec<Finding>,
    /// Events read (parsed).
    pub(crate) events: u64,
    /// The first terminal read.
    pub(crate) terminal: Option<EventType>,
    /// The `code` of that terminal when it is `run.error`.
    pub(crate) error_code: Option<String>,
    /// The last interrupt asked for.
    pub(crate) interrupt: Option<InterruptRequested>,
}

impl RunCheck {
    /// A run `run_id` of `conversation_id`, read in `step`.
    pub(crate) fn new(step: &str, run_id: &str, conversation_id: &str, gaps: bool) -> RunCheck {
        let options = ValidatorOptions::new()
            .mode(Mode::Adapter)
            .contiguous(!gaps)
            .identity(run_id, conversation_id);
        RunCheck {
            step: step.to_owned(),
            run_id: run_id.to_owned(),
            conversation_id: conversation_id.to_owned(),
            validator: RunValidator::new(options),
            sanitizer: Sanitizer::new(Limits::default()),
            findings: Vec::new(),
            events: 0,
            terminal: None,
            error_code: None,
            interrupt: None,
        }
    }

    /// Records a finding about this run.
    pub(crate) fn find(&mut self, check: &str, sequence: Option<u64>, message: impl Into<String>) {
        self.findings.push(Finding {
            check: check.to_owned(),
            step: self.step.clone(),
            run_id: Some(self.run_id.clone()),
            sequence,
            message: message.into(),
        });
    }

    /// Checks one event.
    pub(crate) fn event(&mut self, event: Event) {
        self.events += 1;
        let seq = Some(event.sequence);
        if let Err(v) = self.validator.push(&event) {
            self.find(&v.rule.to_string(), Some(v.sequence), v.message.clone());
            self.validator.clear_failure();
        }
        if let Err(r) = self.sanitizer.sanitize(event.clone()) {
            self.find("sanitize", seq, format!("the sanitizer refuses it: {r}"));
        }
        let ty = event.event_type();
        let text = match &event.payload {
            Payload::RunError(e) => Some(&e.message),
            Payload::ToolError(e) => Some(&e.message),
            Payload::Warning(w) => Some(&w.message),
            _ => None,
        };
        if let Some(text) = text {
            let known = [self.run_id.as_str(), self.conversation_id.as_str()];
            if let Some(what) = leak::describe(text, &known) {
                let message = format!("its message holds {what} (not shown)");
                self.find("error_leak", seq, format!("{}: {message}", ty.as_str()));
            }
        }
        if let Payload::InterruptRequested(i) = &event.payload {
            self.interrupt = Some(i.clone());
        }
        if ty.is_terminal() && self.terminal.is_none() {
            self.terminal = Some(ty);
            if let Payload::RunError(e) = &event.payload {
                self.error_code = Some(e.code.clone());
            }
        }
    }

    /// A line or frame that is not a canonical event.
    pub(crate) fn malformed(&mut self, check: &str, message: impl Into<String>) {
        self.find(check, None, message);
    }

    /// The body ended (or broke, or timed out: `how`); rule 12 when no
    /// terminal came.
    pub(crate) fn finish(&mut self, how: Option<&str>) {
        if let Some(how) = how {
            self.find("body", None, how.to_owned());
        }
        if let Err(v) = self.validator.finish() {
            if v.rule == lce_validate::Rule::MissingTerminal {
                self.find(&v.rule.to_string(), Some(v.sequence), v.message.clone());
            }
        }
    }
}
