//! The Agent panel's model and policy settings: provider (with presets for
//! the OpenAI-compatible servers), connection fields, price override,
//! streaming, a "Test connection" button that asks the server to call the
//! provider with the caller's secrets, and the policy limits. Each field is
//! checked when it changes; a refused value is named and changes nothing.

use leptos::prelude::*;
use node_runtime::agent_config::ProviderConfig;
use node_runtime::graph::AgentNodeConfig;
use node_runtime::wire::ProviderTestResult;

use super::inspector::{agent_of, edit_agent};
use super::run_panel::Watched;
use crate::editor::agent::{self, PRESETS, PROVIDERS};
use crate::editor::model::Editor;

/// A checked change to an Agent node's config.
type AgentChange = Box<dyn FnOnce(&mut AgentNodeConfig) -> Result<(), String>>;

/// The connection fields of a provider: (label, field, value).
fn connection_fields(provider: &ProviderConfig) -> Vec<(&'static str, &'static str, String)> {
    let price = |p: &Option<node_runtime::pricing::Price>| {
        (
            p.map(|p| p.input_per_million.to_string())
                .unwrap_or_default(),
            p.map(|p| p.output_per_million.to_string())
                .unwrap_or_default(),
        )
    };
    let (mut fields, prices) = match provider {
        ProviderConfig::Scripted { .. } => return Vec::new(),
        ProviderConfig::Openai {
            base_url,
            model,
            api_key_secret,
            price: p,
            ..
        } => (
            vec![
                ("Base URL", "base_url", base_url.clone()),
                ("Model", "model", model.clone()),
                (
                    "API key secret (its name; empty for a local server)",
                    "api_key_secret",
                    api_key_secret.clone().unwrap_or_default(),
                ),
            ],
            price(p),
        ),
        ProviderConfig::Azure {
            endpoint,
            deployment,
            api_version,
            api_key_secret,
            model,
            price: p,
            ..
        } => (
            vec![
                ("Endpoint", "endpoint", endpoint.clone()),
                ("Deployment", "deployment", deployment.clone()),
                ("API version", "api_version", api_version.clone()),
                (
                    "API key secret (its name)",
                    "api_key_secret",
                    api_key_secret.clone(),
                ),
                (
                    "Model behind the deployment (for its price)",
                    "model",
                    model.clone().unwrap_or_default(),
                ),
            ],
            price(p),
        ),
        ProviderConfig::Anthropic {
            base_url,
            model,
            api_key_secret,
            price: p,
            ..
        } => (
            vec![
                ("Base URL", "base_url", base_url.clone()),
                ("Model", "model", model.clone()),
                (
                    "API key secret (its name)",
                    "api_key_secret",
                    api_key_secret.clone(),
                ),
            ],
            price(p),
        ),
    };
    fields.push((
        "Price per million input tokens (USD; empty: the shipped price)",
        "price_input",
        prices.0,
    ));
    fields.push((
        "Price per million output tokens (USD; empty: the shipped price)",
        "price_output",
        prices.1,
    ));
    fields
}

fn streams(provider: &ProviderConfig) -> Option<bool> {
    match provider {
        ProviderConfig::Scripted { .. } => None,
        ProviderConfig::Openai { stream, .. }
        | ProviderConfig::Azure { stream, .. }
        | ProviderConfig::Anthropic { stream, .. } => Some(*stream),
    }
}

/// The Agent node's provider, model and policy limits.
pub fn agent_settings(editor: RwSignal<Editor>, watched: Watched, id: String) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    let tested = RwSignal::new(None::<Result<ProviderTestResult, String>>);
    let testing = RwSignal::new(false);
    // Applies a checked change: refused values leave the document alone.
    let change = move |id: String, f: AgentChange| {
        let Some(mut next) = editor.with_untracked(|e| agent_of(e, &id)) else {
            return;
        };
        match f(&mut next) {
            Ok(()) => {
                problem.set(None);
                tested.set(None);
                edit_agent(editor, &id, |c| *c = next);
            }
            Err(e) => problem.set(Some(e)),
        }
    };
    let test_id = id.clone();
    let test = move |_| {
        let Some(config) = editor.with_untracked(|e| agent_of(e, &test_id)) else {
            return;
        };
        testing.set(true);
        tested.set(None);
        leptos::task::spawn_local(async move {
            let result = crate::api::test_provider(&config.provider)
                .await
                .map_err(|e| e.to_string());
            tested.set(Some(result));
            testing.set(false);
        });
    };
    let test_result = move || {
        tested.get().map(|r| match r {
            Ok(r) if r.ok => view! {
                <p class="ok" role="status" data-testid="provider-test" data-ok="true">"Connected: " {r.message}</p>
            }
            .into_any(),
            Ok(r) => view! {
                <p class="error" role="alert" data-testid="provider-test" data-ok="false">"Not connected: " {r.message}</p>
            }
            .into_any(),
            Err(e) => view! {
                <p class="error" role="alert" data-testid="provider-test" data-ok="false">{e}</p>
            }
            .into_any(),
        })
    };
    move || {
        let config = editor.with(|e| agent_of(e, &id))?;
        let kind = config.provider.kind();
        let provider_id = id.clone();
        let text_field = move |label: &'static str,
                               field: &'static str,
                               value: String,
                               id: String,
                               policy: bool| {
            view! {
                <label class="field">{label}
                    <input type="text" data-setting=field prop:value=value on:change=move |ev| {
                        let text = event_target_value(&ev);
                        if policy {
                            change(id.clone(), Box::new(move |c| agent::set_policy_field(&mut c.policy, field, &text)));
                        } else {
                            change(id.clone(), Box::new(move |c| agent::set_provider_field(&mut c.provider, field, &text)));
                        }
                    } />
                </label>
            }
        };
        let preset = (kind == "openai").then(|| {
            let current = agent::preset_of(&config.provider).unwrap_or("");
            let preset_id = id.clone();
            view! {
                <label class="field">"Preset"
                    <select data-setting="preset" on:change=move |ev| {
                        let preset = event_target_value(&ev);
                        if preset.is_empty() { return; }
                        change(preset_id.clone(), Box::new(move |c| {
                            c.provider = agent::apply_preset(&c.provider, &preset)?;
                            Ok(())
                        }));
                    }>
                        <option value="" selected=current.is_empty()>"Custom"</option>
                        {PRESETS.iter().map(|p| view! { <option value=p.id selected=p.id == current>{p.label}</option> }).collect_view()}
                    </select>
                </label>
            }
        });
        let connection = connection_fields(&config.provider)
            .into_iter()
            .map(|(label, field, value)| text_field(label, field, value, id.clone(), false))
            .collect_view();
        let stream = streams(&config.provider).map(|on| {
            let stream_id = id.clone();
            view! {
                <label class="check">
                    <input type="checkbox" data-setting="stream" prop:checked=on on:change=move |ev| {
                        let on = event_target_checked(&ev).to_string();
                        change(stream_id.clone(), Box::new(move |c| agent::set_provider_field(&mut c.provider, "stream", &on)));
                    } />
                    " Stream answers (text appears in the timeline as it is written)"
                </label>
            }
        });
        let param_field = |label: &'static str, field: &'static str, value: String, id: String| {
            view! {
                <label class="field">{label}
                    <input type="text" data-setting=field prop:value=value on:change=move |ev| {
                        let text = event_target_value(&ev);
                        change(id.clone(), Box::new(move |c| agent::set_param_field(&mut c.params, field, &text)));
                    } />
                </label>
            }
        };
        let params = view! {
            {param_field("Temperature (empty: the provider's default)", "temperature", config.params.temperature.map(|t| t.to_string()).unwrap_or_default(), id.clone())}
            {param_field("Max tokens per answer", "max_tokens", config.params.max_tokens.to_string(), id.clone())}
        };
        let script = match &config.provider {
            ProviderConfig::Scripted { script } => Some(script_editor(script, id.clone(), change)),
            _ => None,
        };
        let from_run = recorded_script(watched, &id).map(|recorded| {
            let use_id = id.clone();
            let turns = recorded.turns.len();
            view! {
                <div class="row">
                    <button type="button" data-testid="use-run-script" title="The model's answers in the run shown below become this node's script: the workflow then runs offline and gives the same answers"
                        on:click=move |_| {
                            let script = recorded.to_value();
                            change(use_id.clone(), Box::new(move |c| {
                                c.provider = ProviderConfig::Scripted { script: script.into() };
                                Ok(())
                            }));
                        }>"Use this run's answers as the script"</button>
                    <span class="muted">{format!("{turns} answer(s) recorded")}</span>
                </div>
            }
        });
        let ceiling_id = id.clone();
        let ceiling = format!("{:?}", config.policy.side_effect_ceiling).to_lowercase();
        Some(view! {
            <h3>"Model"</h3>
            <label class="field">"Provider"
                <select data-setting="provider" on:change=move |ev| {
                    let kind = event_target_value(&ev);
                    change(provider_id.clone(), Box::new(move |c| {
                        c.provider = agent::switch_provider(&c.provider, &kind)?;
                        Ok(())
                    }));
                }>
                    {PROVIDERS.iter().map(|(k, label)| view! { <option value=*k selected=*k == kind>{*label}</option> }).collect_view()}
                </select>
            </label>
            {preset}
            {connection}
            {stream}
            {params}
            {script}
            {from_run}
            <div class="row">
                <button type="button" data-testid="test-connection" disabled=move || testing.get() on:click=test.clone()>
                    {move || if testing.get() { "Testing…" } else { "Test connection" }}
                </button>
            </div>
            {test_result}
            <h3>"Policy"</h3>
            {text_field("Max iterations", "max_iterations", config.policy.max_iterations.to_string(), id.clone(), true)}
            {text_field("Max tool calls", "max_tool_calls", config.policy.max_tool_calls.to_string(), id.clone(), true)}
            {text_field("Calls of one turn run at once (1-64)", "max_parallel_calls", config.policy.max_parallel_calls.to_string(), id.clone(), true)}
            {text_field("Budget (USD for real providers; empty: none)", "max_budget", config.policy.max_budget.map(|b| b.to_string()).unwrap_or_default(), id.clone(), true)}
            <label class="field">"Side-effect ceiling"
                <select data-setting="side_effect_ceiling" on:change=move |ev| {
                    let v = event_target_value(&ev);
                    change(ceiling_id.clone(), Box::new(move |c| agent::set_policy_field(&mut c.policy, "side_effect_ceiling", &v)));
                }>
                    {["none", "reads", "writes"].iter().map(|v| view! { <option value=*v selected=*v == ceiling>{*v}</option> }).collect_view()}
                </select>
            </label>
            {move || problem.get().map(|p| view! { <p class="error" role="alert" data-testid="setting-error">{p}</p> })}
        })
    }
}

/// The turns editor of a scripted provider: the script as JSON, checked
/// when it changes (a refused script is named and changes nothing), and an
/// example to start from.
fn script_editor(
    script: &serde_json::Value,
    id: String,
    change: impl Fn(String, AgentChange) + Copy + 'static,
) -> impl IntoView {
    let text = serde_json::to_string_pretty(script).unwrap_or_default();
    let (edit_id, example_id) = (id.clone(), id);
    view! {
        <label class="field">"Script: the model's answers, turn by turn (JSON: "
            <code>"{\"turns\": [{\"tool_calls\": [...]}, {\"text\": ...}]}"</code>")"
            <textarea data-testid="script-turns" rows="8" spellcheck="false" prop:value=text on:change=move |ev| {
                let text = event_target_value(&ev);
                change(edit_id.clone(), Box::new(move |c| agent::set_script(&mut c.provider, &text)));
            }></textarea>
        </label>
        <button type="button" data-testid="script-example" on:click=move |_| {
            change(example_id.clone(), Box::new(|c| {
                c.provider = ProviderConfig::Scripted { script: node_runtime::script::Script::example().into() };
                Ok(())
            }));
        }>"Start from an example"</button>
    }
}

/// The script of node `id`'s model answers in the watched run, if it has
/// finished and recorded them.
fn recorded_script(watched: Watched, id: &str) -> Option<node_runtime::script::Script> {
    let bundle = watched.with(|w| {
        w.as_ref()
            .and_then(|(_, l)| l.results.as_ref())
            .and_then(|r| r.get(id))
            .map(|n| n.bundle.clone())
    })?;
    let bundle: node_runtime::replay_bundle::ReplayBundle = serde_json::from_value(bundle).ok()?;
    (!bundle.exchanges.is_empty()).then(|| node_runtime::script::Script::from_bundle(&bundle))
}
