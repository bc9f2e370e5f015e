-- The audit log (issue 34): who did what in a workspace. `id` is a UUID v7,
-- so it orders the log in time; `detail` is JSON text.
CREATE TABLE audit_events (
    id           TEXT PRIMARY KEY NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    actor_id     TEXT NOT NULL,
    action       TEXT NOT NULL,
    target       TEXT NOT NULL,
    detail       TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX audit_events_by_workspace ON audit_events (workspace_id, id);
