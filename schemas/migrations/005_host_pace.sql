-- The host's pace (docs/regressions.md, Host pace): the agent times a fixed reference on
-- a job's CPUs before each of its worker processes (results.host_pace_ms). A candidate
-- whose reruns reproduced it is decided 'host' instead of 'confirmed' when the host's
-- pace that night moved beyond min_change the same way as the median: never a
-- regression, and it does not start the baseline anew.
--   host_pace_ms           the judged result's pace; once decided, the night's (the mean
--                          over its sweep's results on the host, reruns included)
--   baseline_host_pace_ms  the mean pace of the baseline's results that have one
--   host_pace_change       host_pace_ms / baseline_host_pace_ms - 1 (NULL without both)
-- A CHECK constraint cannot be altered in place: the table is made again, rows kept.
DROP VIEW IF EXISTS confirmed_regressions;
CREATE TABLE regressions_with_pace (
  regression_id      INTEGER PRIMARY KEY,
  job_id             INTEGER NOT NULL UNIQUE REFERENCES jobs(job_id),
  series             TEXT NOT NULL,
  host_id            INTEGER REFERENCES hosts(host_id),
  state              TEXT NOT NULL DEFAULT 'candidate'
                     CHECK (state IN ('candidate', 'confirmed', 'noise', 'host')),
  direction          TEXT NOT NULL CHECK (direction IN ('slower', 'faster')),
  median_ms          REAL NOT NULL,
  baseline_median_ms REAL NOT NULL,
  baseline_mad_ms    REAL NOT NULL,
  baseline_n         INTEGER NOT NULL,
  baseline_from      TEXT NOT NULL,
  baseline_to        TEXT NOT NULL,
  change             REAL NOT NULL,
  z                  REAL,
  rerun_median_ms    REAL,
  reruns             TEXT,
  detected_at        TEXT NOT NULL,
  decided_at         TEXT,
  reason             TEXT,
  median_ci_low_ms   REAL,
  median_ci_high_ms  REAL,
  sweep_id           INTEGER REFERENCES sweeps(sweep_id),
  host_pace_ms          REAL,
  baseline_host_pace_ms REAL,
  host_pace_change      REAL
);
INSERT INTO regressions_with_pace (regression_id, job_id, series, host_id, state, direction, median_ms,
  baseline_median_ms, baseline_mad_ms, baseline_n, baseline_from, baseline_to, change, z, rerun_median_ms,
  reruns, detected_at, decided_at, reason, median_ci_low_ms, median_ci_high_ms, sweep_id)
SELECT regression_id, job_id, series, host_id, state, direction, median_ms, baseline_median_ms,
  baseline_mad_ms, baseline_n, baseline_from, baseline_to, change, z, rerun_median_ms, reruns,
  detected_at, decided_at, reason, median_ci_low_ms, median_ci_high_ms, sweep_id
FROM regressions;
DROP TABLE regressions;
ALTER TABLE regressions_with_pace RENAME TO regressions;
CREATE INDEX regressions_confirmed_by_series ON regressions(series, job_id) WHERE state = 'confirmed';
CREATE INDEX regressions_open_by_series ON regressions(series) WHERE state = 'candidate';
