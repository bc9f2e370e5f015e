//! The policy guard (seed 003 §5.1): the rules an Agent Node runs under and
//! the pure checks that enforce them. It runs before each model call and
//! before each tool call; the executor calls [`check_tool_call`] first.
//!
//! Pure functions over plain data: no IO, so the app can explain a policy
//! with the same code the server enforces it with.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::ToolError;
use crate::tool_spec::{Lifecycle, SideEffects, ToolSpec};

/// The limits and rules of one Agent Node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Policy {
    /// The allow-list: tool names (`calculator`) or exact refs
    /// (`calculator@1.0.0`). Anything else is POLICY_DENIED, never executed.
    #[serde(default)]
    pub enabled_tools: Vec<String>,
    #[serde(default = "default_max_iterations")]
    pub max_iterations: u32,
    #[serde(default = "default_max_tool_calls")]
    pub max_tool_calls: u32,
    /// Cost ceiling (credits) accrued live from tool and model calls; none = unlimited.
    #[serde(default)]
    pub max_budget: Option<f64>,
    /// The most a tool may do: a `reads` node refuses `writes` tools.
    #[serde(default)]
    pub side_effect_ceiling: SideEffects,
    /// At most this many calls of one model turn run at once: 1 to 64
    /// ([`MAX_PARALLEL_CALLS`], also the default and the executor's own
    /// cap); a workflow with another value is refused (`POLICY_INVALID`).
    #[serde(default = "default_max_parallel_calls")]
    pub max_parallel_calls: u32,
}

/// The most calls of one model turn that run at once: the top of
/// `max_parallel_calls`'s range and its default (the executor's own cap).
pub const MAX_PARALLEL_CALLS: u32 = 64;

fn default_max_parallel_calls() -> u32 {
    MAX_PARALLEL_CALLS
}

/// `max_parallel_calls` when it is in its range (1 to
/// [`MAX_PARALLEL_CALLS`]), else the message naming the field. The editor
/// checks what is typed with it, and workflow validation what is saved.
pub fn check_parallel_calls(n: u32) -> Result<u32, String> {
    if (1..=MAX_PARALLEL_CALLS).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "max_parallel_calls: a whole number from 1 to {MAX_PARALLEL_CALLS}"
        ))
    }
}

fn default_max_iterations() -> u32 {
    10
}

fn default_max_tool_calls() -> u32 {
    25
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            enabled_tools: Vec::new(),
            max_iterations: default_max_iterations(),
            max_tool_calls: default_max_tool_calls(),
            max_budget: None,
            side_effect_ceiling: SideEffects::Writes,
            max_parallel_calls: default_max_parallel_calls(),
        }
    }
}

/// What has been spent so far in the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub iterations: u32,
    pub tool_calls: u32,
    pub cost: f64,
}

/// The guard's verdict on a tool call that is allowed to proceed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clearance {
    /// Run it.
    Allowed {
        /// Set for deprecated tools: runs, with this warning.
        warning: Option<String>,
    },
    /// A `writes` call: run only after a human approved this exact call.
    NeedsApproval { warning: Option<String> },
}

impl Policy {
    /// Whether `spec` is on the allow-list (by name or exact ref).
    pub fn allows(&self, spec: &ToolSpec) -> bool {
        let key = spec.key();
        self.enabled_tools
            .iter()
            .any(|t| *t == spec.name || *t == key)
    }
}

fn denied(reason: &str, message: String) -> ToolError {
    ToolError::policy_denied(message).with_details(json!({ "reason": reason }))
}

/// Checks one tool call against the policy. `side_effects` is the call's
/// effective side effects (a tool may declare less for some inputs, such as
/// an HTTP GET). `usage` counts calls *before* this one.
pub fn check_tool_call(
    policy: &Policy,
    spec: &ToolSpec,
    side_effects: SideEffects,
    usage: &Usage,
) -> Result<Clearance, ToolError> {
    if !policy.allows(spec) {
        return Err(denied(
            "NOT_ENABLED",
            format!("tool {} is not in this node's enabled_tools", spec.key()),
        ));
    }
    let warning = match spec.metadata.lifecycle {
        Lifecycle::Blocked => {
            return Err(denied(
                "TOOL_BLOCKED",
                format!("tool {} is blocked and may not run", spec.key()),
            ))
        }
        Lifecycle::Deprecated => Some(format!("tool {} is deprecated", spec.key())),
        Lifecycle::Active => None,
    };
    if usage.tool_calls >= policy.max_tool_calls {
        return Err(denied(
            "MAX_TOOL_CALLS",
            format!("max_tool_calls ({}) reached", policy.max_tool_calls),
        ));
    }
    if let Some(budget) = policy.max_budget {
        if usage.cost >= budget {
            return Err(denied(
                "MAX_BUDGET",
                format!("max_budget ({budget}) reached (spent {})", usage.cost),
            ));
        }
    }
    if side_effects > policy.side_effect_ceiling {
        return Err(denied(
            "SIDE_EFFECTS",
            format!(
                "tool {} {} but this node allows at most {}",
                spec.key(),
                side_effects_verb(side_effects),
                side_effects_noun(policy.side_effect_ceiling)
            ),
        ));
    }
    if side_effects == SideEffects::Writes {
        Ok(Clearance::NeedsApproval { warning })
    } else {
        Ok(Clearance::Allowed { warning })
    }
}

/// Checks whether another model call may start (before the LLM is called).
pub fn check_iteration(policy: &Policy, usage: &Usage) -> Result<(), ToolError> {
    if usage.iterations >= policy.max_iterations {
        return Err(denied(
            "MAX_ITERATIONS",
            format!("max_iterations ({}) reached", policy.max_iterations),
        ));
    }
    if let Some(budget) = policy.max_budget {
        if usage.cost >= budget {
            return Err(denied(
                "MAX_BUDGET",
                format!("max_budget ({budget}) reached (spent {})", usage.cost),
            ));
        }
    }
    Ok(())
}

fn side_effects_verb(s: SideEffects) -> &'static str {
    match s {
        SideEffects::None => "has no side effects",
        SideEffects::Reads => "reads external data",
        SideEffects::Writes => "writes",
    }
}

fn side_effects_noun(s: SideEffects) -> &'static str {
    match s {
        SideEffects::None => "no side effects",
        SideEffects::Reads => "reads",
        SideEffects::Writes => "writes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool_spec::{ToolCategory, ToolMetadata};

    fn spec(name: &str, lifecycle: Lifecycle) -> ToolSpec {
        let mut metadata = ToolMetadata::new(ToolCategory::Utility);
        metadata.lifecycle = lifecycle;
        ToolSpec {
            name: name.into(),
            version: "1.0.0".into(),
            description: String::new(),
            input_schema: json!({}),
            output_schema: json!({}),
            metadata,
        }
    }

    fn policy(tools: &[&str]) -> Policy {
        Policy {
            enabled_tools: tools.iter().map(|s| s.to_string()).collect(),
            ..Policy::default()
        }
    }

    fn reason(result: Result<Clearance, ToolError>) -> String {
        let err = result.expect_err("denied");
        assert_eq!(err.code, crate::error::ErrorCode::PolicyDenied);
        err.details["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn allow_list_by_name_or_exact_ref() {
        let s = spec("calc", Lifecycle::Active);
        let u = Usage::default();
        assert!(check_tool_call(&policy(&["calc"]), &s, SideEffects::None, &u).is_ok());
        assert!(check_tool_call(&policy(&["calc@1.0.0"]), &s, SideEffects::None, &u).is_ok());
        assert_eq!(
            reason(check_tool_call(
                &policy(&["calc@2.0.0"]),
                &s,
                SideEffects::None,
                &u
            )),
            "NOT_ENABLED"
        );
        assert_eq!(
            reason(check_tool_call(&policy(&[]), &s, SideEffects::None, &u)),
            "NOT_ENABLED"
        );
    }

    #[test]
    fn lifecycle_rules() {
        let u = Usage::default();
        let p = policy(&["t"]);
        assert_eq!(
            reason(check_tool_call(
                &p,
                &spec("t", Lifecycle::Blocked),
                SideEffects::None,
                &u
            )),
            "TOOL_BLOCKED"
        );
        match check_tool_call(&p, &spec("t", Lifecycle::Deprecated), SideEffects::None, &u) {
            Ok(Clearance::Allowed { warning: Some(w) }) => assert!(w.contains("deprecated")),
            other => panic!("deprecated must run with a warning: {other:?}"),
        }
    }

    #[test]
    fn limits_and_ceiling() {
        let s = spec("t", Lifecycle::Active);
        let mut p = policy(&["t"]);
        p.max_tool_calls = 2;
        p.max_budget = Some(1.0);
        let used = |calls, cost| Usage {
            iterations: 0,
            tool_calls: calls,
            cost,
        };
        assert!(check_tool_call(&p, &s, SideEffects::None, &used(1, 0.5)).is_ok());
        assert_eq!(
            reason(check_tool_call(&p, &s, SideEffects::None, &used(2, 0.0))),
            "MAX_TOOL_CALLS"
        );
        assert_eq!(
            reason(check_tool_call(&p, &s, SideEffects::None, &used(0, 1.0))),
            "MAX_BUDGET"
        );
        p.side_effect_ceiling = SideEffects::Reads;
        assert_eq!(
            reason(check_tool_call(&p, &s, SideEffects::Writes, &used(0, 0.0))),
            "SIDE_EFFECTS"
        );
        assert!(check_tool_call(&p, &s, SideEffects::Reads, &used(0, 0.0)).is_ok());
    }

    #[test]
    fn writes_need_approval() {
        let s = spec("t", Lifecycle::Active);
        assert_eq!(
            check_tool_call(&policy(&["t"]), &s, SideEffects::Writes, &Usage::default()),
            Ok(Clearance::NeedsApproval { warning: None })
        );
    }

    #[test]
    fn iterations_limit() {
        let p = Policy {
            max_iterations: 2,
            ..Policy::default()
        };
        assert!(check_iteration(
            &p,
            &Usage {
                iterations: 1,
                ..Usage::default()
            }
        )
        .is_ok());
        assert!(check_iteration(
            &p,
            &Usage {
                iterations: 2,
                ..Usage::default()
            }
        )
        .is_err());
    }
}
