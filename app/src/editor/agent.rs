//! The Agent panel's forms: provider and model, and the policy limits,
//! edited as text and checked before they reach the document.

use node_runtime::agent_config::ProviderConfig;
use node_runtime::policy::Policy;
use node_runtime::tool_spec::SideEffects;
use serde_json::json;

/// The provider kinds the panel offers.
pub const PROVIDERS: [(&str, &str); 3] = [
    ("scripted", "Scripted (offline)"),
    ("openai", "OpenAI-compatible"),
    ("anthropic", "Anthropic"),
];

/// The provider of `kind`, keeping what carries over (model and base URL
/// between the two HTTP providers); new ones start with their usual
/// defaults and the usual secret name.
pub fn switch_provider(current: &ProviderConfig, kind: &str) -> Result<ProviderConfig, String> {
    let (base, model) = match current {
        ProviderConfig::Openai {
            base_url, model, ..
        }
        | ProviderConfig::Anthropic {
            base_url, model, ..
        } => (Some(base_url.clone()), Some(model.clone())),
        ProviderConfig::Scripted { .. } => (None, None),
    };
    Ok(match kind {
        "scripted" => match current {
            ProviderConfig::Scripted { .. } => current.clone(),
            _ => ProviderConfig::Scripted {
                script: json!({"turns": [{"text": "Scripted answer."}]}),
            },
        },
        "openai" => ProviderConfig::Openai {
            base_url: base
                .filter(|_| current.kind() == "openai")
                .unwrap_or_else(|| "https://api.openai.com/v1".into()),
            model: model.unwrap_or_else(|| "gpt-4o-mini".into()),
            api_key_secret: Some("OPENAI_API_KEY".into()),
            price: None,
        },
        "anthropic" => ProviderConfig::Anthropic {
            base_url: base
                .filter(|_| current.kind() == "anthropic")
                .unwrap_or_else(|| "https://api.anthropic.com".into()),
            model: model.unwrap_or_else(|| "claude-3-5-haiku-latest".into()),
            api_key_secret: "ANTHROPIC_API_KEY".into(),
            price: None,
        },
        other => return Err(format!("`{other}` is not a provider")),
    })
}

fn secret_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Sets `base_url`, `model` or `api_key_secret` of an HTTP provider; the
/// error names the field.
pub fn set_provider_field(
    provider: &mut ProviderConfig,
    field: &str,
    text: &str,
) -> Result<(), String> {
    let text = text.trim();
    match (provider, field) {
        (ProviderConfig::Scripted { .. }, _) => {
            Err("the scripted provider has no connection settings".into())
        }
        (
            ProviderConfig::Openai { base_url, .. } | ProviderConfig::Anthropic { base_url, .. },
            "base_url",
        ) => {
            if !(text.starts_with("http://") || text.starts_with("https://")) || text.len() < 10 {
                return Err("base_url: an http:// or https:// URL".into());
            }
            *base_url = text.to_string();
            Ok(())
        }
        (
            ProviderConfig::Openai { model, .. } | ProviderConfig::Anthropic { model, .. },
            "model",
        ) => {
            if text.is_empty() {
                return Err("model: a model name is needed".into());
            }
            *model = text.to_string();
            Ok(())
        }
        (ProviderConfig::Openai { api_key_secret, .. }, "api_key_secret") => {
            if !text.is_empty() && !secret_name_ok(text) {
                return Err(
                    "api_key_secret: 1-128 of A-Z a-z 0-9 _ - . (empty for a local server)".into(),
                );
            }
            *api_key_secret = (!text.is_empty()).then(|| text.to_string());
            Ok(())
        }
        (ProviderConfig::Anthropic { api_key_secret, .. }, "api_key_secret") => {
            if !secret_name_ok(text) {
                return Err("api_key_secret: 1-128 of A-Z a-z 0-9 _ - .".into());
            }
            *api_key_secret = text.to_string();
            Ok(())
        }
        (_, other) => Err(format!("{other}: not a provider setting")),
    }
}

/// Sets one policy limit from its text; the error names the field.
pub fn set_policy_field(policy: &mut Policy, field: &str, text: &str) -> Result<(), String> {
    let text = text.trim();
    let count = |name: &str| -> Result<u32, String> {
        text.parse::<u32>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| format!("{name}: a whole number from 1 to 1000"))
    };
    match field {
        "max_iterations" => policy.max_iterations = count(field)?,
        "max_tool_calls" => policy.max_tool_calls = count(field)?,
        "max_budget" => {
            policy.max_budget = if text.is_empty() {
                None
            } else {
                Some(
                    text.parse::<f64>()
                        .ok()
                        .filter(|b| b.is_finite() && *b >= 0.0)
                        .ok_or("max_budget: a number of credits, 0 or more (empty for no limit)")?,
                )
            }
        }
        "side_effect_ceiling" => {
            policy.side_effect_ceiling = match text {
                "none" => SideEffects::None,
                "reads" => SideEffects::Reads,
                "writes" => SideEffects::Writes,
                _ => return Err("side_effect_ceiling: none, reads or writes".into()),
            }
        }
        other => return Err(format!("{other}: not a policy setting")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_switch_with_their_defaults_and_keep_what_carries_over() {
        let scripted = ProviderConfig::Scripted {
            script: json!({"turns": []}),
        };
        assert_eq!(
            switch_provider(&scripted, "scripted").unwrap(),
            scripted,
            "unchanged"
        );
        let mut openai = switch_provider(&scripted, "openai").unwrap();
        assert!(
            matches!(&openai, ProviderConfig::Openai { api_key_secret: Some(s), .. } if s == "OPENAI_API_KEY")
        );
        set_provider_field(&mut openai, "model", "llama3").unwrap();
        set_provider_field(&mut openai, "base_url", "http://127.0.0.1:11434/v1").unwrap();
        set_provider_field(&mut openai, "api_key_secret", "").unwrap();
        assert_eq!(
            openai,
            ProviderConfig::Openai {
                base_url: "http://127.0.0.1:11434/v1".into(),
                model: "llama3".into(),
                api_key_secret: None,
                price: None
            }
        );
        let anthropic = switch_provider(&openai, "anthropic").unwrap();
        assert!(
            matches!(&anthropic, ProviderConfig::Anthropic { model, base_url, .. } if model == "llama3" && base_url == "https://api.anthropic.com")
        );
        assert!(switch_provider(&openai, "gemini")
            .unwrap_err()
            .contains("gemini"));
        let mut a = anthropic;
        assert!(set_provider_field(&mut a, "api_key_secret", "")
            .unwrap_err()
            .starts_with("api_key_secret"));
        assert!(set_provider_field(&mut a, "base_url", "ftp://x")
            .unwrap_err()
            .starts_with("base_url"));
        assert!(set_provider_field(&mut a, "model", " ")
            .unwrap_err()
            .starts_with("model"));
        let mut s = scripted;
        assert!(set_provider_field(&mut s, "model", "x").is_err());
    }

    #[test]
    fn policy_limits_parse_or_name_the_field() {
        let mut p = Policy::default();
        set_policy_field(&mut p, "max_iterations", "4").unwrap();
        set_policy_field(&mut p, "max_tool_calls", " 12 ").unwrap();
        set_policy_field(&mut p, "max_budget", "2.5").unwrap();
        set_policy_field(&mut p, "side_effect_ceiling", "reads").unwrap();
        assert_eq!(
            (
                p.max_iterations,
                p.max_tool_calls,
                p.max_budget,
                p.side_effect_ceiling
            ),
            (4, 12, Some(2.5), SideEffects::Reads)
        );
        set_policy_field(&mut p, "max_budget", "").unwrap();
        assert_eq!(p.max_budget, None);
        for (field, text) in [
            ("max_iterations", "0"),
            ("max_iterations", "x"),
            ("max_tool_calls", "1001"),
            ("max_budget", "-1"),
            ("side_effect_ceiling", "all"),
        ] {
            let err = set_policy_field(&mut p, field, text).unwrap_err();
            assert!(err.starts_with(field), "{err}");
        }
        assert_eq!(p.max_iterations, 4, "a refused value changes nothing");
    }
}
