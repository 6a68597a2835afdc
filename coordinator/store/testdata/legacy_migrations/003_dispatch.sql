-- benchfleet store, schema version 3: dispatch by requirement, idempotent submits.

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

ALTER TABLE jobs ADD COLUMN requirement_id INTEGER REFERENCES requirements(requirement_id);

INSERT OR IGNORE INTO requirements(kind, pinned_host, select_json, device)
SELECT DISTINCT j.kind, COALESCE(j.pinned_host, ''),
       COALESCE(json_extract(s.spec, '$.select'), '{}'),
       COALESCE(json_extract(j.spec, '$.device'), '')
FROM jobs j JOIN sweeps s ON s.sweep_id = j.sweep_id;

UPDATE jobs SET requirement_id = (
  SELECT r.requirement_id FROM requirements r JOIN sweeps s ON s.sweep_id = jobs.sweep_id
  WHERE r.kind = jobs.kind AND r.pinned_host = COALESCE(jobs.pinned_host, '')
    AND r.select_json = COALESCE(json_extract(s.spec, '$.select'), '{}')
    AND r.device = COALESCE(json_extract(jobs.spec, '$.device'), ''));

-- The oldest queued job of a requirement is one index probe away.
CREATE INDEX jobs_queued_by_requirement ON jobs(requirement_id, job_id) WHERE state = 'queued';

-- A client's submission id: a resend of the same submission returns the sweep stored
-- the first time instead of storing a second one.
ALTER TABLE sweeps ADD COLUMN submission_id TEXT;
CREATE UNIQUE INDEX sweeps_by_submission ON sweeps(submission_id) WHERE submission_id IS NOT NULL;
