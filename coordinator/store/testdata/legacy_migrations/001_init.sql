-- benchfleet store, schema version 1.
-- Applied once by the coordinator at start (PRAGMA user_version tracks the version).
-- Times are UTC ISO 8601 text ("2026-11-29T15:17:21.123Z"), which sorts correctly.

-- One row per agent name. capabilities is the JSON the agent registered with
-- (host probe, LibTorch build, GPUs); it is replaced on every registration.
CREATE TABLE hosts (
  host_id      INTEGER PRIMARY KEY,
  name         TEXT NOT NULL UNIQUE,
  machine_id   TEXT,
  tags         TEXT NOT NULL DEFAULT '[]',
  capabilities TEXT NOT NULL DEFAULT '{}',
  first_seen   TEXT NOT NULL,
  last_seen    TEXT NOT NULL
);

-- A submitted sweep file (spec, JSON) and its lifecycle.
CREATE TABLE sweeps (
  sweep_id    INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  spec        TEXT NOT NULL,
  state       TEXT NOT NULL DEFAULT 'running'
              CHECK (state IN ('running', 'done', 'cancelled')),
  created_at  TEXT NOT NULL,
  finished_at TEXT
);

-- One row per combination and placement. pinned_host names the agent a job must run
-- on (placement "each"); NULL lets any agent matching the sweep's select take it.
-- attempts counts hand-outs; host_id is where the latest attempt went.
CREATE TABLE jobs (
  job_id      INTEGER PRIMARY KEY,
  sweep_id    INTEGER NOT NULL REFERENCES sweeps(sweep_id),
  pinned_host TEXT,
  spec        TEXT NOT NULL,
  timeout_s   REAL NOT NULL,
  state       TEXT NOT NULL DEFAULT 'queued'
              CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  attempts    INTEGER NOT NULL DEFAULT 0,
  host_id     INTEGER REFERENCES hosts(host_id),
  error       TEXT,
  created_at  TEXT NOT NULL,
  started_at  TEXT,
  finished_at TEXT
);
CREATE INDEX jobs_by_state ON jobs(state, job_id);
CREATE INDEX jobs_by_sweep ON jobs(sweep_id, state);

-- The accepted result of a job: at most one per job (the primary key is the fence).
-- ok = 0 rows are failed jobs with their reason in error. detail keeps the whole result
-- JSON (runtime, library versions, thread settings) except the raw samples.
CREATE TABLE results (
  job_id              INTEGER PRIMARY KEY REFERENCES jobs(job_id),
  attempt             INTEGER NOT NULL,
  host_id             INTEGER NOT NULL REFERENCES hosts(host_id),
  ok                  INTEGER NOT NULL,
  device              TEXT,
  model               TEXT,
  mode                TEXT,
  dtype               TEXT,
  batch_size          INTEGER,
  threads             INTEGER,
  n                   INTEGER,
  median_ms           REAL,
  mean_ms             REAL,
  stdev_ms            REAL,
  min_ms              REAL,
  max_ms              REAL,
  p90_ms              REAL,
  p99_ms              REAL,
  q1_ms               REAL,
  q3_ms               REAL,
  iqr_ms              REAL,
  noisy               INTEGER,
  throughput_per_s    REAL,
  peak_rss_mb         REAL,
  rss_before_model_mb REAL,
  param_bytes         INTEGER,
  effective_threads   REAL,
  worker_wall_s       REAL,
  error               TEXT,
  detail              TEXT NOT NULL,
  received_at         TEXT NOT NULL
);

-- Every timed sample (per-iteration milliseconds) of an accepted result.
CREATE TABLE samples (
  job_id INTEGER NOT NULL REFERENCES results(job_id),
  idx    INTEGER NOT NULL,
  ms     REAL NOT NULL,
  PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;

-- Results that arrived for an attempt that no longer owned its job (requeued, finished
-- or cancelled meanwhile). Kept for the record, never counted as a result.
CREATE TABLE stale_results (
  stale_id    INTEGER PRIMARY KEY,
  job_id      INTEGER NOT NULL,
  attempt     INTEGER NOT NULL,
  host        TEXT,
  reason      TEXT NOT NULL,
  detail      TEXT NOT NULL,
  received_at TEXT NOT NULL
);

-- The view users query: one row per successfully finished job (docs/results.md).
CREATE VIEW result_summary AS
SELECT s.name               AS sweep,
       s.sweep_id           AS sweep_id,
       r.job_id             AS job_id,
       h.name               AS host,
       r.device, r.model, r.mode, r.dtype, r.batch_size, r.threads,
       r.n, r.median_ms, r.mean_ms, r.stdev_ms, r.min_ms, r.max_ms,
       r.p90_ms, r.p99_ms, r.iqr_ms, r.noisy,
       r.throughput_per_s, r.peak_rss_mb, r.effective_threads,
       r.attempt,
       r.received_at        AS finished_at
FROM results r
JOIN jobs j   ON j.job_id = r.job_id
JOIN sweeps s ON s.sweep_id = j.sweep_id
JOIN hosts h  ON h.host_id = r.host_id
WHERE r.ok = 1;

-- Failed jobs with their reason (a crash, a timeout, a rejected spec).
CREATE VIEW job_failures AS
SELECT s.name AS sweep, j.sweep_id, j.job_id, h.name AS host, j.attempts, j.error,
       j.spec, j.finished_at
FROM jobs j
JOIN sweeps s ON s.sweep_id = j.sweep_id
LEFT JOIN hosts h ON h.host_id = j.host_id
WHERE j.state = 'failed';
