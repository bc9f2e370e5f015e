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

-- Who started a run: a run resumed after a restart reads the same secret
-- scopes (that user's, then the workspace's, then the org's) as when it
-- started, as the tool registry's key status says it will.
ALTER TABLE runs ADD COLUMN started_by TEXT;
