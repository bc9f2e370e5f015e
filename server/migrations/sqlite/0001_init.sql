-- Glassbox schema, step 1: workspaces. Later migrations add the rest.
CREATE TABLE workspaces (
    id          TEXT PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
INSERT INTO workspaces (id, name, created_at)
VALUES ('default', 'Default workspace', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
