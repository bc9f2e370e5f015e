//! Glassbox's domain crate.
//!
//! It owns the contracts every other part speaks: the tool envelope and the
//! Agent Node's outputs (`envelope`), the error taxonomy (`error`), call ids
//! and canonical JSON (`call_id`), tool declarations (`tool_spec`), the
//! policy guard (`policy`), the conversation with a model (`chat`), the
//! agent loop's events (`agent_event`), replay bundles (`replay_bundle`),
//! the workflow graph with its run records and events (`graph`) and the
//! JSON API's wire types (`wire`). Those modules are plain data and pure
//! functions and compile to wasm.
//!
//! Behind the `runtime` feature sit the native parts: the `Tool` trait and
//! registry (`tool`), secrets (`secrets`), blobs (`blob`), the executor
//! (`executor`), the model adapters (`model`), the agent loop (`agent`),
//! the graph engine (`graph::engine`) and the built-in tools (`builtins`).
//!
//! It must not know axum, Leptos, SQL storage or any HTTP server: IO goes
//! through traits (`Tool`, `SecretSource`, `BlobStore`, `SqlBackend`) that
//! the server implements.

pub mod agent_config;
pub mod agent_event;
pub mod call_id;
#[cfg(feature = "runtime")]
pub mod canonical_ser;
pub mod chat;
pub mod connections;
pub mod envelope;
pub mod error;
#[cfg(feature = "runtime")]
pub mod fast_json;
pub mod graph;
pub mod payload;
pub mod policy;
pub mod pricing;
pub mod replay_bundle;
pub mod script;
pub mod tool_spec;
pub mod wire;

#[cfg(feature = "runtime")]
pub mod agent;
#[cfg(feature = "runtime")]
pub mod blob;
#[cfg(feature = "runtime")]
pub mod builtins;
#[cfg(feature = "runtime")]
pub mod executor;
#[cfg(feature = "runtime")]
pub mod model;
#[cfg(feature = "runtime")]
pub mod secrets;
#[cfg(feature = "runtime")]
pub mod suites;
#[cfg(feature = "runtime")]
pub mod tool;

pub use envelope::{AgentOutputs, Attachment, AttachmentKind, ToolEnvelope};
pub use error::{ErrorClass, ErrorCode, ToolError};
pub use payload::Payload;
