//! The Glassbox server: the JSON API under `/api/v1`, storage, and serving
//! the built browser app.
//!
//! `main.rs` only parses configuration and serves; everything else is here so
//! tests can build the router with [`app`] and call it without a socket.
//!
//! The server depends on `node-runtime` for the domain; it must not contain
//! domain logic of its own (tool execution, the agent loop, graph rules).

pub mod api;
pub mod audit;
pub mod auth;
pub mod cli;
pub mod config;
pub mod connections;
pub mod error;
pub mod example_api;
pub mod examples;
pub mod instance;
pub mod listener;
pub mod mcp;
pub mod run_details;
pub mod runs;
pub mod secrets;
pub mod spa;
pub mod sql_tool;
pub mod storage;
pub mod suites;
#[cfg(feature = "test-hooks")]
pub mod test_tools;
pub mod trace;

use std::sync::Arc;

use axum::Router;

/// mimalloc for every binary that links the server (the `glassbox` binary,
/// its benches and tests): a run allocates many small short-lived values
/// (events, JSON, rows) across threads, where glibc's allocator spent about
/// a sixth of the bench's CPU time. Built with `no_thp`: with transparent
/// huge pages mimalloc's fresh pages fault in 2 MiB at a time, and zeroing
/// them on a runtime worker took 7-10% of the bench's CPU in stalls that
/// showed up as p99 latency spikes.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub use config::Config;
pub use error::ApiError;
pub use storage::Store;

/// Shared state handed to every handler.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<AppStateInner>,
    /// The example workflows read at start (`examples::read_dir`), offered
    /// by `GET /api/v1/examples`.
    examples: Arc<[node_runtime::graph::Workflow]>,
}

struct AppStateInner {
    db: Store,
    config: Config,
    runs: Arc<runs::Runs>,
    cipher: Arc<secrets::SecretCipher>,
}

impl AppState {
    /// The state of a server; fails only when the secret key is unusable.
    pub fn new(db: Store, config: Config) -> Result<Self, secrets::KeyError> {
        Self::new_instance(db, config, None)
    }

    /// [`AppState::new`] for the instance named `instance_name` (`None`:
    /// GLASSBOX_INSTANCE_NAME, else `<hostname>-<pid>`).
    pub fn new_instance(
        db: Store,
        config: Config,
        instance_name: Option<String>,
    ) -> Result<Self, secrets::KeyError> {
        trace::ensure_installed();
        let cipher = std::sync::Arc::new(secrets::SecretCipher::load(
            &config.data_dir,
            config.secret_key.as_deref(),
        )?);
        let approval_key = secrets::load_approval_key(&config.data_dir)?;
        let mut runs_config = config::RunsConfig::from_config(&config);
        if let Some(name) = instance_name {
            runs_config.instance.name = name;
        }
        let runs = runs::Runs::new(db.clone(), runs_config, cipher.clone(), approval_key);
        Ok(Self {
            inner: Arc::new(AppStateInner {
                db,
                config,
                runs,
                cipher,
            }),
            examples: Arc::from(Vec::new()),
        })
    }

    /// The same state offering `examples` (each with its example id as
    /// its `id`) for "New from example".
    pub fn with_examples(self, examples: Vec<node_runtime::graph::Workflow>) -> Self {
        Self {
            examples: Arc::from(examples),
            ..self
        }
    }

    pub fn examples(&self) -> &[node_runtime::graph::Workflow] {
        &self.examples
    }

    pub fn cipher(&self) -> &Arc<secrets::SecretCipher> {
        &self.inner.cipher
    }

    pub fn runs(&self) -> &Arc<runs::Runs> {
        &self.inner.runs
    }

    pub fn db(&self) -> &Store {
        &self.inner.db
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }
}

/// The whole HTTP surface: the API under `/api/v1`, Glassbox as an MCP
/// server at `/mcp`, the example API at `/example-api` and the app at `/`.
pub fn app(state: AppState) -> Router {
    let spa = spa::service(state.config().static_dir.as_deref());
    let mcp = mcp::serve::router(state.clone());
    let example_api = example_api::router(state.clone());
    Router::new()
        // JSON answers gzipped when the client accepts it (the editor's
        // workflow and tool list are most of what opening it fetches
        // besides the app); event streams are never compressed (the
        // default predicate leaves `text/event-stream` alone).
        .nest(
            node_runtime::wire::API_PREFIX,
            api::router(state.clone()).layer(tower_http::compression::CompressionLayer::new()),
        )
        .with_state(state)
        .merge(mcp)
        .merge(example_api)
        .fallback_service(spa)
        .layer(tower_http::trace::TraceLayer::new_for_http())
}

/// The server version reported by `/api/v1/health` and `glassbox --version`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
