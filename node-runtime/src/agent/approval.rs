//! Approvals of `writes` calls (seeds 000 and 001).
//!
//! A pending write carries a token: the keyed BLAKE3 hash of (run id,
//! call_id, tool@version, canonical args) under the runtime's approval key.
//! A decision must present that token; it is refused when the token belongs
//! to no pending call of this run (another run's token), when the call's
//! arguments no longer hash to it (tampered), or when it was used before.

use serde_json::Value;

use crate::call_id::canonical_json;

pub use crate::agent_event::{ApprovalRequest, Decision};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApprovalError {
    #[error("no pending approval of this run has that token")]
    UnknownToken,
    #[error("the token was already used")]
    AlreadyUsed,
    #[error("the call's arguments no longer match the approved token")]
    Tampered,
    #[error("a denial needs a reason")]
    ReasonRequired,
}

/// The token binding an approval to exactly one call.
pub fn approval_token(
    key: &[u8; 32],
    run_id: &str,
    call_id: &str,
    tool_ref: &str,
    args: &Value,
) -> String {
    let mut h = blake3::Hasher::new_keyed(key);
    for part in [run_id, call_id, tool_ref] {
        h.update(part.as_bytes());
        h.update(&[0]);
    }
    h.update(canonical_json(args).as_bytes());
    h.finalize().to_hex().to_string()
}

/// A one-line, bounded summary of the arguments.
pub fn summarize_args(args: &Value) -> String {
    let text = args.to_string();
    if text.chars().count() > 300 {
        format!("{}…", text.chars().take(300).collect::<String>())
    } else {
        text
    }
}
