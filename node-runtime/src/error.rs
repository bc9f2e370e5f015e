//! The tool error taxonomy (seed 003 §3.4) and its classes (seed 000).
//!
//! `ErrorCode` is a stable API: downstream nodes branch on it, so its nine
//! values are serialized exactly as the spec writes them and never renamed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The nine stable error codes of a failed tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// Input failed JSON Schema validation.
    ValidationError,
    /// Tool execution exceeded its timeout.
    Timeout,
    /// A tool-specific rate limit was exceeded.
    RateLimit,
    /// The policy guard (allow-list, limits, side effects, approval) blocked the call.
    PolicyDenied,
    /// A required secret is missing or invalid.
    AuthRequired,
    /// The upstream API answered with a 5xx.
    ProviderError,
    /// DNS or connection failure.
    NetworkError,
    /// The sandbox that runs the tool failed.
    SandboxError,
    /// Anything else, including a panicking tool.
    Unknown,
}

impl ErrorCode {
    /// All codes, in the spec's order.
    pub const ALL: [ErrorCode; 9] = [
        Self::ValidationError,
        Self::Timeout,
        Self::RateLimit,
        Self::PolicyDenied,
        Self::AuthRequired,
        Self::ProviderError,
        Self::NetworkError,
        Self::SandboxError,
        Self::Unknown,
    ];

    /// The code as it appears on the wire, e.g. `"VALIDATION_ERROR"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ValidationError => "VALIDATION_ERROR",
            Self::Timeout => "TIMEOUT",
            Self::RateLimit => "RATE_LIMIT",
            Self::PolicyDenied => "POLICY_DENIED",
            Self::AuthRequired => "AUTH_REQUIRED",
            Self::ProviderError => "PROVIDER_ERROR",
            Self::NetworkError => "NETWORK_ERROR",
            Self::SandboxError => "SANDBOX_ERROR",
            Self::Unknown => "UNKNOWN",
        }
    }

    /// Seed 000's four classes, used to decide retries and how to show it.
    pub fn classify(self) -> ErrorClass {
        match self {
            Self::ValidationError | Self::AuthRequired => ErrorClass::User,
            Self::PolicyDenied => ErrorClass::Policy,
            Self::Timeout | Self::RateLimit | Self::ProviderError | Self::NetworkError => {
                ErrorClass::Transient
            }
            Self::SandboxError | Self::Unknown => ErrorClass::Terminal,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who can fix a failure, after seed 000's taxonomy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The caller's input or configuration is wrong; retrying the same call fails again.
    User,
    /// A rule forbids it; only a policy change or an approval helps.
    Policy,
    /// May succeed later; retry with backoff (honouring `retry_after_s`).
    Transient,
    /// Will not succeed; stop.
    Terminal,
}

impl ErrorClass {
    pub fn is_retryable(self) -> bool {
        self == Self::Transient
    }
}

/// The structured error of a failed tool call. Every key is always present
/// in JSON (`details` and `retry_after_s` are null when empty).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[error("{code}: {message}")]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default)]
    pub details: Value,
    #[serde(default)]
    pub retry_after_s: Option<u64>,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: Value::Null,
            retry_after_s: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after_s = Some(seconds);
        self
    }

    pub fn classify(&self) -> ErrorClass {
        self.code.classify()
    }

    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationError, message)
    }

    pub fn policy_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PolicyDenied, message)
    }

    pub fn unknown(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unknown, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(code: ErrorCode, wire: &str, class: ErrorClass) {
        assert_eq!(
            serde_json::to_value(code).expect("serializes"),
            Value::String(wire.into())
        );
        assert_eq!(code.as_str(), wire);
        assert_eq!(code.classify(), class, "{wire}");
        let back: ErrorCode = serde_json::from_str(&format!("\"{wire}\"")).expect("parses");
        assert_eq!(back, code);
    }

    #[test]
    fn codes_serialize_as_the_spec_writes_them() {
        use ErrorClass::*;
        check(ErrorCode::ValidationError, "VALIDATION_ERROR", User);
        check(ErrorCode::Timeout, "TIMEOUT", Transient);
        check(ErrorCode::RateLimit, "RATE_LIMIT", Transient);
        check(ErrorCode::PolicyDenied, "POLICY_DENIED", Policy);
        check(ErrorCode::AuthRequired, "AUTH_REQUIRED", User);
        check(ErrorCode::ProviderError, "PROVIDER_ERROR", Transient);
        check(ErrorCode::NetworkError, "NETWORK_ERROR", Transient);
        check(ErrorCode::SandboxError, "SANDBOX_ERROR", Terminal);
        check(ErrorCode::Unknown, "UNKNOWN", Terminal);
        assert_eq!(ErrorCode::ALL.len(), 9);
    }

    #[test]
    fn tool_error_always_has_every_key() {
        let json = serde_json::to_value(ToolError::new(ErrorCode::Timeout, "slow")).expect("ser");
        assert_eq!(
            json,
            serde_json::json!({"code": "TIMEOUT", "message": "slow", "details": null, "retry_after_s": null})
        );
    }
}
