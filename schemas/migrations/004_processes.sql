-- Repeats in fresh processes (schemas/sweep.md, Processes). A job with `processes` K
-- (or a `precision`) is handed out once per process, each time to the agent that ran
-- its first, and its one results row is written when the last has come back: its
-- median_ms and interval are then the ones across processes (docs/results.md,
-- Processes). Each process's own figures are kept here as they arrive, so a restart
-- loses none of them.
--   process        0, 1, ...: the order they came back in
--   attempt        the hand-out that ran it (jobs.attempts counts every hand-out)
--   median_ms ...  its own median and 95% interval, as the worker measured them
--   samples        how many samples it kept; wall_s its timed seconds (samples x median)
--   detail         the worker's whole result, as for results.detail
CREATE TABLE result_processes (
  job_id            INTEGER NOT NULL REFERENCES jobs(job_id),
  process           INTEGER NOT NULL CHECK (process >= 0),
  attempt           INTEGER NOT NULL,
  host_id           INTEGER NOT NULL REFERENCES hosts(host_id),
  median_ms         REAL NOT NULL,
  median_ci_low_ms  REAL,
  median_ci_high_ms REAL,
  samples           INTEGER,
  received_at       TEXT NOT NULL,
  detail            TEXT NOT NULL,
  PRIMARY KEY (job_id, process),
  UNIQUE (job_id, attempt)
);

-- Where a queued job stands in its queue: the dispatcher takes the lowest. A job's
-- first hand-out queues by its job_id, as every job did before; each later process
-- queues behind every first one, the jobs of one round in an order of their own
-- (JobQueue::QueueNextProcess), so that a slow minute of the host does not fall on one
-- configuration's processes.
ALTER TABLE jobs ADD COLUMN queue_order INTEGER;
DROP INDEX jobs_queued_by_requirement;
CREATE INDEX jobs_queued_by_requirement ON jobs(requirement_id, coalesce(queue_order, job_id))
  WHERE state = 'queued';
-- With `precision`: the timing the later processes run with (JSON, the job's `timing`
-- with the samples per process chosen); NULL: the job's own.
ALTER TABLE jobs ADD COLUMN process_timing TEXT;
