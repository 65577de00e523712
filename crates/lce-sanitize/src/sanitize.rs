//! The sanitizer: checks and cleans one event against the limits.

use std::fmt;

use lce_types::{Event, InterruptRequested, JsonObject, Limits, Payload};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::limits::{LimitsError, validate_limits};
use crate::redact::{REDACTED, redact, redact_counted};
use crate::text::{
    contains_forbidden_in_name, find_replaced_in_display, replace_display_controls_from,
    truncate_to_bytes,
};

/// Why an event was rejected. The snake_case name ([`RejectKind::as_str`]) is
/// stable: the hostile fixtures and the logs use it.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectKind {
    /// An empty identifier (ids correlate; an empty one cannot).
    EmptyIdentifier,
    /// An identifier longer than `identifier_bytes` (D19).
    IdentifierTooLong,
    /// A code or name longer than `name_bytes` (D19).
    NameTooLong,
    /// A control, bidi or separator character in an identifier, code or
    /// name (D18).
    ControlCharacter,
    /// A delta longer than `display_bytes` (D19); deltas are never cut.
    TextTooLong,
    /// A namespace deeper than `namespace_depth` (D19).
    NamespaceTooDeep,
    /// Tool arguments (or one arguments delta) over `tool_arguments_bytes`.
    ArgumentsTooLarge,
    /// A float that is NaN or infinite (D17).
    NonFiniteNumber,
}

impl RejectKind {
    /// Every kind.
    pub const ALL: &'static [RejectKind] = &[
        RejectKind::EmptyIdentifier,
        RejectKind::IdentifierTooLong,
        RejectKind::NameTooLong,
        RejectKind::ControlCharacter,
        RejectKind::TextTooLong,
        RejectKind::NamespaceTooDeep,
        RejectKind::ArgumentsTooLarge,
        RejectKind::NonFiniteNumber,
    ];

    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectKind::EmptyIdentifier => "empty_identifier",
            RejectKind::IdentifierTooLong => "identifier_too_long",
            RejectKind::NameTooLong => "name_too_long",
            RejectKind::ControlCharacter => "control_character",
            RejectKind::TextTooLong => "text_too_long",
            RejectKind::NamespaceTooDeep => "namespace_too_deep",
            RejectKind::ArgumentsTooLarge => "arguments_too_large",
            RejectKind::NonFiniteNumber => "non_finite_number",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<RejectKind> {
        Self::ALL.iter().copied().find(|k| k.as_str() == name)
    }

    /// The decision the rule comes from (`D17`, `D18` or `D19`).
    pub fn rule(self) -> &'static str {
        match self {
            RejectKind::ControlCharacter => "D18",
            RejectKind::NonFiniteNumber | RejectKind::EmptyIdentifier => "D17",
            _ => "D19",
        }
    }
}

impl fmt::Display for RejectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rejected event: which rule, which field, sizes. Never payload text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
pub struct Rejection {
    /// The rule broken.
    pub kind: RejectKind,
    /// The field's JSON path (`run_id`, `namespace`, `data.delta`,
    /// `data.fields.field_name`, ...).
    pub field: &'static str,
    /// The element index when the field is inside an array.
    pub index: Option<usize>,
    /// The offending size (bytes or depth), when the rule is a bound.
    pub size: Option<u64>,
    /// The bound, when the rule is a bound.
    pub limit: Option<u64>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}) at {}", self.kind, self.kind.rule(), self.field)?;
        if let Some(i) = self.index {
            write!(f, "[{i}]")?;
        }
        if let (Some(s), Some(l)) = (self.size, self.limit) {
            write!(f, ": {s} > {l}")?;
        }
        Ok(())
    }
}

pub(crate) fn as_u64(v: usize) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

impl Rejection {
    fn bound(
        kind: RejectKind,
        field: &'static str,
        index: Option<usize>,
        size: usize,
        limit: usize,
    ) -> Self {
        Rejection {
            kind,
            field,
            index,
            size: Some(as_u64(size)),
            limit: Some(as_u64(limit)),
        }
    }
}

/// Checks that a float built in Rust is finite (D17); `name` is the field
/// it is meant for.
///
/// ```
/// assert_eq!(lce_sanitize::check_f64("data.cost", 0.25), Ok(0.25));
/// assert!(lce_sanitize::check_f64("data.cost", f64::NAN).is_err());
/// ```
pub fn check_f64(name: &'static str, v: f64) -> Result<f64, Rejection> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(Rejection {
            kind: RejectKind::NonFiniteNumber,
            field: name,
            index: None,
            size: None,
            limit: None,
        })
    }
}

/// What cleaning changed in one event. Empty (see [`CleanReport::is_clean`])
/// when the event went through untouched.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CleanReport {
    /// Characters replaced with U+FFFD in display text (D18).
    pub replaced_chars: u32,
    /// Display fields cut to their bound (tool result, messages, prompt,
    /// form texts).
    pub truncated_fields: u32,
    /// Bytes removed by those cuts.
    pub truncated_bytes: u64,
    /// Secrets replaced and stack traces removed in messages (D20): one
    /// per secret, one per trace (a chained trace counts once).
    pub redactions: u32,
    /// `provider.metadata` keys dropped (not allowlisted, not scalar, value
    /// too large, or beyond `metadata_keys`).
    pub dropped_metadata_keys: u32,
    /// Warning `details` dropped for breaking a bound (0 or 1).
    pub dropped_details: u32,
    /// The fields that changed, in order, each once.
    pub fields: Vec<&'static str>,
}

impl CleanReport {
    /// `true` when nothing was changed.
    #[inline]
    pub fn is_clean(&self) -> bool {
        // Field by field (the same as `== CleanReport::default()`, without
        // building one): every field, so a new one must be added here.
        let CleanReport {
            replaced_chars,
            truncated_fields,
            truncated_bytes,
            redactions,
            dropped_metadata_keys,
            dropped_details,
            fields,
        } = self;
        *replaced_chars == 0
            && *truncated_fields == 0
            && *truncated_bytes == 0
            && *redactions == 0
            && *dropped_metadata_keys == 0
            && *dropped_details == 0
            && fields.is_empty()
    }

    fn touch(&mut self, field: &'static str) {
        if !self.fields.contains(&field) {
            self.fields.push(field);
        }
    }
}

/// A sanitized event and what was changed to get it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sanitized {
    /// The event, within every bound.
    pub event: Event,
    /// What changed.
    pub report: CleanReport,
}

/// Checks and cleans events against [`Limits`]. Field policies are in
/// `docs/sanitation.md`. Idempotent: sanitizing a sanitized event changes
/// nothing and reports nothing.
#[derive(Clone, Debug)]
pub struct Sanitizer {
    limits: Limits,
}

struct Cx<'a> {
    limits: &'a Limits,
    report: CleanReport,
    /// Display bytes left in this event (D19: display strings per event).
    budget: usize,
}

impl Sanitizer {
    /// A sanitizer with `limits` as given (see [`Sanitizer::try_new`]).
    pub fn new(limits: Limits) -> Self {
        Sanitizer { limits }
    }

    /// A sanitizer with `limits`, checked by [`validate_limits`] first.
    pub fn try_new(limits: Limits) -> Result<Self, LimitsError> {
        validate_limits(&limits)?;
        Ok(Sanitizer { limits })
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Checks and cleans `event`. Rejections and cleanings are logged
    /// (target `lce::sanitize`) with correlation ids, rule, field and sizes
    /// only.
    pub fn sanitize(&self, mut event: Event) -> Result<Sanitized, Rejection> {
        let report = self.sanitize_in_place(&mut event)?;
        Ok(Sanitized { event, report })
    }

    /// [`Sanitizer::sanitize`] in place. On `Err` the event may be partly
    /// cleaned and must be discarded.
    pub fn sanitize_in_place(&self, event: &mut Event) -> Result<CleanReport, Rejection> {
        let mut cx = Cx {
            limits: &self.limits,
            report: CleanReport::default(),
            budget: self.limits.display_bytes,
        };
        match cx.event(event) {
            Ok(()) => {
                if !cx.report.is_clean() {
                    crate::log::cleaned(event, &cx.report, &self.limits);
                }
                Ok(cx.report)
            }
            Err(r) => {
                crate::log::rejected(event, &r, &self.limits);
                Err(r)
            }
        }
    }
}

impl Cx<'_> {
    fn bounded(
        &self,
        field: &'static str,
        index: Option<usize>,
        s: &str,
        max: usize,
        kind: RejectKind,
    ) -> Result<(), Rejection> {
        if s.is_empty() && kind == RejectKind::IdentifierTooLong {
            return Err(Rejection {
                kind: RejectKind::EmptyIdentifier,
                field,
                index,
                size: None,
                limit: None,
            });
        }
        if s.len() > max {
            return Err(Rejection::bound(kind, field, index, s.len(), max));
        }
        if contains_forbidden_in_name(s) {
            return Err(Rejection {
                kind: RejectKind::ControlCharacter,
                field,
                index,
                size: None,
                limit: None,
            });
        }
        Ok(())
    }

    fn id(&self, field: &'static str, s: &str) -> Result<(), Rejection> {
        self.bounded(
            field,
            None,
            s,
            self.limits.identifier_bytes,
            RejectKind::IdentifierTooLong,
        )
    }

    fn id_at(&self, field: &'static str, i: usize, s: &str) -> Result<(), Rejection> {
        self.bounded(
            field,
            Some(i),
            s,
            self.limits.identifier_bytes,
            RejectKind::IdentifierTooLong,
        )
    }

    fn opt_id(&self, field: &'static str, s: Option<&String>) -> Result<(), Rejection> {
        s.map_or(Ok(()), |s| self.id(field, s))
    }

    fn name(&self, field: &'static str, s: &str) -> Result<(), Rejection> {
        self.bounded(
            field,
            None,
            s,
            self.limits.name_bytes,
            RejectKind::NameTooLong,
        )
    }

    fn name_at(&self, field: &'static str, i: usize, s: &str) -> Result<(), Rejection> {
        self.bounded(
            field,
            Some(i),
            s,
            self.limits.name_bytes,
            RejectKind::NameTooLong,
        )
    }

    #[inline]
    fn replace(&mut self, field: &'static str, s: &mut String) {
        // The common case, nothing to replace, is the scan alone.
        if let Some(first) = find_replaced_in_display(s) {
            self.replace_from(field, s, first);
        }
    }

    #[inline(never)]
    fn replace_from(&mut self, field: &'static str, s: &mut String, first: usize) {
        let (t, n) = replace_display_controls_from(s, first);
        if n > 0 {
            *s = t;
            self.report.replaced_chars = self.report.replaced_chars.saturating_add(n);
            self.report.touch(field);
        }
    }

    /// Display text that is rejected when too long (deltas).
    fn display_reject(&mut self, field: &'static str, s: &mut String) -> Result<(), Rejection> {
        self.replace(field, s);
        if s.len() > self.budget {
            return Err(Rejection::bound(
                RejectKind::TextTooLong,
                field,
                None,
                s.len(),
                self.budget,
            ));
        }
        self.budget -= s.len();
        Ok(())
    }

    fn cut(&mut self, field: &'static str, s: &mut String, max: usize) {
        let keep = truncate_to_bytes(s, max).len();
        if keep < s.len() {
            self.report.truncated_fields = self.report.truncated_fields.saturating_add(1);
            self.report.truncated_bytes = self
                .report
                .truncated_bytes
                .saturating_add(as_u64(s.len() - keep));
            self.report.touch(field);
            s.truncate(keep);
        }
    }

    /// Display text that is cut to the event's remaining display budget.
    fn display_truncate(&mut self, field: &'static str, s: &mut String) {
        self.replace(field, s);
        let max = self.budget;
        self.cut(field, s, max);
        self.budget -= s.len();
    }

    /// A tool result: cut to `tool_result_bytes` (its own bound).
    fn result_truncate(&mut self, field: &'static str, s: &mut String) {
        self.replace(field, s);
        let max = self.limits.tool_result_bytes;
        self.cut(field, s, max);
    }

    /// Free text adapters pass (messages): replaced, redacted, cut, until
    /// stable so that a second pass changes nothing.
    fn message(&mut self, field: &'static str, s: &mut String) {
        self.replace(field, s);
        let max = self.budget;
        let mut stable = false;
        for _ in 0..4 {
            let (r, n) = redact_counted(s);
            if n > 0 {
                self.report.redactions = self.report.redactions.saturating_add(n);
                self.report.touch(field);
                *s = r.into_owned();
            }
            self.cut(field, s, max);
            if redact(s) == s.as_str() {
                stable = true;
                break;
            }
        }
        if !stable {
            *s = truncate_to_bytes(REDACTED, max).to_owned();
        }
        self.budget -= s.len().min(self.budget);
    }

    fn event(&mut self, e: &mut Event) -> Result<(), Rejection> {
        self.id("run_id", &e.run_id)?;
        self.id("conversation_id", &e.conversation_id)?;
        if e.namespace.len() > self.limits.namespace_depth {
            return Err(Rejection::bound(
                RejectKind::NamespaceTooDeep,
                "namespace",
                None,
                e.namespace.len(),
                self.limits.namespace_depth,
            ));
        }
        for (i, el) in e.namespace.iter().enumerate() {
            self.id_at("namespace", i, el)?;
        }
        self.payload(&mut e.payload)
    }

    /// The payload's fields, by its type (one helper per payload with more
    /// than a line or two to check). The helpers of payloads a run has few
    /// of are `#[inline(never)]`: out of line, they leave this match small
    /// enough to be inlined where events are sanitized, as it was before
    /// they were split out of it (one call less per event).
    fn payload(&mut self, p: &mut Payload) -> Result<(), Rejection> {
        match p {
            Payload::RunStarted(d) => self.run_started(d)?,
            Payload::RunFinished(d) => self.run_finished(d)?,
            Payload::RunInterrupted(d) => self.id("data.interrupt_id", &d.interrupt_id)?,
            Payload::RunCancelled(_) => {}
            Payload::RunError(d) => {
                self.name("data.code", &d.code)?;
                self.message("data.message", &mut d.message);
            }
            Payload::TextStarted(d) | Payload::ReasoningStarted(d) => {
                self.id("data.message_id", &d.message_id)?;
            }
            Payload::TextDelta(d) | Payload::ReasoningDelta(d) => {
                self.id("data.message_id", &d.message_id)?;
                self.display_reject("data.delta", &mut d.delta)?;
            }
            Payload::TextFinished(d) | Payload::ReasoningFinished(d) => {
                self.id("data.message_id", &d.message_id)?;
            }
            Payload::ToolStarted(d) => {
                self.id("data.tool_call_id", &d.tool_call_id)?;
                self.name("data.tool_name", &d.tool_name)?;
                self.arguments("data.arguments", None, &d.arguments)?;
                self.opt_id("data.parent_message_id", d.parent_message_id.as_ref())?;
            }
            Payload::ToolArgumentsDelta(d) => self.tool_arguments_delta(d)?,
            Payload::ToolFinished(d) => {
                self.id("data.tool_call_id", &d.tool_call_id)?;
                self.opt_id("data.result_ref", d.result_ref.as_ref())?;
                self.result_truncate("data.result", &mut d.result);
            }
            Payload::ToolError(d) => {
                self.id("data.tool_call_id", &d.tool_call_id)?;
                self.name("data.code", &d.code)?;
                self.message("data.message", &mut d.message);
            }
            Payload::InterruptRequested(d) => self.interrupt_requested(d)?,
            Payload::NamespaceEntered(d) => {
                self.name("data.agent_id", &d.agent_id)?;
                self.name("data.agent_name", &d.agent_name)?;
                self.id("data.parent_tool_call_id", &d.parent_tool_call_id)?;
            }
            Payload::NamespaceExited(d) => {
                self.name("data.agent_id", &d.agent_id)?;
                self.id("data.parent_tool_call_id", &d.parent_tool_call_id)?;
            }
            Payload::Warning(d) => self.warning(d)?,
            Payload::UsageUpdated(d) => self.usage_updated(d)?,
            Payload::ProviderMetadata(d) => self.provider_metadata(d)?,
            // A payload added to lce-types later: nothing to clean yet.
            #[allow(unreachable_patterns)]
            _ => {}
        }
        Ok(())
    }

    /// `run.started`: its ids and names.
    #[inline(never)]
    fn run_started(&mut self, d: &lce_types::RunStarted) -> Result<(), Rejection> {
        self.opt_id("data.message_id", d.message_id.as_ref())?;
        self.name("data.harness_id", &d.harness_id)?;
        self.name("data.adapter_version", &d.adapter_version)?;
        self.opt_id("data.provider_run_id", d.provider_run_id.as_ref())
    }

    /// `run.finished`: the stop reason and the thread state's head, when given.
    #[inline(never)]
    fn run_finished(&mut self, d: &lce_types::RunFinished) -> Result<(), Rejection> {
        if let Some(s) = &d.stop_reason {
            self.name("data.stop_reason", s)?;
        }
        if let Some(t) = &d.thread_state {
            self.id("data.thread_state.head_ref", &t.head_ref)?;
        }
        Ok(())
    }

    /// `tool.arguments.delta`: the call's id, and a delta over
    /// `tool_arguments_bytes` rejects the event.
    #[inline]
    fn tool_arguments_delta(&mut self, d: &lce_types::ToolArgumentsDelta) -> Result<(), Rejection> {
        self.id("data.tool_call_id", &d.tool_call_id)?;
        let max = self.limits.tool_arguments_bytes;
        if d.delta.len() > max {
            return Err(Rejection::bound(
                RejectKind::ArgumentsTooLarge,
                "data.delta",
                None,
                d.delta.len(),
                max,
            ));
        }
        Ok(())
    }

    /// `warning`: the code, the message, and details that break their
    /// bounds dropped (counted in the report).
    #[inline(never)]
    fn warning(&mut self, d: &mut lce_types::Warning) -> Result<(), Rejection> {
        self.name("data.code", &d.code)?;
        self.message("data.message", &mut d.message);
        if let Some(details) = &d.details {
            if !self.details_ok(details) {
                d.details = None;
                self.report.dropped_details += 1;
                self.report.touch("data.details");
            }
        }
        Ok(())
    }

    /// `usage.updated`: a finite cost and a plain currency name.
    #[inline(never)]
    fn usage_updated(&mut self, d: &lce_types::UsageUpdated) -> Result<(), Rejection> {
        if let Some(c) = d.cost {
            check_f64("data.cost", c)?;
        }
        if let Some(c) = &d.currency {
            self.name("data.currency", c)?;
        }
        Ok(())
    }

    /// `provider.metadata`: the provider and model names, and the metadata
    /// kept to its allowlist and bounds.
    #[inline(never)]
    fn provider_metadata(&mut self, d: &mut lce_types::ProviderMetadata) -> Result<(), Rejection> {
        self.name("data.provider", &d.provider)?;
        if let Some(m) = &d.model {
            self.name("data.model", m)?;
        }
        self.metadata(&mut d.metadata);
        Ok(())
    }

    /// `interrupt.requested`: every id and name is checked (a bad one
    /// rejects the event) before any display text is cut.
    fn interrupt_requested(&mut self, d: &mut InterruptRequested) -> Result<(), Rejection> {
        self.id("data.interrupt_id", &d.interrupt_id)?;
        self.name("data.agent_id", &d.agent_id)?;
        for (i, f) in d.fields.iter().flatten().enumerate() {
            self.name_at("data.fields.field_name", i, &f.field_name)?;
            self.name_at("data.fields.field_type", i, &f.field_type)?;
        }
        for (i, a) in d.tool_approvals.iter().flatten().enumerate() {
            self.id_at("data.tool_approvals.tool_call_id", i, &a.tool_call_id)?;
            self.name_at("data.tool_approvals.tool_name", i, &a.tool_name)?;
            self.arguments("data.tool_approvals.tool_args", Some(i), &a.tool_args)?;
        }
        if let Some(p) = &mut d.prompt {
            self.display_truncate("data.prompt", p);
        }
        for f in d.fields.iter_mut().flatten() {
            if let Some(t) = &mut f.field_label {
                self.display_truncate("data.fields.field_label", t);
            }
            if let Some(t) = &mut f.field_description {
                self.display_truncate("data.fields.field_description", t);
            }
            if let Some(t) = &mut f.placeholder {
                self.display_truncate("data.fields.placeholder", t);
            }
        }
        Ok(())
    }

    fn arguments(
        &self,
        field: &'static str,
        index: Option<usize>,
        a: &JsonObject,
    ) -> Result<(), Rejection> {
        let max = self.limits.tool_arguments_bytes;
        if a.len() > max {
            return Err(Rejection::bound(
                RejectKind::ArgumentsTooLarge,
                field,
                index,
                a.len(),
                max,
            ));
        }
        Ok(())
    }

    fn details_ok(&self, d: &JsonObject) -> bool {
        if d.len() > self.limits.warning_details_bytes {
            return false;
        }
        match serde_json::from_str::<serde_json::Value>(d.get()) {
            Ok(v) => shape_ok(
                &v,
                1,
                self.limits.warning_details_depth,
                self.limits.warning_details_members,
            ),
            Err(_) => false,
        }
    }

    fn metadata(&mut self, m: &mut JsonObject) {
        let members = match serde_json::from_str::<Members<'_>>(m.get()) {
            Ok(Members(v)) => v,
            Err(_) => {
                // Cannot happen for a parsed JsonObject; drop everything.
                *m = JsonObject::empty();
                self.report.dropped_metadata_keys =
                    self.report.dropped_metadata_keys.saturating_add(1);
                self.report.touch("data.metadata");
                return;
            }
        };
        let mut kept: Vec<(&str, &RawValue)> = Vec::new();
        let mut dropped: u32 = 0;
        for (k, v) in &members {
            let raw = v.get();
            let scalar = !raw.starts_with('{') && !raw.starts_with('[');
            let ok = self.limits.metadata_allowlist.iter().any(|a| a == k)
                && scalar
                && raw.len() <= self.limits.metadata_value_bytes
                && kept.len() < self.limits.metadata_keys;
            if ok {
                kept.push((k, v));
            } else {
                dropped += 1;
            }
        }
        if dropped == 0 {
            return;
        }
        let mut text = String::from("{");
        for (i, (k, v)) in kept.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&serde_json::to_string(k).unwrap_or_else(|_| "\"\"".to_owned()));
            text.push(':');
            text.push_str(v.get());
        }
        text.push('}');
        *m = JsonObject::from_json(&text).unwrap_or_default();
        self.report.dropped_metadata_keys =
            self.report.dropped_metadata_keys.saturating_add(dropped);
        self.report.touch("data.metadata");
    }
}

fn shape_ok(v: &serde_json::Value, depth: usize, max_depth: usize, max_members: usize) -> bool {
    let children: Box<dyn Iterator<Item = &serde_json::Value>> = match v {
        serde_json::Value::Object(o) => {
            if o.len() > max_members {
                return false;
            }
            Box::new(o.values())
        }
        serde_json::Value::Array(a) => {
            if a.len() > max_members {
                return false;
            }
            Box::new(a.iter())
        }
        _ => return true,
    };
    if depth > max_depth {
        return false;
    }
    let mut children = children;
    children.all(|c| shape_ok(c, depth + 1, max_depth, max_members))
}

/// The top-level members of a JSON object, in order, values raw.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = m.next_entry::<String, &'de RawValue>()? {
                    v.push(e);
                }
                Ok(Members(v))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_clean_is_equality_with_the_empty_report() {
        let empty = CleanReport::default();
        assert!(empty.is_clean());
        let changes: [fn(&mut CleanReport); 7] = [
            |r| r.replaced_chars = 1,
            |r| r.truncated_fields = 1,
            |r| r.truncated_bytes = 1,
            |r| r.redactions = 1,
            |r| r.dropped_metadata_keys = 1,
            |r| r.dropped_details = 1,
            |r| r.fields.push("data.delta"),
        ];
        for change in changes {
            let mut r = CleanReport::default();
            change(&mut r);
            assert_eq!(r.is_clean(), r == empty);
            assert!(!r.is_clean(), "{r:?}");
        }
    }
}
