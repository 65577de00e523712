//! The probe's requests, in order: the starts and their resumes, a cancel
//! mid-run, the cancel of an unknown run, a client that goes away.

use std::time::Duration;

use lce_types::{EventType, InterruptRequested, InterruptType};
use tokio::time::Instant;

use crate::body::{Ended, Framing, RunBody};
use crate::check::RunCheck;
use crate::http::{Answer, SendError, Target};
use crate::{DEFAULT_MESSAGE, Finding, ProbeError, ProbeOptions, Report, leak};

/// How much of an error answer's body is read.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// What a start or resume request came to.
enum Opened {
    /// A 2xx with events to read.
    Run(RunBody),
    /// No answer (reported).
    NoAnswer,
    /// Refused, or not a stream of events (reported).
    Refused,
}

/// How a run read to its end came out.
struct Outcome {
    terminal: Option<EventType>,
    error_code: Option<String>,
    interrupt: Option<InterruptRequested>,
}

struct Prober<'a> {
    target: Target,
    options: &'a ProbeOptions,
    report: Report,
    deadline: Instant,
    reached: bool,
    out_of_time: bool,
}

/// Runs every step against `options.url`.
pub(crate) async fn run(options: &ProbeOptions) -> Result<Report, ProbeError> {
    let target = Target::parse(&options.url, options.bearer.as_deref())?;
    let mut p = Prober {
        target,
        options,
        report: Report {
            url: options.url.clone(),
            ..Report::default()
        },
        deadline: Instant::now() + options.overall_timeout,
        reached: false,
        out_of_time: false,
    };
    let messages = if options.messages.is_empty() {
        vec![DEFAULT_MESSAGE.to_owned()]
    } else {
        options.messages.clone()
    };
    for (i, message) in messages.iter().enumerate() {
        p.conversation(i + 1, message).await?;
    }
    p.cancel_mid_run().await?;
    p.cancel_unknown().await?;
    p.disconnect(&messages[0]).await?;
    p.report.passed = p.report.findings.is_empty();
    Ok(p.report)
}

/// 128 random bits as 32 lowercase hex digits, as lce makes run ids.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An id fit for a message: short plain ids as they are, else their size.
fn shown_id(id: &str) -> String {
    if !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic()) {
        format!("`{id}`")
    } else {
        format!("<{} byte id>", id.len())
    }
}

/// The `resume_data` that approves everything `interrupt` asks about (an
/// empty form for a form).
fn resume_data(interrupt: &InterruptRequested) -> String {
    match interrupt.interrupt_type {
        InterruptType::ToolApproval => {
            let n = interrupt.tool_approvals.as_ref().map_or(1, Vec::len);
            if n <= 1 {
                r#"{"type": "tool_approval", "decision": "approve"}"#.to_owned()
            } else {
                let decisions = vec!["approve"; n];
                serde_json::json!({"type": "tool_approval", "decisions": decisions}).to_string()
            }
        }
        _ => "{}".to_owned(),
    }
}

impl Prober<'_> {
    fn request_deadline(&self) -> Instant {
        (Instant::now() + self.options.request_timeout).min(self.deadline)
    }

    /// `true` (and reported once) when the overall timeout has passed.
    fn late(&mut self, step: &str) -> bool {
        if Instant::now() >= self.deadline && !self.out_of_time {
            self.out_of_time = true;
            let message =
                "the probe's overall timeout passed; this step and the later ones were not made";
            self.find("overall_timeout", step, None, message);
        }
        self.out_of_time
    }

    fn find(&mut self, check: &str, step: &str, run_id: Option<&str>, message: impl Into<String>) {
        self.report.findings.push(Finding {
            check: check.to_owned(),
            step: step.to_owned(),
            run_id: run_id.map(str::to_owned),
            sequence: None,
            message: message.into(),
        });
    }

    /// One request; `Ok(None)` when it got no answer (reported), an error
    /// when the harness was never reached.
    async fn send(
        &mut self,
        step: &str,
        path: &str,
        body: String,
        run_id: &str,
    ) -> Result<Option<Answer>, ProbeError> {
        self.report.requests += 1;
        match self.target.post(path, body, self.request_deadline()).await {
            Ok(answer) => {
                self.reached = true;
                Ok(Some(answer))
            }
            Err(SendError::Unreachable) if !self.reached => {
                Err(ProbeError::Unreachable(self.options.url.clone()))
            }
            Err(SendError::Unreachable) => {
                let message = "no connection, or it closed before an answer";
                self.find("unreachable", step, Some(run_id), message);
                Ok(None)
            }
            Err(SendError::TimedOut) => {
                let message = "no answer's head before the request timeout";
                self.find("timeout", step, Some(run_id), message);
                Ok(None)
            }
        }
    }

    /// A start (`message`) or resume (`resume_data`) of `conversation_id`.
    async fn open(
        &mut self,
        step: &str,
        run_id: &str,
        conversation_id: &str,
        input: (&str, &str),
    ) -> Result<Opened, ProbeError> {
        let mut body = serde_json::json!({
            "run_id": run_id,
            "conversation_id": conversation_id,
            "agent_id": self.options.agent_id,
            "client_context": null,
        });
        body[input.0] = serde_json::Value::from(input.1);
        let Some(mut answer) = self.send(step, "/runs", body.to_string(), run_id).await? else {
            return Ok(Opened::NoAnswer);
        };
        if !answer.is_success() {
            let message = format!("answered {}, not 2xx", answer.status);
            self.find("status", step, Some(run_id), message);
            self.error_body(step, &mut answer, &[run_id, conversation_id])
                .await;
            return Ok(Opened::Refused);
        }
        if let Some(encoding) = &answer.encoding {
            let shown: String = encoding
                .chars()
                .filter(char::is_ascii_graphic)
                .take(32)
                .collect();
            let message = format!("a compressed body (Content-Encoding {shown}): lce refuses it");
            self.find("content_encoding", step, Some(run_id), message);
            return Ok(Opened::Refused);
        }
        let Some(framing) = Framing::of(&answer.media_type) else {
            let message = format!(
                "{} is neither application/x-ndjson nor text/event-stream: lce answers 502",
                answer.shown_media_type()
            );
            self.find("content_type", step, Some(run_id), message);
            return Ok(Opened::Refused);
        };
        self.report.runs += 1;
        let gaps = self.options.allow_gaps;
        let check = RunCheck::new(step, run_id, conversation_id, gaps);
        Ok(Opened::Run(RunBody::new(answer, framing, check)))
    }

    /// Takes a run's findings and counts into the report.
    fn close(&mut self, body: RunBody) -> Outcome {
        let check = body.check;
        self.report.events += check.events;
        self.report.findings.extend(check.findings);
        Outcome {
            terminal: check.terminal,
            error_code: check.error_code,
            interrupt: check.interrupt,
        }
    }

    /// A non-2xx answer: a JSON error, without a trace or a secret.
    async fn error_body(&mut self, step: &str, answer: &mut Answer, known: &[&str]) {
        let run_id = known.first().copied();
        let status = answer.status;
        let json_type =
            answer.media_type == "application/json" || answer.media_type.ends_with("+json");
        let Some(bytes) = answer
            .read_small(ERROR_BODY_BYTES, self.request_deadline())
            .await
        else {
            self.find(
                "timeout",
                step,
                run_id,
                format!("the {status} answer's body did not end"),
            );
            return;
        };
        let text = String::from_utf8_lossy(&bytes);
        if !json_type {
            let message = format!(
                "the {status} answer has {}, not a JSON error",
                answer.shown_media_type()
            );
            self.find("error_untyped", step, run_id, message);
        } else if !serde_json::from_slice::<serde_json::Value>(&bytes).is_ok_and(|v| v.is_object())
        {
            let message = format!("the {status} answer's body is not a JSON object");
            self.find("error_untyped", step, run_id, message);
        }
        if let Some(what) = leak::describe(&text, known) {
            let message = format!("the {status} answer's body holds {what} (not shown)");
            self.find("error_leak", step, run_id, message);
        }
    }

    /// A start, then a resume of every interrupt it raises.
    async fn conversation(&mut self, n: usize, message: &str) -> Result<(), ProbeError> {
        let step = format!("start {n}");
        if self.late(&step) {
            return Ok(());
        }
        let conversation_id = format!("lce-probe-{}", new_id());
        let run_id = new_id();
        let Opened::Run(mut body) = self
            .open(&step, &run_id, &conversation_id, ("message", message))
            .await?
        else {
            return Ok(());
        };
        body.read_to_end(self.request_deadline()).await;
        let mut outcome = self.close(body);
        for k in 1..=self.options.max_resumes {
            let (Some(EventType::RunInterrupted), Some(interrupt)) =
                (outcome.terminal, outcome.interrupt.take())
            else {
                break;
            };
            let step = format!("resume {k} of start {n}");
            if self.late(&step) {
                return Ok(());
            }
            let run_id = new_id();
            let data = resume_data(&interrupt);
            let asked = shown_id(&interrupt.interrupt_id);
            let opened = self
                .open(&step, &run_id, &conversation_id, ("resume_data", &data))
                .await?;
            let Opened::Run(mut body) = opened else {
                let message = format!("the resume of interrupt {asked} did not start a run");
                self.find("resume_failed", &step, Some(&run_id), message);
                return Ok(());
            };
            body.read_to_end(self.request_deadline()).await;
            outcome = self.close(body);
            if let (Some(EventType::RunError), Some(code)) = (outcome.terminal, &outcome.error_code)
            {
                let message = format!(
                    "the resume of interrupt {asked} ended with run.error{{{}}}",
                    shown_id(code)
                );
                self.find("resume_failed", &step, Some(&run_id), message);
            }
        }
        Ok(())
    }

    /// A start cancelled after its first events: `run.cancelled` within the bound.
    async fn cancel_mid_run(&mut self) -> Result<(), ProbeError> {
        let step = "cancel";
        if self.late(step) {
            return Ok(());
        }
        let (run_id, conversation_id) = (new_id(), format!("lce-probe-{}", new_id()));
        let message = self.options.cancel_message.clone();
        let Opened::Run(mut body) = self
            .open(step, &run_id, &conversation_id, ("message", &message))
            .await?
        else {
            return Ok(());
        };
        body.read_until(self.request_deadline(), |c| {
            c.events >= 2 || c.terminal.is_some()
        })
        .await;
        if body.check.terminal.is_some() || body.ended != Ended::No {
            let message = "the run ended before the cancel could be sent: give a --cancel-message that makes a long run";
            body.check.find("cancel_untested", None, message);
            body.read_to_end(self.request_deadline()).await;
            self.close(body);
            return Ok(());
        }
        let path = format!("/runs/{run_id}/cancel");
        let answer = self.send(step, &path, "{}".to_owned(), &run_id).await?;
        match answer {
            Some(a) if a.is_success() => {
                drop(a);
                let bound = self.options.cancel_bound;
                let soft = (Instant::now() + bound).min(self.request_deadline());
                body.read_soft(soft, |c| c.terminal.is_some()).await;
                match body.check.terminal {
                    Some(EventType::RunCancelled) => {}
                    Some(other) => {
                        let message = format!(
                            "accepted the cancel, then ended the run with {}",
                            other.as_str()
                        );
                        body.check.find("cancel_ignored", None, message);
                    }
                    None if body.ended == Ended::No => {
                        let message = format!(
                            "accepted the cancel, but no run.cancelled within {}",
                            secs(bound)
                        );
                        body.check.find("cancel_ignored", None, message);
                    }
                    None => {}
                }
            }
            Some(mut a) => {
                let message = format!("the cancel of a running run answered {}", a.status);
                body.check.find("cancel_refused", None, message);
                self.error_body(step, &mut a, &[&run_id, &conversation_id])
                    .await;
            }
            None => {}
        }
        body.read_to_end(self.request_deadline()).await;
        self.close(body);
        Ok(())
    }

    /// The cancel of a run the harness never saw: a typed error.
    async fn cancel_unknown(&mut self) -> Result<(), ProbeError> {
        let step = "cancel unknown run";
        if self.late(step) {
            return Ok(());
        }
        let run_id = new_id();
        let path = format!("/runs/{run_id}/cancel");
        match self.send(step, &path, "{}".to_owned(), &run_id).await? {
            Some(a) if a.is_success() => {
                let message = format!(
                    "answered {} for a run it never saw (expected 404 and a JSON error)",
                    a.status
                );
                self.find("cancel_unknown", step, Some(&run_id), message);
            }
            Some(mut a) => self.error_body(step, &mut a, &[&run_id]).await,
            None => {}
        }
        Ok(())
    }

    /// A client that goes away mid-run; the harness must serve the next one.
    async fn disconnect(&mut self, message: &str) -> Result<(), ProbeError> {
        let step = "disconnect";
        if self.late(step) {
            return Ok(());
        }
        let (run_id, conversation_id) = (new_id(), format!("lce-probe-{}", new_id()));
        let cancel_message = self.options.cancel_message.clone();
        if let Opened::Run(mut body) = self
            .open(
                step,
                &run_id,
                &conversation_id,
                ("message", &cancel_message),
            )
            .await?
        {
            body.read_until(self.request_deadline(), |c| {
                c.events >= 2 || c.terminal.is_some()
            })
            .await;
            // Dropping the body closes the connection mid-run.
            self.close(body);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let step = "after disconnect";
        if self.late(step) {
            return Ok(());
        }
        let (run_id, conversation_id) = (new_id(), format!("lce-probe-{}", new_id()));
        match self
            .open(step, &run_id, &conversation_id, ("message", message))
            .await?
        {
            Opened::Run(mut body) => {
                body.read_to_end(self.request_deadline()).await;
                if body.check.terminal.is_none() {
                    let message = "the run after a client went away did not end with a terminal";
                    body.check.find("abandoned_client", None, message);
                }
                self.close(body);
            }
            Opened::NoAnswer => {
                let message = "the harness stopped answering after a client went away mid-run";
                self.find("abandoned_client", step, Some(&run_id), message);
            }
            Opened::Refused => {}
        }
        Ok(())
    }
}

fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}
