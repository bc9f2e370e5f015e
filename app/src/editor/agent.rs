//! The Agent panel's forms: provider and model, and the policy limits,
//! edited as text and checked before they reach the document.

use node_runtime::agent_config::{ModelParams, ProviderConfig};
use node_runtime::policy::{check_parallel_calls, Policy};
use node_runtime::tool_spec::SideEffects;
use serde_json::json;

/// The provider kinds the panel offers.
pub const PROVIDERS: [(&str, &str); 4] = [
    ("scripted", "Scripted (offline)"),
    ("openai", "OpenAI-compatible"),
    ("azure", "Azure OpenAI"),
    ("anthropic", "Anthropic"),
];

/// A preset of the OpenAI-compatible provider: what it fills in.
pub struct Preset {
    pub id: &'static str,
    pub label: &'static str,
    pub base_url: &'static str,
    pub model: &'static str,
    /// The usual secret name; none for a local server without a key.
    pub secret: Option<&'static str>,
}

/// The OpenAI-compatible servers people use, with their usual base URL,
/// a common model and secret name. Local servers need their host
/// allow-listed on the server (`GLASSBOX_HTTP_ALLOW_HOSTS`).
pub const PRESETS: [Preset; 6] = [
    Preset {
        id: "openai",
        label: "OpenAI",
        base_url: "https://api.openai.com/v1",
        model: "gpt-4o-mini",
        secret: Some("OPENAI_API_KEY"),
    },
    Preset {
        id: "ollama",
        label: "Ollama (local)",
        base_url: "http://127.0.0.1:11434/v1",
        model: "llama3.1",
        secret: None,
    },
    Preset {
        id: "vllm",
        label: "vLLM (local)",
        base_url: "http://127.0.0.1:8000/v1",
        model: "meta-llama/Llama-3.1-8B-Instruct",
        secret: None,
    },
    Preset {
        id: "lmstudio",
        label: "LM Studio (local)",
        base_url: "http://127.0.0.1:1234/v1",
        model: "qwen2.5-7b-instruct",
        secret: None,
    },
    Preset {
        id: "openrouter",
        label: "OpenRouter",
        base_url: "https://openrouter.ai/api/v1",
        model: "openai/gpt-4o-mini",
        secret: Some("OPENROUTER_API_KEY"),
    },
    Preset {
        id: "groq",
        label: "Groq",
        base_url: "https://api.groq.com/openai/v1",
        model: "llama-3.3-70b-versatile",
        secret: Some("GROQ_API_KEY"),
    },
];

/// The OpenAI-compatible provider a preset describes, keeping the node's
/// price override and streaming choice.
pub fn apply_preset(current: &ProviderConfig, preset: &str) -> Result<ProviderConfig, String> {
    let p = PRESETS
        .iter()
        .find(|p| p.id == preset)
        .ok_or_else(|| format!("`{preset}` is not a preset"))?;
    let (price, stream) = match current {
        ProviderConfig::Openai { price, stream, .. } => (*price, *stream),
        _ => (None, false),
    };
    Ok(ProviderConfig::Openai {
        base_url: p.base_url.into(),
        model: p.model.into(),
        api_key_secret: p.secret.map(str::to_string),
        price,
        stream,
    })
}

/// The preset an OpenAI-compatible config matches by base URL, if any.
pub fn preset_of(current: &ProviderConfig) -> Option<&'static str> {
    let ProviderConfig::Openai { base_url, .. } = current else {
        return None;
    };
    PRESETS
        .iter()
        .find(|p| p.base_url == base_url.trim_end_matches('/'))
        .map(|p| p.id)
}

/// The provider of `kind`, keeping the model name between the HTTP
/// providers; each starts with its usual base URL and secret name.
pub fn switch_provider(current: &ProviderConfig, kind: &str) -> Result<ProviderConfig, String> {
    if current.kind() == kind {
        return Ok(current.clone());
    }
    // The model name carries over between the HTTP providers.
    let model = match current {
        ProviderConfig::Openai { model, .. } | ProviderConfig::Anthropic { model, .. } => {
            Some(model.clone())
        }
        ProviderConfig::Azure { model, .. } => model.clone(),
        ProviderConfig::Scripted { .. } => None,
    };
    Ok(match kind {
        "scripted" => ProviderConfig::Scripted {
            script: json!({"turns": [{"text": "Scripted answer."}]}).into(),
        },
        "openai" => ProviderConfig::Openai {
            base_url: "https://api.openai.com/v1".into(),
            model: model.unwrap_or_else(|| "gpt-4o-mini".into()),
            api_key_secret: Some("OPENAI_API_KEY".into()),
            price: None,
            stream: false,
        },
        "azure" => ProviderConfig::Azure {
            endpoint: "https://YOUR-RESOURCE.openai.azure.com".into(),
            deployment: "gpt-4o-mini".into(),
            api_version: node_runtime::agent_config::AZURE_API_VERSION.into(),
            api_key_secret: "AZURE_OPENAI_API_KEY".into(),
            model: model.or_else(|| Some("gpt-4o-mini".into())),
            price: None,
            stream: false,
        },
        "anthropic" => ProviderConfig::Anthropic {
            base_url: "https://api.anthropic.com".into(),
            model: model.unwrap_or_else(|| "claude-3-5-haiku-latest".into()),
            api_key_secret: "ANTHROPIC_API_KEY".into(),
            price: None,
            stream: false,
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

fn url_field(field: &str, text: &str) -> Result<String, String> {
    if !(text.starts_with("http://") || text.starts_with("https://")) || text.len() < 10 {
        return Err(format!("{field}: an http:// or https:// URL"));
    }
    Ok(text.to_string())
}

/// A deployment or API version: what Azure accepts in its URL.
fn segment_field(field: &str, text: &str) -> Result<String, String> {
    let ok = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(text.to_string())
    } else {
        Err(format!("{field}: letters, digits, `.`, `_` or `-`"))
    }
}

/// A price per million tokens; empty clears the override.
fn price_field(field: &str, text: &str) -> Result<Option<f64>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0)
        .map(Some)
        .ok_or_else(|| {
            format!("{field}: US dollars per million tokens, 0 or more (empty: the shipped price)")
        })
}

/// Sets one setting of an HTTP provider from its text (`stream` takes
/// `true`/`false`); the error names the field.
pub fn set_provider_field(
    provider: &mut ProviderConfig,
    field: &str,
    text: &str,
) -> Result<(), String> {
    use node_runtime::pricing::Price;
    let text = text.trim();
    if matches!(provider, ProviderConfig::Scripted { .. }) {
        return Err("the scripted provider has no connection settings".into());
    }
    match field {
        "price_input" | "price_output" => {
            let value = price_field(field, text)?;
            let price = match provider {
                ProviderConfig::Openai { price, .. }
                | ProviderConfig::Azure { price, .. }
                | ProviderConfig::Anthropic { price, .. } => price,
                ProviderConfig::Scripted { .. } => {
                    return Err("the scripted provider has no connection settings".into())
                }
            };
            let mut next = price.unwrap_or(Price::new(0.0, 0.0));
            let other_set = if field == "price_input" {
                next.input_per_million = value.unwrap_or(0.0);
                price.is_some_and(|p| p.output_per_million != 0.0)
            } else {
                next.output_per_million = value.unwrap_or(0.0);
                price.is_some_and(|p| p.input_per_million != 0.0)
            };
            *price = (value.is_some() || other_set).then_some(next);
            return Ok(());
        }
        "stream" => {
            let on = text == "true";
            match provider {
                ProviderConfig::Openai { stream, .. }
                | ProviderConfig::Azure { stream, .. }
                | ProviderConfig::Anthropic { stream, .. } => *stream = on,
                ProviderConfig::Scripted { .. } => {
                    return Err("the scripted provider has no connection settings".into())
                }
            }
            return Ok(());
        }
        _ => {}
    }
    match (provider, field) {
        (
            ProviderConfig::Openai { base_url, .. } | ProviderConfig::Anthropic { base_url, .. },
            "base_url",
        ) => *base_url = url_field(field, text)?,
        (ProviderConfig::Azure { endpoint, .. }, "endpoint") => *endpoint = url_field(field, text)?,
        (
            ProviderConfig::Openai { model, .. } | ProviderConfig::Anthropic { model, .. },
            "model",
        ) => {
            if text.is_empty() {
                return Err("model: a model name is needed".into());
            }
            *model = text.to_string();
        }
        (ProviderConfig::Azure { model, .. }, "model") => {
            *model = (!text.is_empty()).then(|| text.to_string());
        }
        (ProviderConfig::Azure { deployment, .. }, "deployment") => {
            *deployment = segment_field(field, text)?
        }
        (ProviderConfig::Azure { api_version, .. }, "api_version") => {
            *api_version = segment_field(field, text)?
        }
        (ProviderConfig::Openai { api_key_secret, .. }, "api_key_secret") => {
            if !text.is_empty() && !secret_name_ok(text) {
                return Err(
                    "api_key_secret: 1-128 of A-Z a-z 0-9 _ - . (empty for a local server)".into(),
                );
            }
            *api_key_secret = (!text.is_empty()).then(|| text.to_string());
        }
        (
            ProviderConfig::Anthropic { api_key_secret, .. }
            | ProviderConfig::Azure { api_key_secret, .. },
            "api_key_secret",
        ) => {
            if !secret_name_ok(text) {
                return Err("api_key_secret: 1-128 of A-Z a-z 0-9 _ - .".into());
            }
            *api_key_secret = text.to_string();
        }
        (_, other) => return Err(format!("{other}: not a setting of this provider")),
    }
    Ok(())
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
        "max_parallel_calls" => {
            policy.max_parallel_calls = check_parallel_calls(text.parse::<u32>().unwrap_or(0))?
        }
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

/// Sets a model parameter (`temperature`: empty for the provider's own,
/// else 0 to 2; `max_tokens`: 1 to 1,000,000) from its text.
pub fn set_param_field(params: &mut ModelParams, field: &str, text: &str) -> Result<(), String> {
    let text = text.trim();
    match field {
        "temperature" => {
            params.temperature = if text.is_empty() {
                None
            } else {
                Some(
                    text.parse::<f64>()
                        .ok()
                        .filter(|t| (0.0..=2.0).contains(t))
                        .ok_or(
                            "temperature: a number from 0 to 2 (empty: the provider's default)",
                        )?,
                )
            }
        }
        "max_tokens" => {
            params.max_tokens = text
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=1_000_000).contains(n))
                .ok_or("max_tokens: a whole number from 1 to 1000000")?
        }
        other => return Err(format!("{other}: not a model parameter")),
    }
    Ok(())
}

/// The scripted provider's script from the turns editor's text: JSON, and
/// a script the provider accepts; the error says what is wrong.
pub fn set_script(provider: &mut ProviderConfig, text: &str) -> Result<(), String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("Script: not valid JSON ({e})"))?;
    node_runtime::script::Script::parse(&value)?;
    match provider {
        ProviderConfig::Scripted { script } => {
            *script = value.into();
            Ok(())
        }
        _ => Err("Script: only the scripted provider plays a script".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_switch_with_their_defaults_and_keep_what_carries_over() {
        let scripted = ProviderConfig::Scripted {
            script: json!({"turns": []}).into(),
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
                price: None,
                stream: false,
            }
        );
        let anthropic = switch_provider(&openai, "anthropic").unwrap();
        assert!(
            matches!(&anthropic, ProviderConfig::Anthropic { model, base_url, .. } if model == "llama3" && base_url == "https://api.anthropic.com")
        );
        let mut azure = switch_provider(&openai, "azure").unwrap();
        set_provider_field(&mut azure, "endpoint", "https://acme.openai.azure.com").unwrap();
        set_provider_field(&mut azure, "deployment", "prod-4o").unwrap();
        assert!(set_provider_field(&mut azure, "deployment", "a/b")
            .unwrap_err()
            .starts_with("deployment"));
        set_provider_field(&mut azure, "price_input", "2.5").unwrap();
        set_provider_field(&mut azure, "stream", "true").unwrap();
        assert!(
            matches!(&azure, ProviderConfig::Azure { deployment, price: Some(p), stream: true, .. }
            if deployment == "prod-4o" && p.input_per_million == 2.5 && p.output_per_million == 0.0)
        );
        set_provider_field(&mut azure, "price_input", "").unwrap();
        assert!(matches!(&azure, ProviderConfig::Azure { price: None, .. }));
        assert!(set_provider_field(&mut azure, "price_output", "-1")
            .unwrap_err()
            .starts_with("price_output"));
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
    fn presets_fill_the_openai_compatible_provider() {
        let scripted = ProviderConfig::Scripted {
            script: json!({"turns": []}).into(),
        };
        let ollama = apply_preset(&scripted, "ollama").unwrap();
        assert_eq!(preset_of(&ollama), Some("ollama"));
        assert!(
            matches!(&ollama, ProviderConfig::Openai { api_key_secret: None, base_url, .. } if base_url.contains("11434"))
        );
        let groq = apply_preset(&ollama, "groq").unwrap();
        assert!(
            matches!(&groq, ProviderConfig::Openai { api_key_secret: Some(s), .. } if s == "GROQ_API_KEY")
        );
        assert!(apply_preset(&groq, "nope").is_err());
        for p in PRESETS {
            let config = apply_preset(&scripted, p.id).unwrap();
            assert_eq!(preset_of(&config), Some(p.id));
        }
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
            ("max_parallel_calls", "0"),
            ("max_parallel_calls", "65"),
            ("max_budget", "-1"),
            ("side_effect_ceiling", "all"),
        ] {
            let err = set_policy_field(&mut p, field, text).unwrap_err();
            assert!(err.starts_with(field), "{err}");
        }
        assert_eq!(p.max_iterations, 4, "a refused value changes nothing");
    }
}

#[cfg(test)]
mod param_tests {
    use super::*;

    #[test]
    fn params_and_scripts_are_checked() {
        let mut p = ModelParams::default();
        set_param_field(&mut p, "temperature", "0.2").expect("temperature");
        assert_eq!(p.temperature, Some(0.2));
        set_param_field(&mut p, "temperature", "").expect("cleared");
        assert_eq!(p.temperature, None);
        assert!(set_param_field(&mut p, "temperature", "3").is_err());
        set_param_field(&mut p, "max_tokens", "256").expect("max_tokens");
        assert_eq!(p.max_tokens, 256);
        assert!(set_param_field(&mut p, "max_tokens", "0").is_err());

        let mut scripted = switch_provider(
            &ProviderConfig::Scripted {
                script: json!({}).into(),
            },
            "scripted",
        )
        .expect("scripted");
        set_script(&mut scripted, r#"{"turns": [{"text": "hi"}]}"#).expect("script");
        assert!(set_script(&mut scripted, "{oops")
            .expect_err("json")
            .contains("not valid JSON"));
        assert!(set_script(&mut scripted, r#"{"turns": [{"txt": "hi"}]}"#)
            .expect_err("field")
            .contains("txt"));
        let mut openai = switch_provider(&scripted, "openai").expect("openai");
        assert!(set_script(&mut openai, r#"{"turns": [{"text": "hi"}]}"#).is_err());
    }
}
