//! `http_request@1.0.0`: one HTTP request, guarded against SSRF.
//!
//! GET and HEAD read; every other method writes (and so needs approval) and
//! carries `Idempotency-Key: <call_id>`.
//!
//! The guard: http and https only; the host is parsed by the WHATWG URL
//! rules (so `0x7f.1`, `2130706433`, `0177.0.0.1` and `127.1` are all seen as
//! 127.0.0.1); a name is resolved once and every address it resolves to must
//! be public; the request then connects to exactly the address that was
//! checked (no second lookup, no proxy); every redirect is checked again the
//! same way. Refused: loopback, unspecified, private, link-local (which
//! holds cloud metadata at 169.254.169.254), CGNAT, multicast, broadcast,
//! reserved and documentation ranges, unique-local IPv6, and IPv6 forms that
//! embed an IPv4 address (mapped, compatible, 6to4, NAT64) when the embedded
//! address is refused. A workspace's `http_allow_hosts` (`host` or
//! `host:port`) opens specific hosts.
//!
//! With `connection`, the call goes through one of the workspace's `http`
//! connections (`crate::connections`): the URL may be relative to the
//! connection's base URL, only the connection's hosts are reachable (and
//! they may be private: the connection allows them), its default headers
//! are added, and its credential is added after the input was validated
//! and recorded, so the model, the envelope, events and bundles see only
//! the connection's name. The credential's value is scrubbed from anything
//! the call returns.
//!
//! Clients are reused ([`client_for`]): one per checked address (a name's
//! pinned address, or one for literal addresses), so a call costs no TLS
//! setup or root-store load of its own. Credentials are never part of a
//! client: headers go on each request, and `Authorization`, `Cookie` and
//! `Proxy-Authorization` are dropped when a redirect leaves the origin.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::connections::HttpAuth;
use crate::error::{ErrorCode, ToolError};
use crate::secrets::SecretValue;
use crate::tool::context::HttpRoute;
use crate::tool::{Tool, ToolContext};
use crate::tool_spec::{SideEffects, ToolCategory, ToolMetadata, ToolSpec};

/// Largest response body read; the rest is cut and `body_truncated` set.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
const MAX_REDIRECTS: usize = 5;
const DEFAULT_TIMEOUT_MS: u64 = 15_000;

pub struct HttpRequest;

#[derive(Debug, Deserialize)]
pub struct HttpInput {
    pub url: String,
    /// The name of an `http` connection of the workspace.
    #[serde(default)]
    pub connection: Option<String>,
    #[serde(default = "default_method")]
    pub method: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

fn default_method() -> String {
    "GET".into()
}

fn is_read_method(method: &str) -> bool {
    matches!(method.to_ascii_uppercase().as_str(), "GET" | "HEAD")
}

impl Tool for HttpRequest {
    type Input = HttpInput;
    type Output = Value;

    fn spec(&self) -> ToolSpec {
        let mut metadata = ToolMetadata::new(ToolCategory::Api);
        metadata.side_effects = SideEffects::Writes;
        metadata.timeout_ms = 30_000;
        metadata.effect_description =
            Some("Sends an HTTP request that may change data on the remote server.".into());
        ToolSpec {
            name: "http_request".into(),
            version: "1.0.0".into(),
            description: "Makes one HTTP request to a public http(s) URL, or through a named connection of the workspace (its credential is added for you; the URL may be relative to the connection's base URL). GET and HEAD only read; other methods write and need approval.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "minLength": 1, "maxLength": 8192},
                    "connection": {"type": "string", "minLength": 1, "maxLength": 128},
                    "method": {"type": "string", "enum": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]},
                    "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                    "body": {},
                    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 120000}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
            output_schema: json!({
                "type": "object",
                "properties": {
                    "status": {"type": "integer"},
                    "headers": {"type": "object"},
                    "body": {},
                    "body_truncated": {"type": "boolean"},
                    "final_url": {"type": "string"}
                },
                "required": ["status", "headers", "body", "body_truncated", "final_url"]
            }),
            metadata,
        }
    }

    fn side_effects_for(&self, input: &Value) -> Option<SideEffects> {
        let method = input.get("method").and_then(Value::as_str).unwrap_or("GET");
        Some(if is_read_method(method) {
            SideEffects::Reads
        } else {
            SideEffects::Writes
        })
    }

    async fn execute(&self, input: HttpInput, ctx: &ToolContext) -> Result<Value, ToolError> {
        request(input, ctx).await
    }
}

fn denied(reason: &str, message: String, extra: Value) -> ToolError {
    let mut details = json!({ "reason": reason });
    if let (Some(d), Value::Object(extra)) = (details.as_object_mut(), extra) {
        d.extend(extra);
    }
    ToolError::policy_denied(message).with_details(details)
}

/// Why an address may not be reached, or `None` when it is public.
pub fn forbidden_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if a == 0 {
        Some("unspecified (0.0.0.0/8)")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local (includes cloud metadata 169.254.169.254)")
    } else if a == 100 && (64..128).contains(&b) {
        Some("carrier-grade NAT (100.64.0.0/10)")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else if a >= 240 {
        Some("reserved (240.0.0.0/4)")
    } else if matches!(
        (a, b, c),
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113)
    ) {
        Some("special-purpose or documentation range")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("benchmarking range (198.18.0.0/15)")
    } else if (a, b, c) == (192, 88, 99) {
        Some("6to4 relay anycast (192.88.99.0/24, deprecated)")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    if ip.is_loopback() {
        return Some("loopback");
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4).map(|_| "IPv4-mapped IPv6 of a refused address");
    }
    // IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks).
    if seg[..6].iter().all(|s| *s == 0) {
        return Some("IPv4-compatible IPv6");
    }
    // 6to4 (2002:AABB:CCDD::) and NAT64 (64:ff9b::AABB:CCDD) embed an IPv4.
    if seg[0] == 0x2002 && forbidden_v4(embedded_v4(seg[1], seg[2])).is_some() {
        return Some("6to4 address of a refused IPv4 address");
    }
    if seg[0] == 0x64 && seg[1] == 0xff9b && forbidden_v4(embedded_v4(seg[6], seg[7])).is_some() {
        return Some("NAT64 address of a refused IPv4 address");
    }
    // Local-use NAT64 (RFC 8215): translates into the operator's own network.
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1 {
        return Some("local-use NAT64 (64:ff9b:1::/48)");
    }
    if seg[0] == 0x2001 && seg[1] == 0 {
        return Some("Teredo tunnel");
    }
    if seg[0] == 0x2001 && seg[1] == 0x0db8 {
        return Some("documentation range");
    }
    if (seg[0] & 0xfe00) == 0xfc00 {
        return Some("unique local (fc00::/7)");
    }
    if (seg[0] & 0xffc0) == 0xfe80 || (seg[0] & 0xffc0) == 0xfec0 {
        return Some("link-local or site-local");
    }
    if (seg[0] & 0xff00) == 0xff00 {
        return Some("multicast");
    }
    None
}

/// The IPv4 address held by two IPv6 segments.
fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    let [a, b] = hi.to_be_bytes();
    let [c, d] = lo.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// A URL that passed the guard, with the address to connect to.
#[derive(Debug)]
pub struct CheckedTarget {
    pub url: url::Url,
    /// `Some((host, addr))` when the host is a name: connect there, nowhere else.
    pub pin: Option<(String, SocketAddr)>,
}

/// Checks one URL (the first request or a redirect target).
pub async fn check_target(raw: &str, allow_hosts: &[String]) -> Result<CheckedTarget, ToolError> {
    let url = url::Url::parse(raw).map_err(|e| {
        ToolError::validation(format!("`{raw}` is not a valid URL: {e}"))
            .with_details(json!({ "path": "/url" }))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(denied(
            "SCHEME",
            format!(
                "only http and https URLs are allowed, not `{}:`",
                url.scheme()
            ),
            json!({}),
        ));
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let host = url
        .host()
        .ok_or_else(|| ToolError::validation(format!("`{raw}` has no host")))?;
    let host_text = match &host {
        url::Host::Domain(d) => d.trim_end_matches('.').to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => format!("[{ip}]"),
    };
    let allowed = allow_hosts.iter().any(|h| {
        let h = h.to_ascii_lowercase();
        h == host_text || h == format!("{host_text}:{port}")
    });
    let addrs: Vec<IpAddr> = match &host {
        url::Host::Ipv4(ip) => vec![IpAddr::V4(*ip)],
        url::Host::Ipv6(ip) => vec![IpAddr::V6(*ip)],
        url::Host::Domain(d) => {
            let resolved = tokio::net::lookup_host((d.trim_end_matches('.'), port))
                .await
                .map_err(|e| {
                    ToolError::new(
                        ErrorCode::NetworkError,
                        format!("cannot resolve `{d}`: {e}"),
                    )
                })?;
            resolved.map(|a| a.ip()).collect()
        }
    };
    if addrs.is_empty() {
        return Err(ToolError::new(
            ErrorCode::NetworkError,
            format!("`{host_text}` resolved to no address"),
        ));
    }
    if !allowed {
        for ip in &addrs {
            if let Some(reason) = forbidden_reason(*ip) {
                return Err(denied(
                    "SSRF",
                    format!("refusing to connect to {host_text} ({ip}): {reason} address"),
                    json!({ "address": ip.to_string() }),
                ));
            }
        }
    }
    let pin = match host {
        url::Host::Domain(d) => Some((d.to_string(), SocketAddr::new(addrs[0], port))),
        _ => None,
    };
    Ok(CheckedTarget { url, pin })
}

/// Where a redirect's `Location` points, resolved against the URL that
/// answered it. The result is checked by [`check_target`] like any first
/// request before anything connects to it.
pub fn redirect_target(current: &url::Url, location: &str) -> Result<url::Url, ToolError> {
    current.join(location).map_err(|e| {
        ToolError::new(
            ErrorCode::ProviderError,
            format!("bad redirect Location `{location}`: {e}"),
        )
    })
}

/// The TLS configuration every client shares (this tool's, and the model
/// providers' and MCP servers' through [`Egress`](crate::model::egress::Egress)):
/// loading the system's root certificates is most of what building a
/// client costs (native-tls on OpenSSL 3 parses the bundle twice, about
/// 500 M instructions, 0.1 s of CPU), so it is done once a process
/// ([`prewarm`] does it early, off the first call's path). A client
/// built without it would load them again.
pub(crate) fn tls() -> Option<native_tls::TlsConnector> {
    static TLS: std::sync::OnceLock<Option<native_tls::TlsConnector>> = std::sync::OnceLock::new();
    TLS.get_or_init(|| native_tls::TlsConnector::new().ok())
        .clone()
}

/// Loads the shared TLS configuration now (a host calls it at start, on a
/// thread of its own).
pub fn prewarm() {
    let _ = tls();
}

/// The reused client for a checked target: redirects off (each hop is
/// checked here), no proxy, connecting only to the pinned address. Built
/// once per pin (concurrent first calls wait for one build) and kept while
/// in use (idle ones expire).
fn client_for(pin: &Option<(String, SocketAddr)>) -> Result<reqwest::Client, ToolError> {
    static CLIENTS: std::sync::OnceLock<
        moka::sync::Cache<Option<(String, SocketAddr)>, reqwest::Client>,
    > = std::sync::OnceLock::new();
    let clients = CLIENTS.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity(256)
            .time_to_idle(Duration::from_secs(300))
            .build()
    });
    clients
        .try_get_with(pin.clone(), || {
            let mut builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy();
            if let Some(tls) = tls() {
                builder = builder.use_preconfigured_tls(tls);
            }
            if let Some((host, addr)) = pin {
                builder = builder.resolve(host, *addr);
            }
            builder.build()
        })
        .map_err(|e| ToolError::unknown(format!("cannot build HTTP client: {e}")))
}

/// Headers that carry credentials: not sent on to another origin.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

fn network_error(e: &reqwest::Error) -> ToolError {
    if e.is_timeout() {
        ToolError::new(ErrorCode::Timeout, format!("HTTP request timed out: {e}"))
    } else {
        ToolError::new(ErrorCode::NetworkError, format!("HTTP request failed: {e}"))
    }
}

/// The route of `name`, or the error naming what is available.
fn route_of(ctx: &ToolContext, name: &str) -> Result<std::sync::Arc<HttpRoute>, ToolError> {
    ctx.env
        .http
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, r)| r.clone())
        .ok_or_else(|| {
            let names: Vec<&str> = ctx.env.http.iter().map(|(n, _)| n.as_str()).collect();
            ctx.env.connection_error(name, "http", &names)
        })
}

/// `url` against the connection's base URL when it is relative.
fn connection_url(base: &str, url: &str) -> String {
    if url.starts_with("http://") || url.starts_with("https://") {
        url.to_string()
    } else {
        format!(
            "{}/{}",
            base.trim_end_matches('/'),
            url.trim_start_matches('/')
        )
    }
}

/// Whether `url`'s host is one of `hosts` (`host` or `host:port`).
fn host_listed(url: &url::Url, hosts: &[String]) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let port = url.port_or_known_default().unwrap_or(80);
    hosts.iter().any(|h| {
        let h = h.to_ascii_lowercase();
        h == host || h == format!("{host}:{port}")
    })
}

/// Replaces the credential's value (raw and URL-encoded) in every string
/// of `value`.
fn scrub(value: &mut Value, secret: &(String, SecretValue)) {
    let (name, v) = secret;
    let raw = v.expose();
    if raw.is_empty() {
        return;
    }
    let encoded: String = url::form_urlencoded::byte_serialize(raw.as_bytes()).collect();
    let marker = format!("[REDACTED:{name}]");
    match value {
        Value::String(s) if s.contains(raw) || s.contains(&encoded) => {
            *s = s.replace(raw, &marker).replace(&encoded, &marker);
        }
        Value::Array(items) => items.iter_mut().for_each(|i| scrub(i, secret)),
        Value::Object(map) => map.values_mut().for_each(|i| scrub(i, secret)),
        _ => {}
    }
}

async fn request(input: HttpInput, ctx: &ToolContext) -> Result<Value, ToolError> {
    let route = match &input.connection {
        Some(name) => Some(route_of(ctx, name)?),
        None => None,
    };
    let credential = route.as_ref().and_then(|r| r.credential.clone());
    let result = send(input, route.as_deref(), ctx).await;
    let Some(credential) = credential else {
        return result;
    };
    match result {
        Ok(mut v) => {
            scrub(&mut v, &credential);
            Ok(v)
        }
        Err(mut e) => {
            let mut message = Value::String(std::mem::take(&mut e.message));
            scrub(&mut message, &credential);
            e.message = message.as_str().unwrap_or_default().to_string();
            scrub(&mut e.details, &credential);
            Err(e)
        }
    }
}

async fn send(
    input: HttpInput,
    route: Option<&HttpRoute>,
    ctx: &ToolContext,
) -> Result<Value, ToolError> {
    let mut method = input.method.to_ascii_uppercase();
    let timeout = Duration::from_millis(input.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
    if input.headers.keys().any(|k| k.eq_ignore_ascii_case("host")) {
        return Err(ToolError::validation("the Host header cannot be set")
            .with_details(json!({ "path": "/headers/Host" })));
    }
    let mut body = input.body;
    // The connection's default headers, then the call's own.
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    if let Some(route) = route {
        for (k, v) in &route.config.default_headers {
            headers.insert(k.to_ascii_lowercase(), v.clone());
        }
    }
    for (k, v) in input.headers {
        headers.insert(k.to_ascii_lowercase(), v);
    }
    // The connection's credential replaces any the call sent itself.
    match route.and_then(HttpRoute::auth) {
        Some(HttpAuth::Bearer { .. } | HttpAuth::Basic { .. }) => {
            headers.remove("authorization");
        }
        Some(HttpAuth::Header { header, .. }) => {
            headers.remove(&header.to_ascii_lowercase());
        }
        Some(HttpAuth::Query { .. }) | None => {}
    }
    let (mut current, hosts) = match route {
        Some(route) => (
            connection_url(&route.config.base_url, &input.url),
            route.config.hosts(),
        ),
        None => (input.url, ctx.env.http_allow_hosts.clone()),
    };
    let mut origin: Option<url::Origin> = None;
    // The credential goes only to the origin the call started at.
    let mut credential_here = true;
    for _hop in 0..=MAX_REDIRECTS {
        let mut target = check_target(&current, &hosts).await?;
        if route.is_some() && !host_listed(&target.url, &hosts) {
            return Err(denied(
                "CONNECTION_HOST",
                format!(
                    "connection `{}` may reach only {}, not {}",
                    input.connection.as_deref().unwrap_or_default(),
                    hosts.join(", "),
                    target.url.host_str().unwrap_or_default()
                ),
                json!({}),
            ));
        }
        let here = target.url.origin();
        if origin.as_ref().is_some_and(|o| *o != here) {
            headers.retain(|k, _| !CREDENTIAL_HEADERS.contains(&k.as_str()));
            if let Some(HttpAuth::Header { header, .. }) = route.and_then(HttpRoute::auth) {
                headers.remove(&header.to_ascii_lowercase());
            }
            credential_here = false;
        }
        origin = Some(here);
        let credential = route
            .filter(|_| credential_here)
            .and_then(|r| r.auth().zip(r.credential.as_ref()));
        if let Some((HttpAuth::Query { param, .. }, (_, value))) = credential {
            target
                .url
                .query_pairs_mut()
                .append_pair(param, value.expose());
        }
        let client = client_for(&target.pin)?;
        let reqwest_method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| ToolError::validation(format!("unknown method {method}")))?;
        let mut req = client
            .request(reqwest_method, target.url.clone())
            .timeout(timeout);
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        // Added last: a header the model sent cannot replace it.
        match credential {
            Some((HttpAuth::Bearer { .. }, (_, value))) => {
                req = req.header("authorization", format!("Bearer {}", value.expose()));
            }
            Some((HttpAuth::Header { header, .. }, (_, value))) => {
                req = req.header(header.as_str(), value.expose());
            }
            Some((HttpAuth::Basic { username, .. }, (_, value))) => {
                req = req.basic_auth(username, Some(value.expose()));
            }
            Some((HttpAuth::Query { .. }, _)) | None => {}
        }
        if !is_read_method(&method) {
            req = req.header("Idempotency-Key", &ctx.call_id);
        }
        match &body {
            Some(Value::String(s)) => req = req.body(s.clone()),
            Some(Value::Null) | None => {}
            Some(other) => req = req.json(other),
        }
        let response = tokio::select! {
            r = req.send() => r.map_err(|e| network_error(&e))?,
            () = ctx.cancel.cancelled() => return Err(ToolError::unknown("HTTP request cancelled")),
        };
        let status = response.status();
        if status.is_redirection() {
            if let Some(location) = response.headers().get(reqwest::header::LOCATION) {
                let location = location.to_str().map_err(|_| {
                    ToolError::new(ErrorCode::ProviderError, "redirect Location is not text")
                })?;
                let next = redirect_target(&target.url, location)?;
                if status == reqwest::StatusCode::SEE_OTHER
                    || ((status == reqwest::StatusCode::MOVED_PERMANENTLY
                        || status == reqwest::StatusCode::FOUND)
                        && method == "POST")
                {
                    method = "GET".into();
                    body = None;
                }
                current = next.to_string();
                continue;
            }
        }
        let answer_headers: BTreeMap<String, String> = response
            .headers()
            .iter()
            .filter_map(|(k, v)| {
                v.to_str()
                    .ok()
                    .map(|v| (k.as_str().to_string(), v.to_string()))
            })
            .collect();
        let is_json = answer_headers
            .get("content-type")
            .is_some_and(|ct| ct.contains("json"));
        let final_url = target.url.to_string();
        let mut bytes = Vec::new();
        let mut truncated = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| network_error(&e))?;
            let room = MAX_RESPONSE_BYTES - bytes.len();
            if chunk.len() > room {
                bytes.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            bytes.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body_value = if is_json && !truncated {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        } else {
            Value::String(text)
        };
        if status.is_server_error() {
            let preview: String = body_value.to_string().chars().take(500).collect();
            return Err(ToolError::new(
                ErrorCode::ProviderError,
                format!("{final_url} answered {status}"),
            )
            .with_details(json!({ "status": status.as_u16(), "body_preview": preview })));
        }
        return Ok(json!({
            "status": status.as_u16(),
            "headers": answer_headers,
            "body": body_value,
            "body_truncated": truncated,
            "final_url": final_url,
        }));
    }
    Err(denied(
        "TOO_MANY_REDIRECTS",
        format!("more than {MAX_REDIRECTS} redirects"),
        json!({}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ip: &str, forbidden: bool) {
        let parsed: IpAddr = ip.parse().expect("ip");
        assert_eq!(
            forbidden_reason(parsed).is_some(),
            forbidden,
            "{ip}: {:?}",
            forbidden_reason(parsed)
        );
    }

    #[test]
    fn address_classes() {
        for ip in [
            "127.0.0.1",
            "127.255.255.254",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "fe80::1",
            "fc00::1",
            "fd00:ec2::254",
            "ff02::1",
            "2002:7f00:1::1",
            "64:ff9b::7f00:1",
            "2001::1",
            "192.0.2.1",
            "192.88.99.1",
            "64:ff9b:1::808:808",
            "64:ff9b:1:ffff::1",
        ] {
            check(ip, true);
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "192.88.98.1",
        ] {
            check(ip, false);
        }
    }

    #[test]
    fn method_decides_side_effects() {
        let t = HttpRequest;
        assert_eq!(
            t.side_effects_for(&json!({"url": "x"})),
            Some(SideEffects::Reads)
        );
        assert_eq!(
            t.side_effects_for(&json!({"url": "x", "method": "HEAD"})),
            Some(SideEffects::Reads)
        );
        assert_eq!(
            t.side_effects_for(&json!({"url": "x", "method": "POST"})),
            Some(SideEffects::Writes)
        );
    }
}
