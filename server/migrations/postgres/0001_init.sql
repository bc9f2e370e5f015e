-- Glassbox schema, step 1: workspaces. Later migrations add the rest.
CREATE TABLE workspaces (
    id          TEXT PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO workspaces (id, name) VALUES ('default', 'Default workspace');
