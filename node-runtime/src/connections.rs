//! Connections: a workspace's named, configured ways to reach an outside
//! service, so a tool can use a credential the model never sees. A
//! connection names the secrets it needs; it never holds their values
//! (the server resolves them when a run starts, like provider keys).
//!
//! Kinds: `http` (a base URL, the hosts it may reach, an auth scheme and
//! default headers), `postgres` (a URL from a secret; queries run read-only),
//! `sqlite` (a file in the workspace's files directory, opened
//! read-only) and `mcp` (a Model Context Protocol server over stdio or
//! streamable HTTP, whose tools join the workspace's registry). Plain data, shared with the app's settings page; `validate`
//! names the field of a bad value.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an `http` connection proves who it is; the credential comes from
/// the named secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "scheme", rename_all = "snake_case", deny_unknown_fields)]
pub enum HttpAuth {
    /// `Authorization: Bearer <secret>`.
    Bearer { secret: String },
    /// `<header>: <secret>`, e.g. `X-API-Key`.
    Header { header: String, secret: String },
    /// `Authorization: Basic base64(<username>:<secret>)`.
    Basic { username: String, secret: String },
    /// `?<param>=<secret>` added to the URL.
    Query { param: String, secret: String },
}

impl HttpAuth {
    pub fn secret(&self) -> &str {
        match self {
            Self::Bearer { secret }
            | Self::Header { secret, .. }
            | Self::Basic { secret, .. }
            | Self::Query { secret, .. } => secret,
        }
    }
}

/// An authenticated HTTP API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConnection {
    /// `http(s)://host[:port][/path]`; a call's URL may be relative to it.
    pub base_url: String,
    /// `host` or `host:port` entries this connection may reach (its base
    /// URL's host is always one). They may be private or loopback: the
    /// connection is what allows them.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    #[serde(default)]
    pub auth: Option<HttpAuth>,
    /// Sent with every request (a call's own headers win).
    #[serde(default)]
    pub default_headers: BTreeMap<String, String>,
}

/// [`HttpConnection`]'s OpenAPI schema: the same fields, without the
/// `additionalProperties: false` utoipa writes for `deny_unknown_fields`,
/// which would refuse the `kind` that [`ConnectionConfig`]'s schema adds
/// beside them (`allOf`).
#[cfg(feature = "openapi")]
mod http_schema {
    use std::collections::BTreeMap;

    /// An authenticated HTTP API.
    #[derive(utoipa::ToSchema)]
    #[allow(dead_code)]
    pub struct HttpConnection {
        /// `http(s)://host[:port][/path]`; a call's URL may be relative to it.
        pub base_url: String,
        /// `host` or `host:port` entries this connection may reach (its base
        /// URL's host is always one).
        #[schema(required = false)]
        pub allowed_hosts: Vec<String>,
        #[schema(required = false)]
        pub auth: Option<super::HttpAuth>,
        /// Sent with every request (a call's own headers win).
        #[schema(required = false)]
        pub default_headers: BTreeMap<String, String>,
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for HttpConnection {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <http_schema::HttpConnection as utoipa::PartialSchema>::schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for HttpConnection {
    fn name() -> std::borrow::Cow<'static, str> {
        "HttpConnection".into()
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <http_schema::HttpConnection as utoipa::ToSchema>::schemas(schemas)
    }
}

/// How the server reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout. It starts without
    /// the server's environment: only `PATH`, `HOME`, `LANG` and `TMPDIR`
    /// are passed, plus `env` (variable name -> the secret holding its
    /// value). Its working directory is the workspace's files directory, or
    /// `cwd` inside it.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        cwd: Option<String>,
    },
    /// Streamable HTTP at `url`, through the same egress guard as
    /// `http_request` (the URL's own host is allowed even when internal,
    /// as for an `http` connection); `auth` is `bearer` or `header`.
    Http {
        url: String,
        #[serde(default)]
        auth: Option<HttpAuth>,
    },
}

impl McpTransport {
    /// The secrets this transport names.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Self::Stdio { env, .. } => env.values().map(String::as_str).collect(),
            Self::Http { auth, .. } => auth.iter().map(HttpAuth::secret).collect(),
        }
    }
}

/// A Model Context Protocol server: the fields of
/// [`ConnectionConfig::Mcp`] as one value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpConnection {
    pub transport: McpTransport,
    /// A call's deadline (default 30 000 ms).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl McpConnection {
    pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms.unwrap_or(Self::DEFAULT_TIMEOUT_MS)
    }
}

/// What a connection is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConnectionConfig {
    Http(HttpConnection),
    /// A Postgres database; the URL (with its password) is the secret.
    Postgres {
        url_secret: String,
    },
    /// A SQLite file, relative to the workspace's files directory.
    Sqlite {
        path: String,
    },
    /// A Model Context Protocol server; its tools join the workspace's
    /// registry.
    Mcp {
        transport: McpTransport,
        /// A call's deadline (default 30 000 ms); past it the call ends
        /// with `TIMEOUT` and the server is sent `notifications/cancelled`.
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
}

/// A bad value: the field's path and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

fn bad(path: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        path: path.into(),
        message: message.into(),
    }
}

/// A name of a connection, secret or header: 1-128 of `A-Z a-z 0-9 _ - .`.
pub fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The `host` or `host:port` of an http(s) URL, lower-cased.
pub fn url_host(url: &str) -> Option<(String, Option<u16>)> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return Some((format!("[{}]", host.to_ascii_lowercase()), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_ascii_lowercase(), Some(port.parse().ok()?))),
        None => Some((authority.to_ascii_lowercase(), None)),
    }
}

impl ConnectionConfig {
    /// An `mcp` connection's fields as one value.
    pub fn mcp(&self) -> Option<McpConnection> {
        match self {
            Self::Mcp {
                transport,
                timeout_ms,
            } => Some(McpConnection {
                transport: transport.clone(),
                timeout_ms: *timeout_ms,
            }),
            _ => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Self::Http(_) => "http",
            Self::Postgres { .. } => "postgres",
            Self::Sqlite { .. } => "sqlite",
            Self::Mcp { .. } => "mcp",
        }
    }

    /// The secrets this connection names.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Self::Http(h) => h.auth.iter().map(HttpAuth::secret).collect(),
            Self::Postgres { url_secret } => vec![url_secret],
            Self::Sqlite { .. } => Vec::new(),
            Self::Mcp { transport, .. } => transport.secrets(),
        }
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            Self::Http(h) => {
                if url_host(&h.base_url).is_none() {
                    return Err(bad(
                        "/config/base_url",
                        "an http:// or https:// URL with a host and no user info",
                    ));
                }
                for (i, host) in h.allowed_hosts.iter().enumerate() {
                    if url_host(&format!("http://{host}")).is_none() || host.contains('/') {
                        return Err(bad(
                            &format!("/config/allowed_hosts/{i}"),
                            "`host` or `host:port`",
                        ));
                    }
                }
                if let Some(auth) = &h.auth {
                    if !name_ok(auth.secret()) {
                        return Err(bad(
                            "/config/auth/secret",
                            "a secret name: 1-128 of A-Z a-z 0-9 _ - .",
                        ));
                    }
                    match auth {
                        HttpAuth::Header { header, .. } if !name_ok(header) => {
                            return Err(bad("/config/auth/header", "a header name"))
                        }
                        HttpAuth::Query { param, .. } if param.is_empty() || param.len() > 128 => {
                            return Err(bad("/config/auth/param", "a query parameter name"))
                        }
                        HttpAuth::Basic { username, .. } if username.contains(':') => {
                            return Err(bad("/config/auth/username", "a user name without `:`"))
                        }
                        _ => {}
                    }
                }
                for name in h.default_headers.keys() {
                    if !name_ok(name) || name.eq_ignore_ascii_case("host") {
                        return Err(bad(
                            &format!("/config/default_headers/{name}"),
                            "a header name (not Host)",
                        ));
                    }
                }
                Ok(())
            }
            Self::Postgres { url_secret } => {
                if name_ok(url_secret) {
                    Ok(())
                } else {
                    Err(bad(
                        "/config/url_secret",
                        "a secret name: 1-128 of A-Z a-z 0-9 _ - .",
                    ))
                }
            }
            Self::Sqlite { path } => {
                if relative_path_ok(path) {
                    Ok(())
                } else {
                    Err(bad(
                        "/config/path",
                        "a file path inside the workspace's files directory (relative, no `..`)",
                    ))
                }
            }
            Self::Mcp { .. } => match self.mcp() {
                Some(m) => validate_mcp(&m),
                None => Ok(()),
            },
        }
    }
}

/// Relative, without `..` or empty segments.
fn relative_path_ok(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.split(['/', '\\']).any(|p| p == ".." || p.is_empty())
}

fn validate_mcp(m: &McpConnection) -> Result<(), ConfigError> {
    const SECRET: &str = "a secret name: 1-128 of A-Z a-z 0-9 _ - .";
    if let Some(t) = m.timeout_ms {
        if !(100..=600_000).contains(&t) {
            return Err(bad("/config/timeout_ms", "100 to 600000 milliseconds"));
        }
    }
    match &m.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            if command.trim().is_empty() || command.len() > 1024 {
                return Err(bad(
                    "/config/transport/command",
                    "a program name or path (e.g. `npx`)",
                ));
            }
            if args.len() > 64 || args.iter().any(|a| a.len() > 4096) {
                return Err(bad(
                    "/config/transport/args",
                    "at most 64 arguments of at most 4096 bytes",
                ));
            }
            for (var, secret) in env {
                let var_ok = !var.is_empty()
                    && var.len() <= 128
                    && !var.starts_with(|c: char| c.is_ascii_digit())
                    && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !var_ok {
                    return Err(bad(
                        &format!("/config/transport/env/{var}"),
                        "an environment variable name: A-Z a-z 0-9 _, not starting with a digit",
                    ));
                }
                if !name_ok(secret) {
                    return Err(bad(&format!("/config/transport/env/{var}"), SECRET));
                }
            }
            if let Some(cwd) = cwd {
                if !relative_path_ok(cwd) {
                    return Err(bad(
                        "/config/transport/cwd",
                        "a directory inside the workspace's files directory (relative, no `..`)",
                    ));
                }
            }
            Ok(())
        }
        McpTransport::Http { url, auth } => {
            if url_host(url).is_none() {
                return Err(bad(
                    "/config/transport/url",
                    "an http:// or https:// URL with a host and no user info",
                ));
            }
            match auth {
                None => Ok(()),
                Some(a) if !name_ok(a.secret()) => {
                    Err(bad("/config/transport/auth/secret", SECRET))
                }
                Some(HttpAuth::Bearer { .. }) => Ok(()),
                Some(HttpAuth::Header { header, .. }) if name_ok(header) => Ok(()),
                Some(HttpAuth::Header { .. }) => {
                    Err(bad("/config/transport/auth/header", "a header name"))
                }
                Some(_) => Err(bad(
                    "/config/transport/auth/scheme",
                    "`bearer` or `header` for an MCP server",
                )),
            }
        }
    }
}

/// The `host` or `host:port` of an http(s) URL, as allow-lists hold it.
pub fn url_authority(url: &str) -> Option<String> {
    url_host(url).map(|(host, port)| match port {
        Some(p) => format!("{host}:{p}"),
        None => host,
    })
}

impl HttpConnection {
    /// The hosts this connection may reach: its base URL's and the listed
    /// ones.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts = self.allowed_hosts.clone();
        hosts.extend(url_authority(&self.base_url));
        hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> ConnectionConfig {
        serde_json::from_value(v).expect("parses")
    }

    #[test]
    fn each_kind_validates_or_names_the_field() {
        let http = parse(
            json!({"kind": "http", "base_url": "http://127.0.0.1:9000/api",
            "auth": {"scheme": "bearer", "secret": "API_TOKEN"}}),
        );
        assert_eq!(http.validate(), Ok(()));
        assert_eq!(http.secrets(), ["API_TOKEN"]);
        let ConnectionConfig::Http(h) = &http else {
            unreachable!()
        };
        assert_eq!(h.hosts(), ["127.0.0.1:9000"]);
        for (v, path) in [
            (
                json!({"kind": "http", "base_url": "ftp://x"}),
                "/config/base_url",
            ),
            (
                json!({"kind": "http", "base_url": "http://u:p@x"}),
                "/config/base_url",
            ),
            (
                json!({"kind": "http", "base_url": "http://x", "allowed_hosts": ["a/b"]}),
                "/config/allowed_hosts/0",
            ),
            (
                json!({"kind": "http", "base_url": "http://x", "auth": {"scheme": "header", "header": "", "secret": "S"}}),
                "/config/auth/header",
            ),
            (
                json!({"kind": "http", "base_url": "http://x", "default_headers": {"Host": "y"}}),
                "/config/default_headers/Host",
            ),
            (
                json!({"kind": "postgres", "url_secret": "a b"}),
                "/config/url_secret",
            ),
            (
                json!({"kind": "sqlite", "path": "../etc/passwd"}),
                "/config/path",
            ),
            (
                json!({"kind": "sqlite", "path": "/etc/passwd"}),
                "/config/path",
            ),
        ] {
            assert_eq!(
                parse(v.clone()).validate().map_err(|e| e.path),
                Err(path.to_string()),
                "{v}"
            );
        }
        assert_eq!(
            parse(json!({"kind": "sqlite", "path": "data/shop.db"})).validate(),
            Ok(())
        );
        assert!(serde_json::from_value::<ConnectionConfig>(
            json!({"kind": "http", "base_url": "http://x", "extra": 1})
        )
        .is_err());
    }

    #[test]
    fn mcp_connections_validate_or_name_the_field() {
        let stdio = parse(
            json!({"kind": "mcp", "transport": {"type": "stdio", "command": "npx",
            "args": ["-y", "pkg"], "env": {"API_KEY": "MY_KEY"}}}),
        );
        assert_eq!(stdio.validate(), Ok(()));
        assert_eq!(stdio.kind(), "mcp");
        assert_eq!(stdio.secrets(), ["MY_KEY"]);
        let http = parse(json!({"kind": "mcp", "transport": {"type": "http",
            "url": "http://127.0.0.1:3001/mcp", "auth": {"scheme": "bearer", "secret": "T"}}}));
        assert_eq!(http.validate(), Ok(()));
        assert_eq!(http.secrets(), ["T"]);
        for (v, path) in [
            (
                json!({"type": "stdio", "command": " "}),
                "/config/transport/command",
            ),
            (
                json!({"type": "stdio", "command": "x", "env": {"1X": "S"}}),
                "/config/transport/env/1X",
            ),
            (
                json!({"type": "stdio", "command": "x", "env": {"X": "a b"}}),
                "/config/transport/env/X",
            ),
            (
                json!({"type": "stdio", "command": "x", "cwd": "../up"}),
                "/config/transport/cwd",
            ),
            (
                json!({"type": "http", "url": "file:///x"}),
                "/config/transport/url",
            ),
            (
                json!({"type": "http", "url": "http://x", "auth": {"scheme": "query", "param": "k", "secret": "S"}}),
                "/config/transport/auth/scheme",
            ),
        ] {
            let c = parse(json!({"kind": "mcp", "transport": v.clone()}));
            assert_eq!(
                c.validate().map_err(|e| e.path),
                Err(path.to_string()),
                "{v}"
            );
        }
        let slow = parse(json!({"kind": "mcp", "timeout_ms": 10,
            "transport": {"type": "stdio", "command": "x"}}));
        assert_eq!(
            slow.validate().map_err(|e| e.path),
            Err("/config/timeout_ms".into())
        );
    }

    #[test]
    fn hosts_are_read_from_urls() {
        assert_eq!(
            url_host("https://API.example.com/v1"),
            Some(("api.example.com".into(), None))
        );
        assert_eq!(
            url_host("http://[::1]:8080/"),
            Some(("[::1]".into(), Some(8080)))
        );
        assert_eq!(url_host("http://x:notaport/"), None);
        assert_eq!(url_host("mailto:x"), None);
    }
}
