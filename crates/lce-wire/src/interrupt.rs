//! DA's interrupt, as both DA protocols write it: the payload of `custom`'s
//! `input_required` frame and of DA `agui`'s `RUN_FINISHED.interrupt`. Here
//! because both encoder crates need it and neither depends on the other;
//! written once, so the two DA protocols cannot drift apart.

use lce_types::{InterruptRequested, InterruptType, ToolApproval};

use crate::{JsonWriter, Key, WireError, write_form_field};

/// A [`Key`] built at compile time, as a `&'static` reference.
macro_rules! k {
    ($text:literal) => {
        &const { Key::new($text) }
    };
}

/// Where `agent` stands among the members of DA's interrupt payload: the
/// one thing the two DA protocols write differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentPlace {
    /// Before the rest: `custom`'s `input_required` frame (after the
    /// `type` and `interrupt_id` the frame writes itself).
    First,
    /// After what the interrupt asks for: after the first approval's
    /// members (before `tool_approvals`), or after a form's `prompt` and
    /// `fields`: DA `agui`'s `interrupt.payload`.
    AfterRequest,
}

/// Writes the members of DA's interrupt payload for `ir` into the object
/// `w` has open, with `agent` as the agent's display name placed as `place`
/// says. An approval: the first approval's `tool_name`, `tool_args` and
/// `allowed_decisions`, then `tool_approvals` (each with its
/// `tool_call_id`) when there is more than one; any other interrupt is a
/// form: `prompt` (empty when absent) and `fields`. See `docs/wire.md`.
pub fn write_interrupt_payload(
    w: &mut JsonWriter<'_>,
    ir: &InterruptRequested,
    agent: &str,
    place: AgentPlace,
) -> Result<(), WireError> {
    if place == AgentPlace::First {
        w.field_str_k(k!("agent"), agent);
    }
    match ir.interrupt_type {
        InterruptType::ToolApproval => {
            let approvals = ir.tool_approvals.as_deref().unwrap_or_default();
            if let Some(first) = approvals.first() {
                approval_members(w, first, false)?;
            }
            if place == AgentPlace::AfterRequest {
                w.field_str_k(k!("agent"), agent);
            }
            if approvals.len() > 1 {
                w.key_k(k!("tool_approvals"));
                w.begin_array();
                for a in approvals {
                    w.begin_object();
                    approval_members(w, a, true)?;
                    w.end_object();
                }
                w.end_array();
            }
        }
        _ => {
            w.field_str_k(k!("prompt"), ir.prompt.as_deref().unwrap_or_default());
            w.key_k(k!("fields"));
            w.begin_array();
            for f in ir.fields.as_deref().unwrap_or_default() {
                write_form_field(w, f)?;
            }
            w.end_array();
            if place == AgentPlace::AfterRequest {
                w.field_str_k(k!("agent"), agent);
            }
        }
    }
    Ok(())
}

/// One approval's members: `tool_name`, `tool_args`, `tool_call_id` (when
/// `with_id`) and `allowed_decisions` (defaults applied).
fn approval_members(
    w: &mut JsonWriter<'_>,
    a: &ToolApproval,
    with_id: bool,
) -> Result<(), WireError> {
    w.field_str_k(k!("tool_name"), &a.tool_name);
    w.field_opaque("tool_args", a.tool_args.get())?;
    if with_id {
        w.field_str_k(k!("tool_call_id"), &a.tool_call_id);
    }
    w.key_k(k!("allowed_decisions"));
    w.begin_array();
    for d in a.decisions() {
        w.string(d.as_str());
    }
    w.end_array();
    Ok(())
}
