//! The example API: a small read-only JSON API of support tickets that the
//! server itself serves under `/example-api`, so the example workflow
//! "Call an authenticated API through a connection" has something real to
//! call with nothing to install.
//!
//! It behaves like an API that takes a key: every request needs
//! `Authorization: Bearer <token>` with the value of the default
//! workspace's secret [`TOKEN_SECRET`] (read on each request, so a new
//! value set in Settings applies at once); without it, or with another
//! token, it answers 401. It answers only requests from this machine
//! (a loopback peer; 403 otherwise), and never writes.
//!
//! On first start ([`provision`]) the server generates the token into that
//! secret and adds the http connection [`CONNECTION`] to the example API
//! with bearer auth from the secret. The port can change from one start to
//! the next: [`follow_port`] moves the connection's base URL along as long
//! as the connection is still the example's (a loopback URL of this path).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use node_runtime::connections::{ConnectionConfig, HttpAuth, HttpConnection};
use node_runtime::secrets::{SecretOwner, SecretScope, SecretSource};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{ApiPath, ApiQuery};
use crate::{ApiError, AppState};

/// Where the example API is served.
pub const PATH: &str = "/example-api";
/// The default workspace's secret holding the example API's token.
pub const TOKEN_SECRET: &str = "EXAMPLE_API_TOKEN";
/// The http connection to the example API made on first start.
pub const CONNECTION: &str = "example_api";

/// The example API's routes; every one behind [`guard`].
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/", get(index))
        .route("/tickets", get(tickets))
        .route("/tickets/{id}", get(ticket))
        .fallback(unknown)
        .method_not_allowed_fallback(crate::error::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state);
    Router::new().nest_service(PATH, api)
}

/// Whether a peer is this machine over loopback (an IPv4-mapped IPv6
/// address counts as the IPv4 one).
fn loopback(peer: IpAddr) -> bool {
    peer.to_canonical().is_loopback()
}

/// Loopback peers with the right bearer token only.
async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if !peer.is_some_and(loopback) {
        return ApiError::forbidden(
            "the example API answers only requests from the machine it runs on (loopback)",
        )
        .into_response();
    }
    let given = crate::auth::bearer(req.headers()).filter(|t| !t.is_empty());
    let expected = token(&state).await;
    match (given, expected) {
        // Compared as hashes: the time taken says nothing of the token.
        (Some(given), Some(expected))
            if blake3::hash(given.as_bytes()) == blake3::hash(expected.expose().as_bytes()) =>
        {
            next.run(req).await
        }
        (given, _) => {
            let message = if given.is_some() {
                "the bearer token is not this API's key"
            } else {
                "this API needs `Authorization: Bearer <token>`"
            };
            let mut response = ApiError::unauthorized(format!(
                "{message} (the token is the workspace secret {TOKEN_SECRET})"
            ))
            .into_response();
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"example-api\""),
            );
            response
        }
    }
}

/// The current value of the token secret, if it is set.
async fn token(state: &AppState) -> Option<node_runtime::secrets::SecretValue> {
    let secrets = crate::secrets::StoreSecrets {
        store: state.db().clone(),
        cipher: state.cipher().clone(),
    };
    let owner = SecretOwner {
        user_id: None,
        workspace_id: crate::auth::DEFAULT_WORKSPACE.into(),
        org_id: None,
    };
    secrets
        .lookup(&owner, SecretScope::Workspace, TOKEN_SECRET)
        .await
}

/// `GET /example-api/`: what there is.
async fn index() -> Json<Value> {
    Json(json!({
        "name": "Glassbox example API",
        "description": "A read-only support desk: tickets and their messages.",
        "resources": {
            "/tickets": "the tickets, newest first; `?status=open` or `?status=closed`",
            "/tickets/{id}": "one ticket with its messages"
        }
    }))
}

/// The desk's tickets, newest first, each with its messages.
fn desk() -> Vec<Value> {
    vec![
        json!({"id": 104, "title": "Glass jar arrived cracked", "status": "open",
            "priority": "high", "customer": "Katherine Johnson", "opened_at": "2026-11-20T09:12:00Z",
            "messages": [
                {"from": "customer", "text": "The jar in order 7 arrived with a crack down the side."},
                {"from": "agent", "text": "Sorry about that; a replacement is on its way."}]}),
        json!({"id": 103, "title": "Export to CSV is missing the header row", "status": "closed",
            "priority": "low", "customer": "Alan Turing", "opened_at": "2026-11-18T16:40:00Z",
            "messages": [
                {"from": "customer", "text": "The CSV export starts with data, no column names."},
                {"from": "agent", "text": "Fixed in today's release; thanks for the report."}]}),
        json!({"id": 102, "title": "Invoice shows the wrong VAT rate", "status": "open",
            "priority": "normal", "customer": "Grace Hopper", "opened_at": "2026-11-15T11:05:00Z",
            "messages": [
                {"from": "customer", "text": "Invoice 2026-0042 charges 21% VAT; it should be 19%."}]}),
        json!({"id": 101, "title": "Cannot sign in after a password reset", "status": "open",
            "priority": "high", "customer": "Ada Lovelace", "opened_at": "2026-11-12T08:30:00Z",
            "messages": [
                {"from": "customer", "text": "The reset link worked, but the new password is refused."},
                {"from": "agent", "text": "Could you try once more in a private window?"}]}),
    ]
}

#[derive(Deserialize)]
struct TicketQuery {
    status: Option<String>,
}

/// `GET /example-api/tickets[?status=open|closed]`: the list, without
/// messages.
async fn tickets(ApiQuery(query): ApiQuery<TicketQuery>) -> Result<Json<Value>, ApiError> {
    if let Some(status) = &query.status {
        if status != "open" && status != "closed" {
            return Err(ApiError::BadRequest {
                message: format!("status is `open` or `closed`, not `{status}`"),
                details: json!({"path": "status"}),
            });
        }
    }
    let listed: Vec<Value> = desk()
        .into_iter()
        .filter(|t| query.status.as_deref().is_none_or(|s| t["status"] == s))
        .map(|mut t| {
            if let Some(t) = t.as_object_mut() {
                t.remove("messages");
            }
            t
        })
        .collect();
    Ok(Json(json!({"count": listed.len(), "tickets": listed})))
}

/// `GET /example-api/tickets/{id}`.
async fn ticket(ApiPath(id): ApiPath<u64>) -> Result<Json<Value>, ApiError> {
    desk()
        .into_iter()
        .find(|t| t["id"] == id)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("there is no ticket {id}")))
}

async fn unknown(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "the example API has no {uri}; see GET {PATH}/ for what it has"
    ))
}

/// The example API's base URL for a server listening on `local`: its own
/// address when that is loopback, the loopback address of its family when
/// it listens on every address; none when it listens on one other address
/// only (the example API answers loopback peers, which cannot reach it).
pub fn base_url(local: SocketAddr) -> Option<String> {
    let ip = match local.ip() {
        ip if ip.is_loopback() => ip,
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        _ => return None,
    };
    Some(format!(
        "http://{}{PATH}",
        SocketAddr::new(ip, local.port())
    ))
}

/// The connection to the example API at `base_url`, with the token secret.
pub fn connection(base_url: &str) -> ConnectionConfig {
    ConnectionConfig::Http(HttpConnection {
        base_url: base_url.into(),
        allowed_hosts: Vec::new(),
        auth: Some(HttpAuth::Bearer {
            secret: TOKEN_SECRET.into(),
        }),
        default_headers: Default::default(),
    })
}

/// First start: a random token in the workspace secret (unless one is set)
/// and the connection to the example API (unless the name is taken). A
/// failure is logged and leaves the rest of the start alone.
pub async fn provision(state: &AppState, local: SocketAddr) {
    let ws = crate::auth::DEFAULT_WORKSPACE;
    let Some(base) = base_url(local) else {
        tracing::warn!(%local, "the example API answers loopback only, which does not reach {local}: no connection `{CONNECTION}`");
        return;
    };
    let made = async {
        let existing = state
            .db()
            .secret_ciphertext(ws, "workspace", ws, TOKEN_SECRET)
            .await?;
        if existing.is_none() {
            let token = crate::auth::new_token();
            let sealed = state
                .cipher()
                .encrypt("workspace", ws, TOKEN_SECRET, &token);
            state
                .db()
                .put_secret(ws, "workspace", ws, TOKEN_SECRET, &sealed)
                .await?;
        }
        let config = connection(&base);
        let text = serde_json::to_string(&config).map_err(|e| {
            crate::storage::StoreError::Corrupt(format!("the example connection: {e}"))
        })?;
        state
            .db()
            .insert_connection(ws, CONNECTION, config.kind(), &text)
            .await
    }
    .await;
    if let Err(e) = made {
        tracing::warn!(error = %e, "cannot set up the example API's token and connection");
    }
}

/// Every start: when the connection [`CONNECTION`] still is the example's
/// (an http connection to a loopback URL of [`PATH`], bearer from
/// [`TOKEN_SECRET`]) and names another address, it is moved to this
/// server's; a connection someone changed is left as it is.
pub async fn follow_port(state: &AppState, local: SocketAddr) {
    let ws = crate::auth::DEFAULT_WORKSPACE;
    let Some(base) = base_url(local) else { return };
    let Ok(row) = state.db().connection(ws, CONNECTION).await else {
        return;
    };
    let Ok(ConnectionConfig::Http(mut http)) = crate::connections::config_of(&row) else {
        return;
    };
    if http.base_url == base || !is_example(&http) {
        return;
    }
    http.base_url = base;
    let config = ConnectionConfig::Http(http);
    let moved = match serde_json::to_string(&config) {
        Ok(text) => state
            .db()
            .update_connection(ws, CONNECTION, config.kind(), &text)
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match moved {
        Ok(()) => tracing::info!("the connection `{CONNECTION}` follows the server to {local}"),
        Err(e) => tracing::warn!(error = %e, "cannot move the connection `{CONNECTION}`"),
    }
}

/// Whether an http connection is the one [`provision`] made, whatever its
/// port.
fn is_example(http: &HttpConnection) -> bool {
    let Ok(url) = reqwest::Url::parse(&http.base_url) else {
        return false;
    };
    let loopback_host = url
        .host_str()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
        .and_then(|h| h.parse::<IpAddr>().ok())
        .is_some_and(|ip| ip.is_loopback());
    url.scheme() == "http"
        && loopback_host
        && url.path().trim_end_matches('/') == PATH
        && http.allowed_hosts.is_empty()
        && http.default_headers.is_empty()
        && http.auth
            == Some(HttpAuth::Bearer {
                secret: TOKEN_SECRET.into(),
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_url_is_a_loopback_address_of_the_server() {
        let check = |local: &str, want: Option<&str>| {
            let local: SocketAddr = local.parse().expect("address");
            assert_eq!(base_url(local).as_deref(), want, "{local}");
        };
        check("127.0.0.1:8080", Some("http://127.0.0.1:8080/example-api"));
        check("0.0.0.0:9000", Some("http://127.0.0.1:9000/example-api"));
        check("[::]:9000", Some("http://[::1]:9000/example-api"));
        check("[::1]:80", Some("http://[::1]:80/example-api"));
        check("192.168.1.5:8080", None);
    }

    #[test]
    fn only_the_examples_own_connection_follows_the_port() {
        let example = |base: &str| match connection(base) {
            ConnectionConfig::Http(h) => h,
            _ => unreachable!("an http connection"),
        };
        assert!(is_example(&example("http://127.0.0.1:1/example-api")));
        assert!(is_example(&example("http://[::1]:2/example-api/")));
        assert!(!is_example(&example("http://127.0.0.1:1/other")));
        assert!(!is_example(&example("https://api.example.com/example-api")));
        let mut changed = example("http://127.0.0.1:1/example-api");
        changed.auth = Some(HttpAuth::Bearer {
            secret: "MINE".into(),
        });
        assert!(!is_example(&changed));
        for base in [
            "http://127.0.0.1:8080/example-api",
            "http://[::1]:80/example-api",
        ] {
            assert_eq!(connection(base).validate(), Ok(()), "{base}");
        }
        assert!(loopback("::ffff:127.0.0.1".parse().expect("mapped")));
        assert!(!loopback("10.0.0.1".parse().expect("private")));
    }
}
