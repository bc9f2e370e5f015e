-- Durable runs (issue 7): what an interrupted run had done, and the
-- intent/result journal that makes an approved write run at most once.
CREATE TABLE run_checkpoints (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    node_id     TEXT NOT NULL,
    -- `node` (an ended node's record) or `agent` (a suspended agent's state)
    kind        TEXT NOT NULL,
    state       TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (run_id, node_id, kind)
);
CREATE TABLE write_journal (
    agent_run   TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    tool        TEXT NOT NULL,
    intent_at   TEXT NOT NULL,
    -- the envelope, once the call returned
    envelope    TEXT,
    result_at   TEXT,
    PRIMARY KEY (agent_run, call_id)
);
CREATE INDEX write_journal_run ON write_journal (run_id);
