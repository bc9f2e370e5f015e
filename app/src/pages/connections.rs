//! Settings -> Connections: the workspace's named ways to reach an API or
//! a database (`node_runtime::connections`). A connection names the secret
//! it uses; its value is set under Secrets and never shown here. Each row
//! has a Test button (the server uses the connection once and says how it
//! went); an MCP server's row shows what it said at its last refresh (name,
//! version, protocol, tools) and a Refresh button.

use leptos::prelude::*;
use node_runtime::connections::{ConnectionConfig, HttpAuth, HttpConnection, McpTransport};

use crate::api;

/// The auth schemes the form offers.
const SCHEMES: [(&str, &str); 5] = [
    ("none", "No auth"),
    ("bearer", "Bearer token"),
    ("header", "Custom header"),
    ("basic", "Basic (user + password)"),
    ("query", "Query parameter"),
];

/// The form's fields, as typed.
#[derive(Clone, Default)]
struct Form {
    kind: String,
    base_url: String,
    allowed_hosts: String,
    scheme: String,
    secret: String,
    /// The header name, query parameter or user name the scheme needs.
    extra: String,
    url_secret: String,
    path: String,
    /// MCP: `stdio` or `http`.
    transport: String,
    command: String,
    /// MCP stdio arguments, space-separated.
    args: String,
    /// MCP stdio environment: `VAR=SECRET_NAME, ...`.
    env: String,
    /// MCP over HTTP: the endpoint.
    url: String,
}

impl Form {
    /// The config the form describes; the server checks each field.
    fn config(&self) -> ConnectionConfig {
        let text = |s: &str| s.trim().to_string();
        match self.kind.as_str() {
            "postgres" => ConnectionConfig::Postgres {
                url_secret: text(&self.url_secret),
            },
            "sqlite" => ConnectionConfig::Sqlite {
                path: text(&self.path),
            },
            "mcp" => ConnectionConfig::Mcp {
                transport: if self.transport == "http" {
                    let secret = text(&self.secret);
                    McpTransport::Http {
                        url: text(&self.url),
                        auth: (!secret.is_empty()).then_some(HttpAuth::Bearer { secret }),
                    }
                } else {
                    McpTransport::Stdio {
                        command: text(&self.command),
                        args: self.args.split_whitespace().map(str::to_string).collect(),
                        env: self
                            .env
                            .split(',')
                            .filter_map(|pair| pair.split_once('='))
                            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                            .collect(),
                        cwd: None,
                    }
                },
                timeout_ms: None,
            },
            _ => {
                let secret = text(&self.secret);
                let extra = text(&self.extra);
                let auth = match self.scheme.as_str() {
                    "bearer" => Some(HttpAuth::Bearer { secret }),
                    "header" => Some(HttpAuth::Header {
                        header: extra,
                        secret,
                    }),
                    "basic" => Some(HttpAuth::Basic {
                        username: extra,
                        secret,
                    }),
                    "query" => Some(HttpAuth::Query {
                        param: extra,
                        secret,
                    }),
                    _ => None,
                };
                ConnectionConfig::Http(HttpConnection {
                    base_url: text(&self.base_url),
                    allowed_hosts: self
                        .allowed_hosts
                        .split(',')
                        .map(str::trim)
                        .filter(|h| !h.is_empty())
                        .map(str::to_string)
                        .collect(),
                    auth,
                    default_headers: Default::default(),
                })
            }
        }
    }
}

#[component]
pub fn Connections() -> impl IntoView {
    let list = LocalResource::new(api::list_connections);
    let name = RwSignal::new(String::new());
    let form = RwSignal::new(Form {
        kind: "http".into(),
        scheme: "bearer".into(),
        transport: "stdio".into(),
        ..Form::default()
    });
    let status = RwSignal::new(None::<(bool, String)>);
    let tests = RwSignal::new(Vec::<(String, bool, String)>::new());
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let n = name.get_untracked().trim().to_string();
        let config = form.with_untracked(Form::config);
        let is_mcp = matches!(config, ConnectionConfig::Mcp { .. });
        leptos::task::spawn_local(async move {
            match api::create_connection(&n, &config).await {
                Ok(_) => {
                    name.set(String::new());
                    list.refetch();
                    if !is_mcp {
                        status.set(Some((true, format!("Added {n}."))));
                        return;
                    }
                    // An MCP server's tools: listed now (it may take a
                    // moment to start), then shown in its row.
                    status.set(Some((
                        true,
                        format!("Added {n}; starting its server and listing its tools…"),
                    )));
                    let (ok, message) = match api::refresh_connection(&n).await {
                        Ok(r) => (r.ok, r.message),
                        Err(e) => (false, e.to_string()),
                    };
                    status.set(Some((ok, format!("{n}: {message}"))));
                    list.refetch();
                }
                Err(e) => status.set(Some((false, e.to_string()))),
            }
        });
    };
    let field = move |label: &'static str,
                      key: &'static str,
                      get: fn(&Form) -> String,
                      set: fn(&mut Form, String)| {
        view! {
            <label class="field">{label}
                <input type="text" data-connection-field=key prop:value=move || form.with(get)
                    on:input=move |ev| { let v = event_target_value(&ev); form.update(|f| set(f, v)); } />
            </label>
        }
    };
    let kind_fields = move || match form.with(|f| f.kind.clone()).as_str() {
        "postgres" => field(
            "URL secret (its name; the secret holds postgres://...)",
            "url_secret",
            |f| f.url_secret.clone(),
            |f, v| f.url_secret = v,
        )
        .into_any(),
        "sqlite" => field(
            "File (in the workspace's files directory)",
            "path",
            |f| f.path.clone(),
            |f, v| f.path = v,
        )
        .into_any(),
        "mcp" => {
            let transport = form.with(|f| f.transport.clone());
            let fields = if transport == "http" {
                view! {
                    {field("URL of its MCP endpoint", "url", |f| f.url.clone(), |f, v| f.url = v)}
                    {field("Bearer token secret (its name; optional)", "secret", |f| f.secret.clone(), |f, v| f.secret = v)}
                }
                .into_any()
            } else {
                view! {
                    {field("Command", "command", |f| f.command.clone(), |f, v| f.command = v)}
                    {field("Arguments (space-separated)", "args", |f| f.args.clone(), |f, v| f.args = v)}
                    {field("Environment from secrets (VAR=SECRET_NAME, comma-separated)", "env", |f| f.env.clone(), |f, v| f.env = v)}
                }
                .into_any()
            };
            view! {
                <label class="field">"Transport"
                    <select data-connection-field="transport" on:change=move |ev| { let v = event_target_value(&ev); form.update(|f| f.transport = v); }>
                        <option value="stdio" selected=transport == "stdio">"stdio (a program started by the server)"</option>
                        <option value="http" selected=transport == "http">"Streamable HTTP"</option>
                    </select>
                </label>
                {fields}
            }
            .into_any()
        }
        _ => {
            let scheme = form.with(|f| f.scheme.clone());
            let extra = match scheme.as_str() {
                "header" => Some("Header name"),
                "basic" => Some("User name (the secret is the password)"),
                "query" => Some("Query parameter"),
                _ => None,
            };
            view! {
                {field("Base URL", "base_url", |f| f.base_url.clone(), |f, v| f.base_url = v)}
                {field("Other hosts it may reach (comma-separated host or host:port)", "allowed_hosts", |f| f.allowed_hosts.clone(), |f, v| f.allowed_hosts = v)}
                <label class="field">"Auth"
                    <select data-connection-field="scheme" on:change=move |ev| { let v = event_target_value(&ev); form.update(|f| f.scheme = v); }>
                        {SCHEMES.iter().map(|(v, label)| view! { <option value=*v selected=*v == scheme>{*label}</option> }).collect_view()}
                    </select>
                </label>
                {(scheme != "none").then(|| field("Secret (its name)", "secret", |f| f.secret.clone(), |f, v| f.secret = v))}
                {extra.map(|label| field(label, "extra", |f| f.extra.clone(), |f, v| f.extra = v))}
            }
            .into_any()
        }
    };
    let test = move |n: String, mcp: bool| {
        leptos::task::spawn_local(async move {
            let answer = if mcp {
                api::refresh_connection(&n).await
            } else {
                api::test_connection(&n).await
            };
            let (ok, message) = match answer {
                Ok(r) => (r.ok, r.message),
                Err(e) => (false, e.to_string()),
            };
            tests.update(|t| {
                t.retain(|(name, _, _)| *name != n);
                t.push((n, ok, message));
            });
            if mcp {
                list.refetch();
            }
        });
    };
    view! {
        <h2>"Connections"</h2>
        <p class="muted">"APIs and databases the tools reach with a credential the model never sees: "
            <code>"http_request"</code>" with "<code>"connection"</code>", "<code>"sql_query"</code>" with its name. "
            "An MCP server's tools join the tool selector as "<code>"mcp.<connection>.<tool>"</code>"."</p>
        <form class="stack" on:submit=add data-testid="connection-form">
            <div class="row">
                <input type="text" placeholder="name" data-connection-field="name" prop:value=move || name.get()
                    on:input=move |ev| name.set(event_target_value(&ev)) />
                <select data-connection-field="kind" on:change=move |ev| { let v = event_target_value(&ev); form.update(|f| f.kind = v); }>
                    <option value="http" selected=true>"HTTP API"</option>
                    <option value="postgres">"Postgres (read-only)"</option>
                    <option value="sqlite">"SQLite file (read-only)"</option>
                    <option value="mcp">"MCP server (its tools)"</option>
                </select>
            </div>
            {kind_fields}
            <button type="submit" data-testid="connection-add">"Add connection"</button>
        </form>
        {move || status.get().map(|(ok, m)| view! {
            <p class=if ok { "notice" } else { "error" } role="status" data-testid="connection-status">{m}</p>
        })}
        <Suspense fallback=|| view! { <p class="muted">"Loading connections…"</p> }>
            {move || list.get().map(|r| match r {
                Ok(l) if l.is_empty() => view! { <p class="muted">"No connections yet."</p> }.into_any(),
                Ok(l) => view! {
                    <table class="secrets" data-testid="connection-list">
                        <thead><tr><th>"Name"</th><th>"Kind"</th><th>"Test"</th><th></th></tr></thead>
                        <tbody>
                            {l.into_iter().map(|c| {
                                let (for_test, for_delete, for_result) = (c.name.clone(), c.name.clone(), c.name.clone());
                                let is_mcp = c.kind == "mcp";
                                let server = c.mcp.as_ref().map(|m| format!(
                                    "{} {} · MCP {} · {} tools",
                                    m.server_name, m.server_version, m.protocol_version, m.tools.len()
                                ));
                                view! {
                                    <tr data-connection=c.name.clone()>
                                        <td><code>{c.name.clone()}</code></td>
                                        <td>{c.kind.clone()}
                                            {server.map(|s| view! { <div class="muted" data-testid="mcp-server">{s}</div> })}
                                        </td>
                                        <td>
                                            <button type="button" data-testid="connection-test" on:click=move |_| test(for_test.clone(), is_mcp)>
                                                {if is_mcp { "Refresh" } else { "Test" }}
                                            </button>
                                            {move || tests.with(|t| t.iter().find(|(n, _, _)| *n == for_result).map(|(_, ok, m)| view! {
                                                <span class=if *ok { "ok" } else { "error" } data-testid="connection-result" data-ok=ok.to_string()>{m.clone()}</span>
                                            }))}
                                        </td>
                                        <td><button type="button" data-testid="connection-delete" on:click=move |_| {
                                            let n = for_delete.clone();
                                            leptos::task::spawn_local(async move {
                                                match api::delete_connection(&n).await {
                                                    Ok(()) => { status.set(Some((true, format!("Removed {n}.")))); list.refetch(); }
                                                    Err(e) => status.set(Some((false, e.to_string()))),
                                                }
                                            });
                                        }>"Remove"</button></td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any(),
                Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Suspense>
    }
}
