-- Host fingerprints, series and regression detection (docs/regressions.md).
--
-- A host's fingerprint is a SHA-256 of the stable facts of its hardware and software
-- (fingerprint_parts, as JSON): CPU model, logical CPUs, memory, GPU models and count,
-- NVIDIA driver, CUDA, LibTorch, BLAS and its configuration, benchfleet's version. Not
-- the clock speed, which drifts between boots. Computed when the agent registers.
ALTER TABLE hosts ADD COLUMN fingerprint TEXT;
ALTER TABLE hosts ADD COLUMN fingerprint_parts TEXT;

-- Every result carries the fingerprint of its host when it was stored, and its series:
-- one job configuration (the job's spec, canonical JSON) on one fingerprint. A changed
-- fingerprint starts a new series: a baseline reset, not a regression.
ALTER TABLE results ADD COLUMN fingerprint TEXT;
ALTER TABLE results ADD COLUMN series TEXT;
CREATE INDEX results_by_series ON results(series, job_id);

-- A job run again to confirm a candidate regression: the candidate's job. Its result is
-- not judged itself.
ALTER TABLE jobs ADD COLUMN confirms_job_id INTEGER REFERENCES jobs(job_id);
CREATE INDEX jobs_by_confirmed ON jobs(confirms_job_id) WHERE confirms_job_id IS NOT NULL;

-- One row per candidate: a result beyond its series' baseline by both tests (robust
-- z-score and relative change). state: 'candidate' while its reruns run, then
-- 'confirmed' (the reruns' median is beyond the baseline the same way) or 'noise'.
CREATE TABLE regressions (
  regression_id      INTEGER PRIMARY KEY,
  job_id             INTEGER NOT NULL UNIQUE REFERENCES jobs(job_id),
  series             TEXT NOT NULL,
  host_id            INTEGER REFERENCES hosts(host_id),
  state              TEXT NOT NULL DEFAULT 'candidate' CHECK (state IN ('candidate', 'confirmed', 'noise')),
  direction          TEXT NOT NULL CHECK (direction IN ('slower', 'faster')),
  median_ms          REAL NOT NULL,   -- the judged result's
  baseline_median_ms REAL NOT NULL,
  baseline_mad_ms    REAL NOT NULL,
  baseline_n         INTEGER NOT NULL,
  baseline_from      TEXT NOT NULL,   -- received_at of the window's oldest and newest results
  baseline_to        TEXT NOT NULL,
  change             REAL NOT NULL,   -- median_ms / baseline_median_ms - 1
  z                  REAL,            -- null below the window's minimum for the z test
  rerun_median_ms    REAL,            -- the median of the confirming reruns' medians
  reruns             TEXT,            -- JSON array of the confirming jobs' ids
  detected_at        TEXT NOT NULL,
  decided_at         TEXT,
  reason             TEXT
);

-- `benchfleet baseline reset`: a known step. Results before it leave the baseline of
-- the series it covers (every series on `host`, of `model`, or both; NULL: any).
CREATE TABLE baseline_resets (
  reset_id INTEGER PRIMARY KEY,
  host     TEXT,
  model    TEXT,
  at       TEXT NOT NULL,
  note     TEXT
);

-- Confirmed regressions and improvements with their size, baseline window and
-- confirming runs (`benchfleet regressions`).
CREATE VIEW confirmed_regressions AS
SELECT g.regression_id, g.detected_at, g.decided_at, h.name AS host, r.model, r.mode, r.dtype,
       r.batch_size, r.threads, r.device, r.model_args, g.direction,
       round(g.change * 100, 1) AS change_pct, g.median_ms, g.rerun_median_ms,
       g.baseline_median_ms, g.baseline_mad_ms, g.baseline_n, g.baseline_from, g.baseline_to,
       g.z, g.reruns, g.job_id, r.sweep_id, g.series
FROM regressions g
JOIN results r ON r.job_id = g.job_id
JOIN hosts h ON h.host_id = g.host_id
WHERE g.state = 'confirmed';
