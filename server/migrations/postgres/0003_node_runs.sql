-- Glassbox schema, step 3: one row per node of a finished run, for queries
-- (the full record, with inputs, bundles and envelopes, stays on the run).
CREATE TABLE node_runs (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    node_id     TEXT NOT NULL,
    status      TEXT NOT NULL,
    error       TEXT,
    outputs     TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    PRIMARY KEY (run_id, node_id)
);
CREATE INDEX node_runs_by_status ON node_runs (run_id, status);
