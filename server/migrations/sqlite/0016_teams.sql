-- Teams (issue 34): one-time invitation links into a workspace with a
-- role (only the token's BLAKE3 hash is stored), the date a member joined,
-- and the old `member` role renamed `editor` (admin > editor > viewer).
CREATE TABLE invitations (
    id           TEXT PRIMARY KEY NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    accepted_by  TEXT,
    accepted_at  TEXT,
    revoked_at   TEXT
);
CREATE INDEX invitations_by_workspace ON invitations (workspace_id, created_at);

ALTER TABLE memberships ADD COLUMN joined_at TEXT;
UPDATE memberships SET role = 'editor' WHERE role = 'member';
