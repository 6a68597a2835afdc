-- Lookups the coordinator makes per machine (every minute, for every registered
-- machine: is a calibration pending, how old is the latest) must not scan the jobs
-- of a long queue: without these, 1,000 machines x 100,000 queued jobs stalled the
-- loop for minutes.
CREATE INDEX jobs_by_kind ON jobs(kind, state, pinned_host);
CREATE INDEX hosts_by_machine ON hosts(machine_id);
