-- Connections (issue 25): a workspace's named ways to reach an outside
-- service. `config` is the JSON of `node_runtime::connections::ConnectionConfig`:
-- it names secrets, never holds their values.
CREATE TABLE connections (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    name         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    config       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (workspace_id, name)
);
