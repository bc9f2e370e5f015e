//! Connections: a workspace's named, configured ways to reach an outside
//! service, so a tool can use a credential the model never sees. A
//! connection names the secrets it needs; it never holds their values
//! (the server resolves them when a run starts, like provider keys).
//!
//! Kinds: `http` (a base URL, the hosts it may reach, an auth scheme and
//! default headers), `postgres` (a URL from a secret; queries run read-only)
//! and `sqlite` (a file in the workspace's files directory, opened
//! read-only). Plain data, shared with the app's settings page; `validate`
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Http(_) => "http",
            Self::Postgres { .. } => "postgres",
            Self::Sqlite { .. } => "sqlite",
        }
    }

    /// The secrets this connection names.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Self::Http(h) => h.auth.iter().map(HttpAuth::secret).collect(),
            Self::Postgres { url_secret } => vec![url_secret],
            Self::Sqlite { .. } => Vec::new(),
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
                let ok = !path.is_empty()
                    && !path.starts_with('/')
                    && !path.split(['/', '\\']).any(|p| p == ".." || p.is_empty());
                if ok {
                    Ok(())
                } else {
                    Err(bad(
                        "/config/path",
                        "a file path inside the workspace's files directory (relative, no `..`)",
                    ))
                }
            }
        }
    }
}

impl HttpConnection {
    /// The hosts this connection may reach: its base URL's and the listed
    /// ones.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts = self.allowed_hosts.clone();
        if let Some((host, port)) = url_host(&self.base_url) {
            hosts.push(match port {
                Some(p) => format!("{host}:{p}"),
                None => host,
            });
        }
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
