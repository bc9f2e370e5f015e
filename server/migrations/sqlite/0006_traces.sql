-- Traces (issue 7): every record of a run carries its trace id, and the
-- server keeps the run's spans itself, so a trace is viewable without any
-- external system.
ALTER TABLE runs ADD COLUMN trace_id TEXT;
ALTER TABLE node_runs ADD COLUMN trace_id TEXT;
ALTER TABLE tool_invocations ADD COLUMN trace_id TEXT;
CREATE TABLE run_spans (
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
);
