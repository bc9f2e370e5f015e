-- A cancel asked of a run executing on another instance (issue 32) is
-- recorded on the run, not only announced: whoever executes or claims the
-- run next ends it cancelled, so a cancel sent to a holder that just died
-- is not lost.
ALTER TABLE runs ADD COLUMN cancel_requested_at TEXT;
