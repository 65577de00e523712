//! Safe adapter errors (D20): a closed set of kinds, each with a fixed code
//! and message. Nothing of a provider's error text survives.

use std::fmt;

use lce_types::{RunError, SideEffectStatus, ToolError};

/// The closed set of adapter error kinds (D20).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdapterErrorKind {
    /// The adapter or provider is misconfigured (model, endpoint, options).
    Configuration,
    /// The provider rejected the credentials.
    Authentication,
    /// The credentials lack a permission.
    Authorization,
    /// The provider is out of capacity (overloaded, quota exhausted).
    Capacity,
    /// Too many requests: rate limited.
    Throttled,
    /// The provider is unavailable (5xx, connection refused).
    Unavailable,
    /// A deadline passed while waiting for the provider.
    Timeout,
    /// The provider answered something the adapter cannot interpret.
    Protocol,
    /// Reading or writing durable state failed.
    Persistence,
    /// The work was cancelled.
    Cancelled,
    /// Any other failure.
    Internal,
}

impl AdapterErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [AdapterErrorKind] = &[
        AdapterErrorKind::Configuration,
        AdapterErrorKind::Authentication,
        AdapterErrorKind::Authorization,
        AdapterErrorKind::Capacity,
        AdapterErrorKind::Throttled,
        AdapterErrorKind::Unavailable,
        AdapterErrorKind::Timeout,
        AdapterErrorKind::Protocol,
        AdapterErrorKind::Persistence,
        AdapterErrorKind::Cancelled,
        AdapterErrorKind::Internal,
    ];

    /// The fixed, safe machine code (`run.error.code`, `tool.error.code`).
    pub fn code(self) -> &'static str {
        match self {
            AdapterErrorKind::Configuration => "adapter_misconfigured",
            AdapterErrorKind::Authentication => "provider_authentication_failed",
            AdapterErrorKind::Authorization => "provider_permission_denied",
            AdapterErrorKind::Capacity => "capacity_exceeded",
            AdapterErrorKind::Throttled => "rate_limited",
            AdapterErrorKind::Unavailable => "provider_unavailable",
            AdapterErrorKind::Timeout => "provider_timeout",
            AdapterErrorKind::Protocol => "provider_protocol_error",
            AdapterErrorKind::Persistence => "persistence_failed",
            AdapterErrorKind::Cancelled => "cancelled",
            AdapterErrorKind::Internal => "internal_error",
        }
    }

    /// The fixed, safe user-facing message.
    pub fn message(self) -> &'static str {
        match self {
            AdapterErrorKind::Configuration => "The agent is not configured correctly.",
            AdapterErrorKind::Authentication => {
                "The agent could not authenticate with its provider."
            }
            AdapterErrorKind::Authorization => "The agent is not allowed to perform this request.",
            AdapterErrorKind::Capacity => "The service is at capacity. Please try again later.",
            AdapterErrorKind::Throttled => "Too many requests. Please try again later.",
            AdapterErrorKind::Unavailable => {
                "The provider is temporarily unavailable. Please try again later."
            }
            AdapterErrorKind::Timeout => "The request timed out. Please try again.",
            AdapterErrorKind::Protocol => "The provider returned an unexpected response.",
            AdapterErrorKind::Persistence => "The conversation state could not be saved.",
            AdapterErrorKind::Cancelled => "The request was cancelled.",
            AdapterErrorKind::Internal => "An internal error occurred.",
        }
    }

    /// Whether retrying may help: capacity, throttling, unavailability and
    /// timeouts are transient; the rest are not.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            AdapterErrorKind::Capacity
                | AdapterErrorKind::Throttled
                | AdapterErrorKind::Unavailable
                | AdapterErrorKind::Timeout
        )
    }

    /// The kind whose [`code`](Self::code) is `code`.
    pub fn from_code(code: &str) -> Option<AdapterErrorKind> {
        Self::ALL.iter().copied().find(|k| k.code() == code)
    }
}

impl fmt::Display for AdapterErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A safe, typed adapter error (D20). It holds its kind and, for retryable
/// kinds, a retry delay: never any text from the failure that caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AdapterError {
    kind: AdapterErrorKind,
    retry_after_seconds: Option<u64>,
}

impl AdapterError {
    /// An error of `kind`.
    pub fn new(kind: AdapterErrorKind) -> Self {
        AdapterError {
            kind,
            retry_after_seconds: None,
        }
    }

    /// An error of `kind` standing for `source`, of which nothing is kept:
    /// not its message, not its type, not its chain. Log the source yourself
    /// only where secrets may go (never an event, never a shared log).
    pub fn from_error(kind: AdapterErrorKind, source: &dyn std::error::Error) -> Self {
        let _ = source;
        AdapterError::new(kind)
    }

    /// Sets the retry delay; ignored (left `None`) for kinds that are not
    /// [`retryable`](Self::retryable).
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after_seconds = self.kind.retryable().then_some(seconds);
        self
    }

    /// The kind.
    pub fn kind(&self) -> AdapterErrorKind {
        self.kind
    }

    /// The fixed safe code.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// The fixed safe message.
    pub fn message(&self) -> &'static str {
        self.kind.message()
    }

    /// Whether retrying may help.
    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }

    /// Seconds to wait before retrying, when known (retryable kinds only).
    pub fn retry_after_seconds(&self) -> Option<u64> {
        self.retry_after_seconds
    }

    /// The `run.error` payload for this error.
    pub fn to_run_error(&self, side_effect_status: SideEffectStatus) -> RunError {
        RunError {
            code: self.code().to_owned(),
            message: self.message().to_owned(),
            retryable: self.retryable(),
            retry_after_seconds: self
                .retry_after_seconds
                .map(lce_types::RetryAfter::saturating_from_seconds),
            side_effect_status,
        }
    }

    /// The `tool.error` payload for this error on call `tool_call_id`.
    pub fn to_tool_error(&self, tool_call_id: impl Into<String>) -> ToolError {
        ToolError {
            tool_call_id: tool_call_id.into(),
            code: self.code().to_owned(),
            message: self.message().to_owned(),
            retryable: self.retryable(),
        }
    }
}

impl From<AdapterErrorKind> for AdapterError {
    fn from(kind: AdapterErrorKind) -> Self {
        AdapterError::new(kind)
    }
}

impl fmt::Display for AdapterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for AdapterError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Leaky;
    impl fmt::Display for Leaky {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("Bearer sk-SECRETSECRETSECRETSECRET at /home/app/main.py line 3")
        }
    }
    impl std::error::Error for Leaky {}

    #[test]
    fn codes_are_unique_snake_case_and_messages_fixed() {
        for (i, k) in AdapterErrorKind::ALL.iter().enumerate() {
            assert!(
                k.code()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_')
            );
            assert!(
                AdapterErrorKind::ALL[..i]
                    .iter()
                    .all(|o| o.code() != k.code())
            );
            assert_eq!(AdapterErrorKind::from_code(k.code()), Some(*k));
            assert!(!k.message().is_empty());
            assert_eq!(crate::redact(k.message()), k.message());
        }
    }

    #[test]
    fn from_error_keeps_nothing() {
        let e = AdapterError::from_error(AdapterErrorKind::Throttled, &Leaky).with_retry_after(7);
        let shown = format!("{e} {e:?}");
        assert!(
            !shown.contains("SECRET") && !shown.contains("Leaky") && !shown.contains("main.py")
        );
        let r = e.to_run_error(SideEffectStatus::None);
        assert_eq!(r.code, "rate_limited");
        assert!(r.retryable);
        assert_eq!(
            r.retry_after_seconds
                .as_ref()
                .map(lce_types::RetryAfter::as_str),
            Some("7")
        );
        let r = AdapterError::new(AdapterErrorKind::Internal).with_retry_after(7);
        assert_eq!(r.retry_after_seconds(), None);
        assert!(std::error::Error::source(&e).is_none());
        let t = e.to_tool_error("tc-1");
        assert_eq!((t.code.as_str(), t.retryable), ("rate_limited", true));
    }
}
