//! Glassbox's domain crate.
//!
//! It owns the contracts every other part speaks (the wire types of the JSON
//! API, and later the tool envelope, agent outputs and the graph model).
//!
//! It must not know axum, Leptos, SQL or any HTTP server: the browser app
//! compiles it to wasm, and the server wraps it. Everything that needs the
//! native runtime (threads, sockets, the file system) sits behind the
//! `runtime` feature.

pub mod wire;
