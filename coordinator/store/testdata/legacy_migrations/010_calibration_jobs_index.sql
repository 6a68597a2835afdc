-- The lookup "is a calibration pending on this machine?" (004_lookups.sql) needs only
-- calibration jobs indexed. Indexing every job by kind cost each benchmark job two
-- more index updates per state change (queued -> running -> done), on the path every
-- result takes; this index holds calibration jobs alone.
DROP INDEX jobs_by_kind;
CREATE INDEX calibration_jobs_by_state ON jobs(state, pinned_host) WHERE kind = 'calibration';
