-- Paired comparisons (schemas/sweep.md, Versus; docs/results.md, Versus): a sweep's
-- `versus` makes each configuration two jobs, side A (the first value of its axis) and
-- side B, run as pairs on one agent and the same CPUs. Side A is the job the dispatcher
-- hands out, once per pair; side B waits queued, never handed out by itself, until its
-- pair is done, when both get their results.
--   jobs.versus            on side A: the pairing, as JSON: {"axis", "a_value", "b_value",
--                          "pairing", "max_pairs", "min_change", "precision"}; NULL on
--                          every other job. Its side B is the job whose versus_a_job_id
--                          names it.
--   jobs.versus_a_job_id   on side B: its side A; NULL on every other job
ALTER TABLE jobs ADD COLUMN versus TEXT;
ALTER TABLE jobs ADD COLUMN versus_a_job_id INTEGER REFERENCES jobs(job_id);
-- A side B is never handed out by itself: it stays out of the dispatcher's index.
DROP INDEX jobs_queued_by_requirement;
CREATE INDEX jobs_queued_by_requirement ON jobs(requirement_id, coalesce(queue_order, job_id))
  WHERE state = 'queued' AND versus_a_job_id IS NULL;
CREATE INDEX jobs_by_versus_a ON jobs(versus_a_job_id) WHERE versus_a_job_id IS NOT NULL;
-- A side A that fails or is cancelled, by whatever path (its attempts used up, a pair
-- that failed, the sweep cancelled), takes its side B with it.
CREATE TRIGGER versus_side_b_ends_with_side_a AFTER UPDATE OF state ON jobs
WHEN new.versus IS NOT NULL AND new.state IN ('failed', 'cancelled') BEGIN
  UPDATE jobs SET state = new.state, finished_at = new.finished_at,
    error = 'its pair''s side A (job ' || new.job_id || ') ' || new.state ||
            coalesce(': ' || new.error, '')
  WHERE versus_a_job_id = new.job_id AND state IN ('queued', 'running');
END;

-- One row per pair as it came back (side A's job and the pair's number), with each
-- side's own process kept in result_processes under its own job.
--   pair             0, 1, ...: the order they came back in
--   attempt          side A's hand-out that ran it
--   pairing          interleaved, duet or in_process: how the two sides ran
--   first            a or b: which side ran first (interleaved), took the first CPUs
--                    (duet), or timed the first block (in_process)
--   a_median_ms ...  each side's median in this pair, and b_median_ms / a_median_ms
--   a_host_pace_ms   each side's host pace reading (interleaved, duet); NULL in_process
CREATE TABLE result_pairs (
  job_id         INTEGER NOT NULL REFERENCES jobs(job_id),
  pair           INTEGER NOT NULL CHECK (pair >= 0),
  b_job_id       INTEGER NOT NULL REFERENCES jobs(job_id),
  attempt        INTEGER NOT NULL,
  host_id        INTEGER NOT NULL REFERENCES hosts(host_id),
  pairing        TEXT NOT NULL CHECK (pairing IN ('interleaved', 'duet', 'in_process')),
  first          TEXT NOT NULL CHECK (first IN ('a', 'b')),
  a_median_ms    REAL NOT NULL,
  b_median_ms    REAL NOT NULL,
  ratio          REAL NOT NULL,
  a_host_pace_ms REAL,
  b_host_pace_ms REAL,
  received_at    TEXT NOT NULL,
  PRIMARY KEY (job_id, pair),
  UNIQUE (job_id, attempt)
);

-- The answer of each pair of jobs once its pairs are done: B over A with its 95%
-- interval over the pairs (a t-interval on the log ratios), the verdict, what it could
-- have detected, and why the pairs stopped where they did.
CREATE TABLE versus_results (
  job_id            INTEGER PRIMARY KEY REFERENCES jobs(job_id),
  b_job_id          INTEGER NOT NULL UNIQUE REFERENCES jobs(job_id),
  sweep_id          INTEGER NOT NULL REFERENCES sweeps(sweep_id),
  host_id           INTEGER REFERENCES hosts(host_id),
  axis              TEXT NOT NULL,
  a_value           TEXT NOT NULL,
  b_value           TEXT NOT NULL,
  pairing           TEXT NOT NULL,
  pairs             INTEGER NOT NULL,
  ratio             REAL,
  ratio_ci_low      REAL,
  ratio_ci_high     REAL,
  p                 REAL,
  change            TEXT NOT NULL CHECK (change IN ('slower', 'faster', 'unchanged', 'failed')),
  min_change        REAL NOT NULL,
  precision_target  REAL NOT NULL,
  precision_reached REAL,
  detectable        REAL,
  stopped           TEXT NOT NULL CHECK (stopped IN ('precision', 'decided', 'cap', 'failed')),
  why               TEXT NOT NULL,
  method            TEXT NOT NULL,
  decided_at        TEXT NOT NULL
);
CREATE INDEX versus_results_by_sweep ON versus_results(sweep_id);

-- The regression judge's host pace with its readings (docs/regressions.md, Host pace):
-- the baseline's results' paces, of which baseline_host_pace_ms is the geometric mean, so
-- that the night's pace is held against their spread; and what the series can detect.
--   baseline_host_paces  JSON array of the baseline's results' host_pace_ms
--   detectable_change    the smallest relative change a candidate of this series could
--                        be: max(min_change, z x sigma / baseline median)
ALTER TABLE regressions ADD COLUMN baseline_host_paces TEXT;
ALTER TABLE regressions ADD COLUMN detectable_change REAL;
