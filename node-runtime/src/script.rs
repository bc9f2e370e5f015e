//! The scripted provider's script as data (wasm-safe): what the model
//! answers turn by turn. The provider (`model::scripted`) plays it; the
//! editor checks it as it is typed, offers an example, and makes one from
//! a recorded run's answers ([`Script::from_bundle`]), which turns a live
//! run into an offline, repeatable workflow.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::chat::TokenUsage;
use crate::payload::Payload;
use crate::replay_bundle::ReplayBundle;

/// One tool call a turn makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Payload,
}

/// One answer of the model: text, tool calls, or both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptCall>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    #[serde(default, skip_serializing_if = "is_zero_f")]
    pub cost: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_f(n: &f64) -> bool {
    *n == 0.0
}

/// A whole script: the turns in order, and the answer used when a limit
/// forces one without tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub turns: Vec<ScriptTurn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<String>,
}

impl Script {
    /// Parses a script; the error names what is wrong (an unknown field,
    /// a missing `turns`, a wrong type).
    pub fn parse(script: &Value) -> Result<Self, String> {
        // Read from the borrowed value: a clone of it first would copy a
        // long script's every answer twice (issue #30).
        let script = <Self as serde::Deserialize>::deserialize(script)
            .map_err(|e| format!("invalid scripted provider script: {e}"))?;
        for (i, turn) in script.turns.iter().enumerate() {
            if let Some(call) = turn.tool_calls.iter().find(|c| c.name.trim().is_empty()) {
                return Err(format!(
                    "invalid scripted provider script: turn {} calls a tool with no name ({call:?})",
                    i + 1
                ));
            }
        }
        Ok(script)
    }

    /// A script to start from: one calculator call, then an answer.
    pub fn example() -> Value {
        json!({"turns": [
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]},
            {"text": "The answer is 42."}
        ]})
    }

    /// The answers a recorded Agent node got from its model, as a script
    /// that gives them again (with their usage and cost; no latency).
    pub fn from_bundle(bundle: &ReplayBundle) -> Self {
        Self {
            turns: bundle
                .exchanges
                .iter()
                .map(|x| ScriptTurn {
                    text: x.response.text.clone(),
                    tool_calls: x
                        .response
                        .tool_calls
                        .iter()
                        .map(|c| ScriptCall {
                            id: None,
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        })
                        .collect(),
                    latency_ms: 0,
                    usage: Some(x.response.usage),
                    cost: x.response.cost,
                })
                .collect(),
            final_answer: None,
        }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_parse_and_name_what_is_wrong() {
        let example = Script::parse(&Script::example()).expect("the example parses");
        assert_eq!(example.turns.len(), 2);
        assert_eq!(example.to_value(), Script::example(), "round trip");
        for (bad, says) in [
            (json!({}), "turns"),
            (json!({"turns": [{"txt": "hi"}]}), "txt"),
            (json!({"turns": [{"tool_calls": [{"name": ""}]}]}), "turn 1"),
            (json!({"turns": [{"latency_ms": "slow"}]}), "invalid type"),
        ] {
            let e = Script::parse(&bad).expect_err("refused");
            assert!(e.contains(says), "{e} should say {says}");
        }
    }
}
