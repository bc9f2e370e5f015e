-- Glassbox schema, step 2: tenancy, workflows, runs, events, invocations,
-- approvals, bundles, secrets (names; values come with encryption at rest),
-- blob metadata and pinned-handle history. Timestamps are RFC 3339 UTC
-- text, JSON documents are text: the same SQL serves SQLite and Postgres.
-- 0001 typed workspaces.created_at as TIMESTAMPTZ; keep one text form on
-- both backends.
ALTER TABLE workspaces ALTER COLUMN created_at DROP DEFAULT;
ALTER TABLE workspaces ALTER COLUMN created_at TYPE TEXT
    USING to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

CREATE TABLE users (
    id          TEXT PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE TABLE memberships (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE TABLE api_tokens (
    token_hash  TEXT PRIMARY KEY NOT NULL,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT,
    used_at     TEXT
);
CREATE TABLE workflows (
    id           TEXT PRIMARY KEY NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    revision     BIGINT NOT NULL,
    document     TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX workflows_by_workspace ON workflows (workspace_id, updated_at);
CREATE TABLE workflow_revisions (
    workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
    revision    BIGINT NOT NULL,
    document    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (workflow_id, revision)
);
CREATE TABLE runs (
    id                TEXT PRIMARY KEY NOT NULL,
    workspace_id      TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    workflow_id       TEXT,
    workflow_revision BIGINT,
    kind              TEXT NOT NULL,
    replay_of         TEXT,
    status            TEXT NOT NULL,
    trigger_kind      TEXT NOT NULL,
    inputs            TEXT NOT NULL,
    outputs           TEXT,
    error             TEXT,
    record            TEXT,
    created_at        TEXT NOT NULL,
    finished_at       TEXT
);
CREATE INDEX runs_by_workspace ON runs (workspace_id, created_at);
CREATE INDEX runs_by_workflow ON runs (workflow_id, created_at);
CREATE TABLE run_events (
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    event      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
-- Seed 001's invocation record and lifecycle.
CREATE TABLE tool_invocations (
    id                TEXT PRIMARY KEY NOT NULL,
    workspace_id      TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    run_id            TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    node_id           TEXT NOT NULL,
    call_id           TEXT NOT NULL,
    tool_name         TEXT NOT NULL,
    tool_version      TEXT NOT NULL,
    status            TEXT NOT NULL,
    approval_required BIGINT NOT NULL,
    approval_status   TEXT,
    decided_by        TEXT,
    reason            TEXT,
    input             TEXT NOT NULL,
    output            TEXT,
    error             TEXT,
    cost              DOUBLE PRECISION NOT NULL,
    created_at        TEXT NOT NULL,
    started_at        TEXT,
    completed_at      TEXT
);
CREATE INDEX invocations_by_status ON tool_invocations (workspace_id, status, created_at);
CREATE INDEX invocations_by_tool ON tool_invocations (workspace_id, tool_name, created_at);
CREATE INDEX invocations_by_run ON tool_invocations (run_id);
CREATE TABLE approvals (
    token              TEXT PRIMARY KEY NOT NULL,
    workspace_id       TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    run_id             TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    node_id            TEXT NOT NULL,
    call_id            TEXT NOT NULL,
    tool               TEXT NOT NULL,
    args_summary       TEXT NOT NULL,
    effect_description TEXT NOT NULL,
    status             TEXT NOT NULL,
    decided_by         TEXT,
    note               TEXT,
    created_at         TEXT NOT NULL,
    decided_at         TEXT
);
CREATE INDEX approvals_pending ON approvals (workspace_id, status);
CREATE TABLE replay_bundles (
    run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    node_id TEXT NOT NULL,
    bundle  TEXT NOT NULL,
    PRIMARY KEY (run_id, node_id)
);
CREATE TABLE secret_entries (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    scope        TEXT NOT NULL,
    owner_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    ciphertext   BYTEA,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (scope, owner_id, name)
);
CREATE TABLE blobs (
    hash         TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    content_type TEXT NOT NULL,
    bytes        BIGINT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (hash, workspace_id)
);
CREATE TABLE pin_history (
    workflow_id TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    pin         TEXT NOT NULL,
    value       TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (workflow_id, node_id, pin)
);
