//! The server instances on one database as the API shows them (issue 32).

use serde::{Deserialize, Serialize};

/// One server instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstanceView {
    /// `glassbox serve --instance-name` (default `<hostname>-<pid>`).
    pub name: String,
    pub started_at: String,
    /// Its last heartbeat (every third of the lease, 5 s by default).
    pub last_heartbeat_at: String,
    /// Set when it stopped cleanly; a killed instance just stops beating.
    pub stopped_at: Option<String>,
    /// Unfinished runs of the caller's workspace it holds (their lease
    /// renewed by its heartbeat); other workspaces' runs are not counted.
    pub runs_held: i64,
    /// Whether it is the instance answering this request.
    pub current: bool,
}

/// Body of `GET /api/v1/instances`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstanceList {
    pub instances: Vec<InstanceView>,
}
