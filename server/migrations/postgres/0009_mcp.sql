-- MCP (issue 26): what each `mcp` connection's server said at its last
-- refresh, the tools it listed (every version ever seen: a recorded run
-- keeps the version it called), and admins' side-effect overrides.
CREATE TABLE mcp_servers (
    workspace_id     TEXT NOT NULL REFERENCES workspaces(id),
    connection       TEXT NOT NULL,
    server_name      TEXT NOT NULL,
    server_version   TEXT NOT NULL,
    protocol_version TEXT NOT NULL,
    refreshed_at     TEXT NOT NULL,
    PRIMARY KEY (workspace_id, connection)
);

-- `spec` is the ToolSpec JSON as discovered (side effects from the
-- annotations); `current` is 1 for the versions the last refresh listed.
CREATE TABLE mcp_tools (
    workspace_id  TEXT NOT NULL REFERENCES workspaces(id),
    connection    TEXT NOT NULL,
    tool          TEXT NOT NULL,
    version       TEXT NOT NULL,
    spec          TEXT NOT NULL,
    annotations   TEXT NOT NULL,
    current       BIGINT NOT NULL,
    discovered_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, connection, tool, version)
);

CREATE TABLE mcp_overrides (
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    connection   TEXT NOT NULL,
    tool         TEXT NOT NULL,
    side_effects TEXT NOT NULL,
    set_by       TEXT NOT NULL,
    set_at       TEXT NOT NULL,
    PRIMARY KEY (workspace_id, connection, tool)
);
