-- Regression suites (issue 33): a named set of recorded runs of one
-- workflow with assertions per case, and each run of a suite with its
-- verdict. `cases` and `options` are the JSON of `node_runtime::wire::
-- SuiteCase` (a list) and `SuiteOptions`; `result` the JSON of the suite
-- run's `CaseResult`s. A suite's runs are deleted with it (by the store,
-- in one transaction).
CREATE TABLE suites (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    workflow_id  TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL,
    cases        TEXT NOT NULL,
    options      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (workspace_id, name)
);

-- `instance`: the process that executes it (its instance name), so a
-- start can tell a suite run whose process is gone (it is then `error`).
CREATE TABLE suite_runs (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    suite_id     TEXT NOT NULL,
    workflow_id  TEXT NOT NULL,
    revision     BIGINT NOT NULL,
    status       TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT,
    passed       BIGINT NOT NULL DEFAULT 0,
    failed       BIGINT NOT NULL DEFAULT 0,
    result       TEXT,
    error        TEXT,
    instance     TEXT NOT NULL
);

CREATE INDEX suite_runs_by_suite ON suite_runs (workspace_id, suite_id, started_at);
CREATE INDEX suite_runs_running ON suite_runs (status) WHERE status = 'running';
