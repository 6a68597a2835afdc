-- benchfleet store, schema version 1: every table, index and trigger (schemas/README.md).
-- Applied once by the coordinator to a new store; the numbered migrations after it
-- change it from there (PRAGMA user_version is the number of the last one applied).
-- Not here:
--   * the measured columns of results, calibrations and result_ranks: one per field
--     declared in schemas/result_fields.json, added after this file's columns, in
--     declaration order, right after this step and at every start for fields declared
--     since (coordinator/store/schema.cc);
--   * the views, recreated at every start from schemas/views.sql.
-- Times are UTC ISO 8601 text ("2026-11-29T15:17:21.123Z"), which sorts correctly.

-- One row per agent name. capabilities is the JSON the agent registered with (host
-- probe, LibTorch build, GPUs); it is replaced on every registration.
-- fingerprint is a SHA-256 of the stable facts of the host's hardware and software
-- (fingerprint_parts, as JSON): CPU model, logical CPUs, memory, GPU models and count,
-- NVIDIA driver, CUDA, LibTorch, BLAS and its configuration, benchfleet's version. Not
-- the clock speed, which drifts between boots. Computed when the agent registers
-- (docs/regressions.md).
CREATE TABLE hosts (
  host_id      INTEGER PRIMARY KEY,
  name         TEXT NOT NULL UNIQUE,
  machine_id   TEXT,
  tags         TEXT NOT NULL DEFAULT '[]',
  capabilities TEXT NOT NULL DEFAULT '{}',
  first_seen   TEXT NOT NULL,
  last_seen    TEXT NOT NULL,
  fingerprint       TEXT,
  fingerprint_parts TEXT
);
-- The coordinator asks per machine, every minute for every registered machine, whether
-- a calibration is pending and how old the latest is: lookups, not scans.
CREATE INDEX hosts_by_machine ON hosts(machine_id);

-- Schedules: a sweep file submitted by the coordinator itself at each slot of a cron
-- expression in an IANA time zone (docs/schedules.md).
--   sweep             the sweep file as added (JSON), submitted again at each slot
--   overlap           'skip': a slot that comes while this schedule's last sweep still
--                     runs is recorded as skipped; 'queue': its sweep is stored anyway
--                     and its jobs wait behind the running ones
--   start_deadline_s  how late after its slot a firing may still start (after
--                     downtime); NULL: one period of the schedule
--   handled_until     the latest slot already fired, skipped or recorded missed (UTC ISO
--                     8601): the slots after it are the ones still to handle
--   removed_at        set by `schedule remove`; its history stays
CREATE TABLE schedules (
  schedule_id      INTEGER PRIMARY KEY,
  name             TEXT NOT NULL,
  cron             TEXT NOT NULL,
  tz               TEXT NOT NULL DEFAULT 'UTC',
  sweep            TEXT NOT NULL,
  overlap          TEXT NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip', 'queue')),
  start_deadline_s REAL,
  created_at       TEXT NOT NULL,
  handled_until    TEXT NOT NULL,
  removed_at       TEXT
);
-- A name names one live schedule; a removed one's name may be used again.
CREATE UNIQUE INDEX schedules_by_name ON schedules(name) WHERE removed_at IS NULL;

-- What became of each slot: 'started' (its sweep is the one tagged with this schedule
-- and slot), 'run_now' (started by `schedule run-now`; slot is when), 'missed' (the
-- coordinator was down and a later slot came, or it is past its start deadline),
-- 'skipped' (the schedule's last sweep still ran), 'failed' (the sweep was refused,
-- e.g. no agent matched; reason says why).
CREATE TABLE schedule_firings (
  schedule_id INTEGER NOT NULL REFERENCES schedules(schedule_id),
  slot        TEXT NOT NULL,
  outcome     TEXT NOT NULL CHECK (outcome IN ('started', 'run_now', 'missed', 'skipped', 'failed')),
  decided_at  TEXT NOT NULL,
  reason      TEXT,
  UNIQUE (schedule_id, slot)
);

-- A submitted sweep file (spec, JSON) and its lifecycle.
--   submission_id     the client's id for the submission: a resend of the same
--                     submission returns the sweep stored the first time
--   jobs_planned      how many jobs the sweep has once all are stored: a large sweep is
--                     answered as soon as it is checked and its row stored, and its jobs
--                     go into `jobs` a slice per coordinator round after that (after a
--                     restart they go on from where they stopped). NULL on sweeps stored
--                     whole, before slices existed
--   next_combination  the first combination of the matrix whose jobs are not stored
--                     yet; NULL once every one is (or the sweep was cancelled)
--   pinned            placement "each": the agents of each device, JSON, fixed when the
--                     sweep was accepted, so that the last slice goes where the first went
--   schedule_id, schedule_slot  a schedule's firing: one sweep per slot
--   labels            the sweep's labels (`benchfleet submit --label commit=abc123`, or
--                     the sweep file's "labels"), a JSON object of strings ('{}' when
--                     none), computed once when the row is written; the view
--                     sweep_labels has one row per label
-- `spec` holds the whole matrix (a 100,000-value axis is 600 KB, in overflow pages) and
-- is the last column: SQLite finds a column by walking the record from its start, so a
-- column stored after `spec` costs a walk of every overflow page (docs/performance.md,
-- Status replies at fleet scale). A column added to sweeps goes in by rebuilding the
-- table, not by ALTER TABLE ADD COLUMN, which would put it after `spec`
-- (coordinator/store/schema_test.cc checks that `spec` is last).
CREATE TABLE sweeps (
  sweep_id         INTEGER PRIMARY KEY,
  name             TEXT NOT NULL,
  state            TEXT NOT NULL DEFAULT 'running'
                   CHECK (state IN ('running', 'done', 'cancelled')),
  created_at       TEXT NOT NULL,
  finished_at      TEXT,
  submission_id    TEXT,
  jobs_planned     INTEGER,
  next_combination INTEGER,
  pinned           TEXT,
  schedule_id      INTEGER REFERENCES schedules(schedule_id),
  schedule_slot    TEXT,
  labels           TEXT GENERATED ALWAYS AS (coalesce(json_extract(spec, '$.labels'), '{}')) STORED,
  spec             TEXT NOT NULL
);
CREATE UNIQUE INDEX sweeps_by_submission ON sweeps(submission_id) WHERE submission_id IS NOT NULL;
CREATE UNIQUE INDEX sweeps_by_schedule_slot ON sweeps(schedule_id, schedule_slot)
  WHERE schedule_id IS NOT NULL;

-- What a job needs of an agent, shared by the jobs that need the same: the sweep's
-- select, the job's device, the agent it is pinned to ('' when none) and its kind. The
-- dispatcher matches an agent against requirements, not against jobs, then takes the
-- oldest queued job of the requirements it matches (docs/scheduling.md).
CREATE TABLE requirements (
  requirement_id INTEGER PRIMARY KEY,
  kind           TEXT NOT NULL DEFAULT 'benchmark',
  pinned_host    TEXT NOT NULL DEFAULT '',
  select_json    TEXT NOT NULL DEFAULT '{}',
  device         TEXT NOT NULL DEFAULT '',
  UNIQUE (kind, pinned_host, select_json, device)
);

-- One row per combination and placement. pinned_host names the agent a job must run
-- on (placement "each"); NULL lets any agent matching the sweep's select take it.
-- attempts counts hand-outs; host_id is where the latest attempt went. Jobs are
-- benchmarks or host calibrations (the latter run like any job, one machine at a time,
-- so a calibration is never disturbed by a benchmark on the same machine).
-- confirms_job_id: a job run again to confirm a candidate regression names the
-- candidate's job; its result is not judged itself.
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
  finished_at TEXT,
  kind        TEXT NOT NULL DEFAULT 'benchmark'
              CHECK (kind IN ('benchmark', 'calibration')),
  requirement_id  INTEGER REFERENCES requirements(requirement_id),
  confirms_job_id INTEGER REFERENCES jobs(job_id)
);
CREATE INDEX jobs_by_state ON jobs(state, job_id);
CREATE INDEX jobs_by_sweep ON jobs(sweep_id, state);
-- The oldest queued job of a requirement is one index probe away.
CREATE INDEX jobs_queued_by_requirement ON jobs(requirement_id, job_id) WHERE state = 'queued';
-- "Is a calibration pending on this machine?" without scanning a long queue (1,000
-- machines x 100,000 queued jobs stalled the loop for minutes). Calibration jobs alone:
-- indexing every job by kind cost each benchmark two more index updates per state
-- change, on the path every result takes.
CREATE INDEX calibration_jobs_by_state ON jobs(state, pinned_host) WHERE kind = 'calibration';
CREATE INDEX jobs_by_confirmed ON jobs(confirms_job_id) WHERE confirms_job_id IS NOT NULL;

-- How many jobs each sweep has in each state, per requirement, kept by the triggers
-- below as jobs are added and change state. `status` reads these few rows instead of
-- counting a sweep's jobs (on a 100,000-job sweep under load, counting took most of the
-- coordinator's time between results), and "is this sweep finished?" after each
-- result is one lookup. The triggers are the only writers: any change to jobs, by the
-- coordinator or by hand, keeps the counts true. Rows whose n fell to 0 stay.
CREATE TABLE job_counts (
  sweep_id       INTEGER NOT NULL,
  requirement_id INTEGER NOT NULL,
  state          TEXT NOT NULL,
  n              INTEGER NOT NULL,
  PRIMARY KEY (sweep_id, requirement_id, state)
) WITHOUT ROWID;

CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN
  INSERT INTO job_counts(sweep_id, requirement_id, state, n)
    VALUES (new.sweep_id, coalesce(new.requirement_id, 0), new.state, 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_update AFTER UPDATE OF state, sweep_id, requirement_id ON jobs
WHEN old.state IS NOT new.state OR old.sweep_id IS NOT new.sweep_id
     OR old.requirement_id IS NOT new.requirement_id BEGIN
  UPDATE job_counts SET n = n - 1 WHERE sweep_id = old.sweep_id
    AND requirement_id = coalesce(old.requirement_id, 0) AND state = old.state;
  INSERT INTO job_counts(sweep_id, requirement_id, state, n)
    VALUES (new.sweep_id, coalesce(new.requirement_id, 0), new.state, 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN
  UPDATE job_counts SET n = n - 1 WHERE sweep_id = old.sweep_id
    AND requirement_id = coalesce(old.requirement_id, 0) AND state = old.state;
END;

-- The accepted result of a job: at most one per job (the primary key is the fence).
-- ok = 0 rows are failed jobs with their reason in error. detail keeps the whole result
-- JSON (runtime, library versions, thread settings) except the raw samples. The job's
-- configuration (device ... model_args) is the coordinator's own, from the job it
-- handed out, never the result's. model_args is the canonical JSON of the model's
-- arguments; onednn 1 when oneDNN was enabled; peak_gflops the calibrated peak
-- fraction_of_peak = gflops / peak_gflops refers to (docs/results.md).
-- fingerprint is the host's when the result was stored, series one job configuration
-- (the job's spec, canonical JSON) on one fingerprint: a changed fingerprint starts a
-- new series, a baseline reset, not a regression. series_key is the first 60 bits of
-- the series' SHA-256 as an integer: with the 64-character text as the index key, a
-- store where most results start a series grew an index of random keys past the page
-- cache, and each stored result cost a read of a page no longer cached; an integer key
-- is a quarter of the size. Two series that share a key (less than one chance in a
-- million among a million series) stay apart: the baseline query compares `series` too.
-- Then one column per measured field of schemas/result_fields.json ("result" list).
CREATE TABLE results (
  job_id           INTEGER PRIMARY KEY REFERENCES jobs(job_id),
  attempt          INTEGER NOT NULL,
  host_id          INTEGER NOT NULL REFERENCES hosts(host_id),
  ok               INTEGER NOT NULL,
  device           TEXT,
  model            TEXT,
  mode             TEXT,
  dtype            TEXT,
  batch_size       INTEGER,
  threads          INTEGER,
  error            TEXT,
  detail           TEXT NOT NULL,
  received_at      TEXT NOT NULL,
  model_args       TEXT,
  interop_threads  INTEGER,
  onednn           INTEGER,
  peak_gflops      REAL,
  fraction_of_peak REAL,
  sweep_id         INTEGER REFERENCES sweeps(sweep_id),
  fingerprint      TEXT,
  series           TEXT,
  series_key       INTEGER
);
-- Queries over a year of nights (1,000,000 results) must be lookups, not scans
-- (docs/performance.md, Storage). The comparison views pair results of the same sweep,
-- host and configuration: with the sweep on the result itself, one index finds a
-- result's partner. A host's history of a model is the second lookup users make, a
-- series' baseline (before storing each result) the third.
CREATE INDEX results_by_sweep_series ON results(sweep_id, host_id, model, mode, batch_size, dtype);
CREATE INDEX results_by_host_series ON results(host_id, model, mode, batch_size, dtype);
CREATE INDEX results_by_series_key ON results(series_key, job_id);

-- Raw samples, compactly: one row per result (one row per sample stored ~850 MB in a
-- 10,000-job night). ms_f32le holds the samples in the order taken, each a float32 in
-- little-endian byte order (coordinator/store/sample_blob.h, docs/results.md); the view
-- `samples` unpacks them in plain SQL. A result without a row here has no raw samples:
-- a failed job, or samples dropped by `benchfleet prune`.
CREATE TABLE result_samples (
  job_id   INTEGER PRIMARY KEY REFERENCES results(job_id),
  n        INTEGER NOT NULL,   -- number of samples: length(ms_f32le) / 4
  ms_f32le BLOB NOT NULL
);

-- Jobs of several ranks (collectives, data-parallel, pipeline; schemas/worker.md) and
-- of several replicas. A gang's result row is rank 0's (its figures are the group's);
-- every rank's own figures go here, one row per rank: rank, then one column per field
-- of schemas/result_fields.json's "rank" list (rank's own column is this one, part of
-- the key).
CREATE TABLE result_ranks (
  job_id INTEGER NOT NULL REFERENCES jobs(job_id),
  rank INTEGER NOT NULL,
  host_id INTEGER REFERENCES hosts(host_id),  -- the agent that ran this rank
  detail TEXT,                                -- the rank's result JSON (no raw samples)
  PRIMARY KEY (job_id, rank)
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
-- A late result is recorded once per attempt and agent. An agent resends a result
-- until it is acknowledged, so a resend that crosses the first ack arrives again; for
-- a stored result that is a "duplicate" and writes nothing, and a stale one is the same.
CREATE UNIQUE INDEX stale_results_once ON stale_results(job_id, attempt, host);

-- One row per calibration run of a host: the physical limits fraction_of_peak refers
-- to. gpus holds per GPU its GEMM peaks and bandwidth (JSON); then one column per field
-- of schemas/result_fields.json's "calibration" list (GEMM peaks, STREAM triad,
-- theoretical peaks).
CREATE TABLE calibrations (
  calibration_id INTEGER PRIMARY KEY,
  host_id        INTEGER NOT NULL REFERENCES hosts(host_id),
  job_id         INTEGER REFERENCES jobs(job_id),
  gpus           TEXT NOT NULL DEFAULT '[]',
  detail         TEXT NOT NULL,
  measured_at    TEXT NOT NULL
);
CREATE INDEX calibrations_by_host ON calibrations(host_id, calibration_id);

-- A profiled job's top operators by self time over the block the profiler recorded
-- after timing (profile_iterations iterations; the result's op_profile): one row per
-- operator. calls and the times are over the whole block; input_shapes (JSON) are
-- those of the calls that took the most self time.
CREATE TABLE op_profile (
  job_id       INTEGER NOT NULL REFERENCES jobs(job_id),
  op           TEXT NOT NULL,
  calls        INTEGER NOT NULL,
  self_us      REAL NOT NULL,
  total_us     REAL NOT NULL,
  input_shapes TEXT NOT NULL,
  PRIMARY KEY (job_id, op)
) WITHOUT ROWID;

-- One row per regression candidate (docs/regressions.md): a result beyond its series'
-- baseline by both tests (robust z-score and relative change). state: 'candidate' while
-- its reruns run, then 'confirmed' (the reruns' median is beyond the baseline the same
-- way) or 'noise'. A confirmed one is a change point, reported once: the judged
-- result's median interval (which widened the noise its change was measured against)
-- and the sweep it was first seen on are kept with it, and it starts its series'
-- baseline anew.
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
  reason             TEXT,
  median_ci_low_ms   REAL,
  median_ci_high_ms  REAL,
  sweep_id           INTEGER REFERENCES sweeps(sweep_id)
);
-- The baseline lookup asks for the series' latest confirmed change; "is a candidate of
-- this series still open?" is asked before judging.
CREATE INDEX regressions_confirmed_by_series ON regressions(series, job_id) WHERE state = 'confirmed';
CREATE INDEX regressions_open_by_series ON regressions(series) WHERE state = 'candidate';

-- `benchfleet baseline reset`: a known step. Results before it leave the baseline of
-- the series it covers (every series on `host`, of `model`, or both; NULL: any).
CREATE TABLE baseline_resets (
  reset_id INTEGER PRIMARY KEY,
  host     TEXT,
  model    TEXT,
  at       TEXT NOT NULL,
  note     TEXT
);

-- What a host costs (docs/results.md, Cost): its price per hour, with the currency and
-- the time it was set. A price is set by the agent's --price-per-hour when it registers
-- (recorded when it differs from the last price that agent sent) or by `benchfleet host
-- set-price`; the newest row of a host is its price, and older rows stay as history.
CREATE TABLE host_prices (
  price_id  INTEGER PRIMARY KEY,
  host_id   INTEGER NOT NULL REFERENCES hosts(host_id),
  per_hour  REAL NOT NULL CHECK (per_hour >= 0),
  currency  TEXT NOT NULL,
  set_at    TEXT NOT NULL,
  source    TEXT NOT NULL CHECK (source IN ('agent', 'cli'))
);
CREATE INDEX host_prices_by_host ON host_prices(host_id, price_id);
