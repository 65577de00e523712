//! The run log's vocabulary: refusals and terminal entries.

/// Each refusal's short name, also in the error's message; a log entry is
/// terminal exactly when it is a run terminal event.
#[test]
fn refusals_are_named_and_terminal_entries_seal() {
    use lce_runlog::{LogEntry, LogError, Refusal};
    assert_eq!(
        [Refusal::Sealed, Refusal::OutOfOrder, Refusal::NotOwner].map(Refusal::as_str),
        ["sealed", "out_of_order", "not_owner"]
    );
    assert_eq!(
        LogError::Refused {
            position: 7,
            refusal: Refusal::NotOwner
        }
        .to_string(),
        "the run log refused the append at position 7 (not_owner)"
    );
    let event = |ty: &str, data: &str| {
        let line = format!(
            r#"{{"version":1,"type":"{ty}","run_id":"r","conversation_id":"c","sequence":0,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{data}}}"#
        );
        LogEntry::Event(lce_types::Event::from_json(&line).unwrap())
    };
    assert!(event("run.finished", r#"{"outcome":"success"}"#).is_terminal());
    assert!(
        event(
            "run.cancelled",
            r#"{"reason":"client_request","side_effect_status":"none"}"#
        )
        .is_terminal()
    );
    assert!(!event("text.started", r#"{"message_id":"m","role":"assistant"}"#).is_terminal());
    assert!(!LogEntry::Idle.is_terminal());
}
