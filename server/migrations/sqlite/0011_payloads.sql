-- Each payload stored once per run (issue 30): a tool call's input and
-- output, a node's outputs, a replay bundle are cut out of the texts that
-- carry them and kept here once, keyed by the BLAKE3 of their bytes. A
-- text that refers to payloads is stored as a skeleton (each cut value
-- replaced by `null`) with its refs beside it: `[[offset,"hash"],...]`,
-- the offsets of those `null`s, ascending (see storage/payloads.rs). NULL
-- refs mean the text is stored whole, as before.
CREATE TABLE payloads (
    run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    -- lowercase hex BLAKE3 of the fully inflated bytes
    hash    TEXT NOT NULL,
    -- 0: data is the skeleton as is
    codec   BIGINT NOT NULL,
    -- the inflated length
    size    BIGINT NOT NULL,
    data    BLOB NOT NULL,
    -- the refs of `data` (the payloads nested in it), NULL if none
    refs    TEXT,
    PRIMARY KEY (run_id, hash)
);
ALTER TABLE run_events ADD COLUMN refs TEXT;
ALTER TABLE replay_bundles ADD COLUMN refs TEXT;
ALTER TABLE runs ADD COLUMN record_refs TEXT;
ALTER TABLE node_runs ADD COLUMN outputs_refs TEXT;
ALTER TABLE tool_invocations ADD COLUMN input_refs TEXT;
ALTER TABLE tool_invocations ADD COLUMN output_refs TEXT;
ALTER TABLE run_checkpoints ADD COLUMN refs TEXT;
