-- Stored bytes per run (issue 30): a run's events and spans are looked up
-- only by their primary key, so they are kept in the key's B-tree itself
-- (WITHOUT ROWID). A rowid table kept every row's key twice, once in the
-- table and once in the key's automatic index: about a sixth of a run's
-- stored bytes. Their rows are short (a few hundred bytes, payloads live in
-- `payloads`), which is where WITHOUT ROWID tables are at their best.
CREATE TABLE run_events_by_key (
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    event      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    refs       TEXT,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO run_events_by_key (run_id, seq, event, created_at, refs)
    SELECT run_id, seq, event, created_at, refs FROM run_events;
DROP TABLE run_events;
ALTER TABLE run_events_by_key RENAME TO run_events;

CREATE TABLE run_spans_by_key (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    -- 16 hex digits, unique within the trace
    span_id     TEXT NOT NULL,
    parent_id   TEXT,
    trace_id    TEXT NOT NULL,
    -- run | node | iteration | model_call | tool_call
    name        TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    duration_us BIGINT NOT NULL,
    -- the span's fields as a JSON object (ids, tool, error code; never a value)
    fields      TEXT NOT NULL,
    PRIMARY KEY (run_id, span_id)
) WITHOUT ROWID;
INSERT INTO run_spans_by_key
    (run_id, span_id, parent_id, trace_id, name, started_at, duration_us, fields)
    SELECT run_id, span_id, parent_id, trace_id, name, started_at, duration_us, fields
    FROM run_spans;
DROP TABLE run_spans;
ALTER TABLE run_spans_by_key RENAME TO run_spans;
