-- Organizations (issue 7): a workspace may belong to one; org-scope secrets
-- are shared by every workspace of the org (the last fallback after the
-- user's and the workspace's own).
CREATE TABLE orgs (
    id          TEXT PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
ALTER TABLE workspaces ADD COLUMN org_id TEXT REFERENCES orgs(id);
CREATE INDEX secret_entries_owner ON secret_entries (scope, owner_id);
