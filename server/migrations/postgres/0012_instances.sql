-- Scale-out (issue 32): the server instances on this database, and which
-- instance holds each unfinished run, until when (its lease, renewed by the
-- holder's heartbeat; an expired lease lets another instance claim it).
CREATE TABLE instances (
    name          TEXT PRIMARY KEY NOT NULL,
    started_at    TEXT NOT NULL,
    heartbeat_at  TEXT NOT NULL,
    stopped_at    TEXT
);
ALTER TABLE runs ADD COLUMN claimed_by TEXT;
ALTER TABLE runs ADD COLUMN lease_until TEXT;
CREATE INDEX runs_claimed ON runs (claimed_by, finished_at);
