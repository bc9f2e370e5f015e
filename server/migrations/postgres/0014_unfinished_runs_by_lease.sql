-- Scale-out (issue 32, review): every heartbeat's claim looks through the
-- unfinished runs for a passed lease; this index holds the unfinished runs
-- only (a finished run leaves it), so the claim reads them, not every run
-- ever stored.
CREATE INDEX runs_unfinished_by_lease ON runs (lease_until) WHERE finished_at IS NULL;
