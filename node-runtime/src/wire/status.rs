//! The statuses the API answers with, as closed enums. Storage keeps them as
//! their snake_case words ([`RunStatus::as_str`] and `FromStr`), the wire
//! serializes them the same way.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A word that names no variant of a status enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{word}` is not a {what}")]
pub struct UnknownStatus {
    pub what: &'static str,
    pub word: String,
}

macro_rules! status_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal, { $($(#[$vmeta:meta])* $variant:ident => $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and serialized word.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownStatus;

            fn from_str(word: &str) -> Result<Self, Self::Err> {
                match word {
                    $($word => Ok($name::$variant),)+
                    _ => Err(UnknownStatus { what: $what, word: word.to_string() }),
                }
            }
        }
    };
}

status_enum!(
    /// A run's status (the `runs.status` column).
    RunStatus, "run status", {
        Queued => "queued",
        Running => "running",
        WaitingForApproval => "waiting_for_approval",
        Succeeded => "succeeded",
        Failed => "failed",
        Cancelled => "cancelled",
    }
);

impl RunStatus {
    /// A run in this status has ended and will not change again.
    pub const fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }
}

status_enum!(
    /// Where a suite run stands (the `suite_runs.status` column).
    SuiteRunStatus, "suite run status", {
        Running => "running",
        /// Every case passed.
        Passed => "passed",
        /// At least one case failed.
        Failed => "failed",
        /// The suite run could not finish (its server stopped, a store
        /// error): its `error` says why.
        Error => "error",
    }
);

status_enum!(
    /// What a run record is: a live run, a hermetic replay of one, or a
    /// fork of one (run again with changes, its recorded calls answered
    /// from the recording).
    RunKind, "run kind", {
        Run => "run",
        Replay => "replay",
        Fork => "fork",
    }
);

status_enum!(
    /// One tool invocation's lifecycle (seed 001).
    InvocationStatus, "invocation status", {
        Pending => "pending",
        Approved => "approved",
        Rejected => "rejected",
        Running => "running",
        Completed => "completed",
        Failed => "failed",
        /// An approved write interrupted by a crash between its intent and
        /// its result: an operator reconciles it; it is never retried.
        OutcomeUnknown => "outcome_unknown",
    }
);

status_enum!(
    /// An invocation's approval, in seed 001's words.
    InvocationApproval, "invocation approval status", {
        Pending => "pending",
        Approved => "approved",
        Rejected => "rejected",
    }
);

status_enum!(
    /// A row of the approvals table: the human decision itself.
    ApprovalStatus, "approval status", {
        Pending => "pending",
        Approved => "approved",
        Denied => "denied",
        RevisionRequested => "revision_requested",
        // The run ended (cancelled, failed) before anyone decided.
        Closed => "closed",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_through_str_and_serde() {
        for s in RunStatus::ALL {
            assert_eq!(s.as_str().parse::<RunStatus>(), Ok(*s));
            assert_eq!(
                serde_json::to_value(s).expect("serializes"),
                serde_json::Value::String(s.as_str().into())
            );
        }
        for s in InvocationStatus::ALL {
            assert_eq!(s.as_str().parse::<InvocationStatus>(), Ok(*s));
        }
        for s in ApprovalStatus::ALL {
            assert_eq!(s.as_str().parse::<ApprovalStatus>(), Ok(*s));
        }
        assert_eq!(
            "done".parse::<RunStatus>(),
            Err(UnknownStatus {
                what: "run status",
                word: "done".into()
            })
        );
        assert!(RunStatus::Cancelled.is_final() && !RunStatus::WaitingForApproval.is_final());
    }
}
