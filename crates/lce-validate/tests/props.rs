//! Property tests: a state-machine generator of valid runs (nested and
//! parallel namespaces, parallel tools, streamed arguments, interrupts, every
//! terminal) whose runs are always accepted, and single mutations of them
//! that are rejected with the rule they break, or accepted only where the
//! mutated run is valid by construction.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lce_types::*;
use lce_validate::{Mode, Rule, RunValidator, ValidatorOptions, Violation};
use proptest::prelude::*;

const RUN: &str = "run-p";
const CONV: &str = "conv-p";

fn ts() -> Timestamp {
    Timestamp::parse("2026-08-17T00:00:00.000Z").unwrap()
}

#[derive(Clone, Debug)]
struct Ns {
    id: String,
    agent: String,
    path: Vec<String>,
    parent: usize,
    active: bool,
}

#[derive(Clone, Debug)]
struct Call {
    id: String,
    ns: usize,
    open: bool,
    child: Option<usize>,
}

/// Builds a valid run from a list of (action, argument) bytes.
struct Gen {
    events: Vec<Event>,
    /// ns[0] is root.
    ns: Vec<Ns>,
    texts: Vec<(String, usize)>,
    reasonings: Vec<(String, usize)>,
    calls: Vec<Call>,
    n: u32,
}

impl Gen {
    fn new() -> Self {
        let mut g = Gen {
            events: Vec::new(),
            ns: vec![Ns {
                id: String::new(),
                agent: "root".into(),
                path: vec![],
                parent: 0,
                active: true,
            }],
            texts: vec![],
            reasonings: vec![],
            calls: vec![],
            n: 0,
        };
        g.emit(
            0,
            Payload::RunStarted(RunStarted {
                message_id: None,
                harness_id: "h".into(),
                adapter_version: "1".into(),
                provider_run_id: None,
            }),
        );
        g
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.n += 1;
        format!("{prefix}{}", self.n)
    }

    fn emit(&mut self, ns: usize, payload: Payload) {
        self.events.push(Event {
            run_id: RUN.into(),
            conversation_id: CONV.into(),
            sequence: self.events.len() as u64,
            timestamp: ts(),
            namespace: self.ns[ns].path.clone(),
            payload,
        });
    }

    fn active_ns(&self, pick: u8) -> usize {
        let active: Vec<usize> = (0..self.ns.len()).filter(|&i| self.ns[i].active).collect();
        active[pick as usize % active.len()]
    }

    fn step(&mut self, action: u8, arg: u8) {
        match action % 12 {
            0 => self.start_span(true, arg),
            3 => self.start_span(false, arg),
            1 => self.span_delta(true, arg),
            4 => self.span_delta(false, arg),
            2 => self.finish_span(true, arg),
            5 => self.finish_span(false, arg),
            6 => self.start_tool(arg),
            7 => self.end_ready_call(true, arg),
            8 => self.end_ready_call(false, arg),
            9 => self.enter_namespace(arg),
            10 => self.exit_leaf_namespace(arg),
            _ => self.note(arg),
        }
    }

    /// A text (or reasoning) span starts in an active namespace.
    fn start_span(&mut self, text: bool, arg: u8) {
        let ns = self.active_ns(arg);
        let id = self.fresh(if text { "m" } else { "r" });
        let s = SpanStarted {
            message_id: id.clone().into(),
            role: Role::Assistant,
        };
        if text {
            self.emit(ns, Payload::TextStarted(s));
            self.texts.push((id, ns));
        } else {
            self.emit(ns, Payload::ReasoningStarted(s));
            self.reasonings.push((id, ns));
        }
    }

    /// A delta of an open text (or reasoning) span.
    fn span_delta(&mut self, text: bool, arg: u8) {
        let spans = if text { &self.texts } else { &self.reasonings };
        if spans.is_empty() {
            return;
        }
        let (id, ns) = spans[arg as usize % spans.len()].clone();
        let d = SpanDelta {
            message_id: id.into(),
            // Now and then an empty delta (D7: dropped, not rejected).
            delta: if arg % 7 == 0 {
                String::new()
            } else {
                "tok \"x\"\n".into()
            },
        };
        self.emit(
            ns,
            if text {
                Payload::TextDelta(d)
            } else {
                Payload::ReasoningDelta(d)
            },
        );
    }

    /// An open text (or reasoning) span finishes.
    fn finish_span(&mut self, text: bool, arg: u8) {
        let spans = if text {
            &mut self.texts
        } else {
            &mut self.reasonings
        };
        if spans.is_empty() {
            return;
        }
        let (id, ns) = spans.remove(arg as usize % spans.len());
        let f = SpanFinished {
            message_id: id.into(),
        };
        self.emit(
            ns,
            if text {
                Payload::TextFinished(f)
            } else {
                Payload::ReasoningFinished(f)
            },
        );
    }

    /// A tool call starts, its arguments complete or streamed in pieces.
    fn start_tool(&mut self, arg: u8) {
        let ns = self.active_ns(arg / 2);
        let id = self.fresh("t");
        let streamed = arg % 2 == 0;
        let args = r#"{"q":"x y","n":[1,2.5e3,{"k":null}]}"#;
        self.emit(
            ns,
            Payload::ToolStarted(ToolStarted {
                tool_call_id: id.clone(),
                tool_name: "search".into(),
                arguments: if streamed {
                    JsonObject::empty()
                } else {
                    JsonObject::from_json(args).unwrap()
                },
                parent_message_id: None,
            }),
        );
        if streamed {
            let pieces = 1 + (arg as usize / 2) % 4;
            let cut = args.len() / pieces;
            let mut rest = args;
            for i in 0..pieces {
                let take = if i + 1 == pieces { rest.len() } else { cut };
                let (a, b) = rest.split_at(take);
                rest = b;
                self.emit(
                    ns,
                    Payload::ToolArgumentsDelta(ToolArgumentsDelta {
                        tool_call_id: id.clone(),
                        delta: a.into(),
                    }),
                );
            }
        }
        self.calls.push(Call {
            id,
            ns,
            open: true,
            child: None,
        });
    }

    /// An open call whose namespace (if any) exited ends, `finished` or with
    /// an error.
    fn end_ready_call(&mut self, finished: bool, arg: u8) {
        let ready: Vec<usize> = (0..self.calls.len())
            .filter(|&i| self.calls[i].open && self.child_done(i))
            .collect();
        if ready.is_empty() {
            return;
        }
        let i = ready[arg as usize % ready.len()];
        self.end_call(i, finished);
    }

    /// A namespace is entered for an open call without one.
    fn enter_namespace(&mut self, arg: u8) {
        let free: Vec<usize> = (0..self.calls.len())
            .filter(|&i| {
                let c = &self.calls[i];
                c.open && c.child.is_none() && self.ns[c.ns].active && self.ns[c.ns].path.len() < 7
            })
            .collect();
        if free.is_empty() {
            return;
        }
        let i = free[arg as usize % free.len()];
        let parent = self.calls[i].ns;
        let agent = self.fresh("agent-");
        let id = self.calls[i].id.clone();
        self.emit(
            parent,
            Payload::NamespaceEntered(NamespaceEntered {
                agent_id: agent.clone(),
                agent_name: "Agent".into(),
                parent_tool_call_id: id.clone(),
            }),
        );
        let mut path = self.ns[parent].path.clone();
        path.push(id.clone());
        self.ns.push(Ns {
            id,
            agent,
            path,
            parent,
            active: true,
        });
        self.calls[i].child = Some(self.ns.len() - 1);
    }

    /// A namespace with nothing open inside exits.
    fn exit_leaf_namespace(&mut self, arg: u8) {
        let leaves: Vec<usize> = (1..self.ns.len()).filter(|&k| self.exitable(k)).collect();
        if leaves.is_empty() {
            return;
        }
        let k = leaves[arg as usize % leaves.len()];
        self.exit(k, NamespaceOutcome::Success);
    }

    /// A warning, usage or provider metadata in an active namespace.
    fn note(&mut self, arg: u8) {
        let ns = self.active_ns(arg / 3);
        let p = match arg % 3 {
            0 => Payload::Warning(Warning {
                code: "w".into(),
                message: "careful".into(),
                details: None,
            }),
            1 => Payload::UsageUpdated(UsageUpdated {
                input_tokens: Some(1),
                ..UsageUpdated::default()
            }),
            _ => Payload::ProviderMetadata(ProviderMetadata {
                provider: "p".into(),
                model: None,
                metadata: JsonObject::empty(),
            }),
        };
        self.emit(ns, p);
    }

    /// The call's namespace (if any) has exited.
    fn child_done(&self, i: usize) -> bool {
        self.calls[i].child.is_none_or(|k| !self.ns[k].active)
    }

    /// A namespace with nothing open inside it.
    fn exitable(&self, k: usize) -> bool {
        self.ns[k].active
            && !self
                .ns
                .iter()
                .enumerate()
                .any(|(j, c)| j != 0 && j != k && c.active && c.parent == k)
            && !self.texts.iter().any(|t| t.1 == k)
            && !self.reasonings.iter().any(|t| t.1 == k)
            && !self.calls.iter().any(|c| c.open && c.ns == k)
    }

    fn exit(&mut self, k: usize, outcome: NamespaceOutcome) {
        let parent = self.ns[k].parent;
        let p = Payload::NamespaceExited(NamespaceExited {
            agent_id: self.ns[k].agent.clone(),
            parent_tool_call_id: self.ns[k].id.clone(),
            outcome,
        });
        self.emit(parent, p);
        self.ns[k].active = false;
    }

    fn end_call(&mut self, i: usize, finished: bool) {
        let id = self.calls[i].id.clone();
        let p = if finished {
            Payload::ToolFinished(ToolFinished {
                tool_call_id: id,
                result: "ok".into(),
                result_ref: None,
            })
        } else {
            Payload::ToolError(ToolError {
                tool_call_id: id,
                code: "tool_error".into(),
                message: "failed".into(),
                retryable: false,
            })
        };
        let ns = self.calls[i].ns;
        self.emit(ns, p);
        self.calls[i].open = false;
    }

    fn close_spans(&mut self) {
        while let Some((id, ns)) = self.texts.pop() {
            self.emit(
                ns,
                Payload::TextFinished(SpanFinished {
                    message_id: id.into(),
                }),
            );
        }
        while let Some((id, ns)) = self.reasonings.pop() {
            self.emit(
                ns,
                Payload::ReasoningFinished(SpanFinished {
                    message_id: id.into(),
                }),
            );
        }
    }

    /// Closes every call and namespace inside `k` (depth first), then `k`.
    fn close_ns(&mut self, k: usize) {
        loop {
            let next = (0..self.calls.len()).find(|&i| self.calls[i].open && self.calls[i].ns == k);
            let Some(i) = next else { break };
            if let Some(child) = self.calls[i].child {
                if self.ns[child].active {
                    self.close_ns(child);
                }
            }
            self.end_call(i, true);
        }
        if k != 0 && self.ns[k].active {
            self.exit(k, NamespaceOutcome::Success);
        }
    }

    fn terminal(mut self, kind: u8, arg: u8) -> Vec<Event> {
        match kind % 5 {
            0 => {
                self.close_spans();
                self.close_ns(0);
                self.emit(
                    0,
                    Payload::RunFinished(RunFinished {
                        outcome: Outcome::Success,
                        stop_reason: None,
                        thread_state: Some(ThreadState {
                            durability: Durability::Committed,
                            durable_revision: 1,
                            head_ref: "h".into(),
                        }),
                    }),
                );
            }
            1 => {
                self.close_spans();
                let ns = self.active_ns(arg);
                let open: Vec<usize> = (0..self.calls.len())
                    .filter(|&i| self.calls[i].open)
                    .collect();
                let id = self.fresh("int-");
                let approval = arg % 2 == 0 && !open.is_empty();
                let p = if approval {
                    let c = &self.calls[open[arg as usize % open.len()]];
                    InterruptRequested {
                        interrupt_id: id.clone(),
                        interrupt_type: InterruptType::ToolApproval,
                        agent_id: self.ns[ns].agent.clone(),
                        prompt: None,
                        fields: None,
                        tool_approvals: Some(vec![ToolApproval {
                            tool_call_id: c.id.clone(),
                            tool_name: "search".into(),
                            tool_args: JsonObject::empty(),
                            allowed_decisions: None,
                        }]),
                    }
                } else {
                    InterruptRequested {
                        interrupt_id: id.clone(),
                        interrupt_type: InterruptType::FormInput,
                        agent_id: self.ns[ns].agent.clone(),
                        prompt: Some("?".into()),
                        fields: Some(vec![]),
                        tool_approvals: None,
                    }
                };
                let reason = p.interrupt_type.reason();
                self.emit(ns, Payload::InterruptRequested(p));
                // Some close events: a finished call, an interrupted leaf namespace.
                if arg % 3 == 0 {
                    if let Some(i) =
                        (0..self.calls.len()).find(|&i| self.calls[i].open && self.child_done(i))
                    {
                        self.end_call(i, false);
                    }
                }
                if arg % 5 == 0 {
                    if let Some(k) = (1..self.ns.len()).find(|&k| self.exitable(k)) {
                        self.exit(k, NamespaceOutcome::Interrupted);
                    }
                }
                self.emit(
                    0,
                    Payload::RunInterrupted(RunInterrupted {
                        interrupt_id: id,
                        reason,
                    }),
                );
            }
            2 => self.emit(
                0,
                Payload::RunCancelled(RunCancelled {
                    reason: CancelReason::ClientRequest,
                    side_effect_status: SideEffectStatus::Possible,
                }),
            ),
            k => self.emit(
                0,
                Payload::RunError(RunError {
                    code: if k == 3 {
                        "internal".into()
                    } else {
                        THREAD_DURABILITY_UNCERTAIN.into()
                    },
                    message: "failed".into(),
                    retryable: false,
                    retry_after_seconds: None,
                    side_effect_status: SideEffectStatus::Possible,
                }),
            ),
        }
        self.events
    }
}

fn valid_run() -> impl Strategy<Value = Vec<Event>> {
    (
        proptest::collection::vec((any::<u8>(), any::<u8>()), 0..80),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|(ops, kind, arg)| {
            let mut g = Gen::new();
            for (a, b) in ops {
                g.step(a, b);
            }
            g.terminal(kind, arg)
        })
}

fn validate(events: &[Event], opts: ValidatorOptions) -> Result<(), Violation> {
    let mut v = RunValidator::new(opts);
    for e in events {
        v.push(e)?;
    }
    v.finish()
}

fn check(events: &[Event]) -> Result<(), Violation> {
    validate(events, ValidatorOptions::new())
}

/// The ids an event touches: its own ids and its namespace path.
fn ids(e: &Event) -> Vec<&str> {
    let mut v: Vec<&str> = e.namespace.iter().map(String::as_str).collect();
    match &e.payload {
        Payload::TextStarted(s) | Payload::ReasoningStarted(s) => v.push(&s.message_id),
        Payload::TextDelta(s) | Payload::ReasoningDelta(s) => v.push(&s.message_id),
        Payload::TextFinished(s) | Payload::ReasoningFinished(s) => v.push(&s.message_id),
        Payload::ToolStarted(t) => v.push(&t.tool_call_id),
        Payload::ToolFinished(t) => v.push(&t.tool_call_id),
        Payload::ToolError(t) => v.push(&t.tool_call_id),
        Payload::NamespaceEntered(n) => v.push(&n.parent_tool_call_id),
        Payload::NamespaceExited(n) => v.push(&n.parent_tool_call_id),
        _ => {}
    }
    v
}

/// Events whose position matters beyond their ids.
fn ordered(e: &Event) -> bool {
    let ty = e.event_type();
    ty.is_terminal()
        || matches!(
            &e.payload,
            Payload::RunStarted(_)
                | Payload::InterruptRequested(_)
                | Payload::ToolArgumentsDelta(_)
                | Payload::NamespaceEntered(_)
                | Payload::NamespaceExited(_)
        )
        || matches!(&e.payload, Payload::ToolStarted(t) if t.arguments.is_empty_object())
}

fn independent(a: &Event, b: &Event) -> bool {
    !ordered(a) && !ordered(b) && ids(a).iter().all(|x| !ids(b).contains(x))
}

fn is_empty_delta(e: &Event) -> bool {
    matches!(&e.payload, Payload::TextDelta(d) | Payload::ReasoningDelta(d) if d.delta.is_empty())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn generated_runs_are_accepted(run in valid_run()) {
        for opts in [
            ValidatorOptions::new(),
            ValidatorOptions::new().contiguous(true),
            ValidatorOptions::new().mode(Mode::Adapter),
        ] {
            if let Err(v) = validate(&run, opts) {
                let dump: Vec<String> = run.iter().map(Event::to_json).collect();
                prop_assert!(false, "{v}\n{}", dump.join("\n"));
            }
        }
        let mut v = RunValidator::new(ValidatorOptions::new());
        for e in &run {
            v.push(e).unwrap();
        }
        let bytes: u64 = run.iter().map(|e| e.to_json().len() as u64).sum();
        prop_assert_eq!(v.bytes(), bytes);
        prop_assert_eq!(v.events(), run.len() as u64);
    }

    #[test]
    fn a_duplicated_event_breaks_rule_1(run in valid_run(), at in any::<prop::sample::Index>()) {
        let i = at.index(run.len());
        let mut m = run.clone();
        m.insert(i + 1, run[i].clone());
        let v = check(&m).unwrap_err();
        prop_assert_eq!((v.rule, v.sequence), (Rule::Sequence, run[i].sequence));
    }

    #[test]
    fn a_renumbered_event_breaks_rule_1_or_2(run in valid_run(), at in any::<prop::sample::Index>()) {
        let i = at.index(run.len());
        let mut m = run.clone();
        if i == 0 {
            m[0].sequence = 1;
            let v = check(&m).unwrap_err();
            prop_assert_eq!((v.rule, v.sequence), (Rule::RunStarted, 1));
        } else {
            m[i].sequence = run[i - 1].sequence;
            let v = check(&m).unwrap_err();
            prop_assert_eq!((v.rule, v.sequence), (Rule::Sequence, run[i - 1].sequence));
        }
    }

    #[test]
    fn another_run_or_conversation_breaks_identity(run in valid_run(), at in any::<prop::sample::Index>(), conv in any::<bool>()) {
        let i = 1 + at.index(run.len() - 1);
        let mut m = run.clone();
        if conv { m[i].conversation_id = "other".into() } else { m[i].run_id = "other".into() }
        let v = check(&m).unwrap_err();
        prop_assert_eq!((v.rule, v.sequence), (Rule::RunIdentity, run[i].sequence));
    }

    #[test]
    fn a_dropped_event_is_rejected_where_predictable(run in valid_run(), at in any::<prop::sample::Index>()) {
        let i = at.index(run.len());
        let mut m = run.clone();
        let dropped = m.remove(i);
        let last = run.len() - 1;
        let got = check(&m);
        // The first later event that uses an id the dropped event introduced.
        let first_use = |id: &str, pred: &dyn Fn(&Event) -> bool| {
            run[i + 1..].iter().find(|e| pred(e) && ids(e).contains(&id)).map(|e| e.sequence)
        };
        match &dropped.payload {
            Payload::RunStarted(_) => {
                let v = got.unwrap_err();
                prop_assert_eq!((v.rule, v.sequence), (Rule::RunStarted, run[1].sequence));
            }
            _ if i == last => {
                let v = got.unwrap_err();
                prop_assert_eq!((v.rule, v.sequence), (Rule::MissingTerminal, run[last - 1].sequence));
            }
            Payload::TextStarted(s) | Payload::ReasoningStarted(s) => {
                let kind = dropped.event_type();
                let same = |e: &Event| {
                    let t = e.event_type();
                    (kind == EventType::TextStarted) == matches!(t, EventType::TextDelta | EventType::TextFinished)
                        && matches!(t, EventType::TextDelta | EventType::TextFinished | EventType::ReasoningDelta | EventType::ReasoningFinished)
                        && !is_empty_delta(e)
                };
                match first_use(&s.message_id, &same) {
                    Some(seq) => {
                        let v = got.unwrap_err();
                        prop_assert_eq!((v.rule, v.sequence), (Rule::TextSpan, seq));
                    }
                    None => prop_assert!(got.is_ok(), "{:?}", got),
                }
            }
            Payload::ToolStarted(t) => {
                match run[i + 1..].iter().find(|e| match &e.payload {
                    Payload::ToolArgumentsDelta(d) => d.tool_call_id == t.tool_call_id,
                    Payload::ToolFinished(d) => d.tool_call_id == t.tool_call_id,
                    Payload::ToolError(d) => d.tool_call_id == t.tool_call_id,
                    Payload::NamespaceEntered(n) => n.parent_tool_call_id == t.tool_call_id,
                    _ => false,
                }) {
                    Some(e) => {
                        let rule = if e.event_type() == EventType::NamespaceEntered { Rule::NamespaceActive } else { Rule::ToolCall };
                        let v = got.unwrap_err();
                        prop_assert_eq!((v.rule, v.sequence), (rule, e.sequence));
                    }
                    None => prop_assert!(got.is_ok(), "{:?}", got),
                }
            }
            Payload::TextFinished(_) | Payload::ReasoningFinished(_) => {
                let term = &run[last];
                if matches!(term.event_type(), EventType::RunFinished | EventType::RunInterrupted) {
                    let v = got.unwrap_err();
                    prop_assert_eq!((v.rule, v.sequence), (Rule::D5OpenText, term.sequence));
                    prop_assert_eq!((v.rule.id(), v.rule.decision()), ("5", Some("D5")));
                } else {
                    prop_assert!(got.is_ok(), "{:?}", got);
                }
            }
            Payload::TextDelta(_) | Payload::ReasoningDelta(_) | Payload::Warning(_)
            | Payload::UsageUpdated(_) | Payload::ProviderMetadata(_) => {
                // Neutral events: the run stays valid (gaps are allowed).
                prop_assert!(got.is_ok(), "{:?}", got);
            }
            _ => {
                // Anything else: if rejected, never before the drop.
                if let Err(v) = got {
                    prop_assert!(v.sequence >= dropped.sequence.saturating_sub(1), "{v}");
                }
            }
        }
    }

    #[test]
    fn a_retyped_span_event_breaks_rule_5(run in valid_run(), at in any::<prop::sample::Index>()) {
        let i = at.index(run.len());
        let mut m = run.clone();
        let retyped = match &run[i].payload {
            Payload::TextDelta(d) if !d.delta.is_empty() => Some(Payload::ReasoningDelta(d.clone())),
            Payload::ReasoningDelta(d) if !d.delta.is_empty() => Some(Payload::TextDelta(d.clone())),
            Payload::TextFinished(f) => Some(Payload::ReasoningFinished(f.clone())),
            Payload::ReasoningFinished(f) => Some(Payload::TextFinished(f.clone())),
            Payload::ToolFinished(f) => Some(Payload::ToolError(ToolError {
                tool_call_id: f.tool_call_id.clone(), code: "tool_error".into(), message: "m".into(), retryable: false,
            })),
            Payload::RunFinished(_) | Payload::RunInterrupted(_) => Some(Payload::RunCancelled(RunCancelled {
                reason: CancelReason::Shutdown, side_effect_status: SideEffectStatus::Possible,
            })),
            _ => None,
        };
        let Some(p) = retyped else { return Ok(()) };
        let neutral = matches!(p, Payload::ToolError(_) | Payload::RunCancelled(_));
        m[i].payload = p;
        let got = check(&m);
        if neutral {
            // A call may error instead of finishing; a run may be cancelled
            // whatever is open.
            prop_assert!(got.is_ok(), "{:?}", got);
        } else {
            let v = got.unwrap_err();
            prop_assert_eq!((v.rule, v.sequence), (Rule::TextSpan, run[i].sequence));
        }
    }

    #[test]
    fn swapped_neighbours_fail_late_or_commute(run in valid_run(), at in any::<prop::sample::Index>()) {
        let i = at.index(run.len() - 1);
        let mut m = run.clone();
        // Swap what happened, keep the sequence numbers in place.
        let (a, b) = (m[i].clone(), m[i + 1].clone());
        m[i].payload = b.payload.clone();
        m[i].namespace = b.namespace.clone();
        m[i + 1].payload = a.payload.clone();
        m[i + 1].namespace = a.namespace.clone();
        let got = check(&m);
        if independent(&a, &b) {
            prop_assert!(got.is_ok(), "independent events must commute: {:?}", got);
        }
        if let Err(v) = got {
            prop_assert!(v.sequence >= run[i].sequence, "{v} before the swap");
        }
    }
}

/// The generator reaches what it claims to: nested namespaces, parallel
/// tools, streamed arguments, interrupts inside namespaces, every terminal.
#[test]
fn generator_covers_the_interesting_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = valid_run();
    let (mut nested, mut parallel, mut streamed, mut sub_interrupt, mut empty) = (0, 0, 0, 0, 0);
    let mut terminals = std::collections::BTreeSet::new();
    for _ in 0..256 {
        let run = strategy.new_tree(&mut runner).unwrap().current();
        let mut open = 0usize;
        let mut max_open = 0usize;
        for e in &run {
            match &e.payload {
                Payload::NamespaceEntered(_) if !e.namespace.is_empty() => nested += 1,
                Payload::ToolStarted(_) => {
                    open += 1;
                    max_open = max_open.max(open);
                }
                Payload::ToolFinished(_) | Payload::ToolError(_) => open = open.saturating_sub(1),
                Payload::ToolArgumentsDelta(_) => streamed += 1,
                Payload::InterruptRequested(_) if !e.namespace.is_empty() => sub_interrupt += 1,
                Payload::TextDelta(d) if d.delta.is_empty() => empty += 1,
                _ => {}
            }
        }
        if max_open >= 2 {
            parallel += 1;
        }
        let last = run.last().unwrap();
        terminals.insert(match &last.payload {
            Payload::RunError(r) => r.code.clone(),
            p => p.event_type().as_str().to_owned(),
        });
    }
    assert!(
        nested > 0 && parallel > 0 && streamed > 0 && sub_interrupt > 0 && empty > 0,
        "nested {nested} parallel {parallel} streamed {streamed} sub_interrupt {sub_interrupt} empty {empty}"
    );
    assert_eq!(terminals.len(), 5, "{terminals:?}");
}
