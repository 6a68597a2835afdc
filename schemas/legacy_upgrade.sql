-- Converting a store made before the baseline (schemas/README.md, Stores from before the
-- baseline): what the old numbered steps 001..025 did to rows, for a store that stopped
-- at any of them. Run once, by sqlite/schema.cc, after every table of the baseline
-- was created anew and filled with the old tables' rows column by column, and before
-- the baseline's indexes and triggers exist again. Each statement changes only rows
-- that an old step never reached, so it is a no-op on a store at old version 25.
-- Ordered as the old steps were: requirements before the counts keyed by them.

-- Old step 003: jobs stored before requirements existed get theirs, shared by the jobs
-- that need the same (kind, pinned agent, the sweep's select, the job's device).
INSERT OR IGNORE INTO requirements(kind, pinned_host, select_json, device)
SELECT DISTINCT j.kind, COALESCE(j.pinned_host, ''),
       COALESCE(json_extract(s.spec, '$.select'), '{}'),
       COALESCE(json_extract(j.spec, '$.device'), '')
FROM jobs j JOIN sweeps s ON s.sweep_id = j.sweep_id
WHERE j.requirement_id IS NULL;

UPDATE jobs SET requirement_id = (
  SELECT r.requirement_id FROM requirements r JOIN sweeps s ON s.sweep_id = jobs.sweep_id
  WHERE r.kind = jobs.kind AND r.pinned_host = COALESCE(jobs.pinned_host, '')
    AND r.select_json = COALESCE(json_extract(s.spec, '$.select'), '{}')
    AND r.device = COALESCE(json_extract(jobs.spec, '$.device'), ''))
WHERE requirement_id IS NULL;

-- Old step 005: one row per sample, in a table `samples` (now the view over
-- result_samples), packed into one BLOB per result by benchfleet_pack_samples
-- (coordinator/store/sample_blob.h). A later store has no such table: an empty one stands in.
CREATE TABLE IF NOT EXISTS samples (job_id INTEGER NOT NULL, idx INTEGER NOT NULL, ms REAL NOT NULL);
INSERT INTO result_samples(job_id, n, ms_f32le)
  SELECT job_id, count(*), benchfleet_pack_samples(idx, ms) FROM samples GROUP BY job_id;
DROP TABLE samples;

-- Old step 006: each result carries its sweep.
UPDATE results SET sweep_id = (SELECT j.sweep_id FROM jobs j WHERE j.job_id = results.job_id)
WHERE sweep_id IS NULL;

-- Old step 007: the job counts, for a store that had none yet (one that had them brought
-- them over as they were, rows whose n fell to 0 included).
INSERT INTO job_counts(sweep_id, requirement_id, state, n)
  SELECT sweep_id, coalesce(requirement_id, 0), state, COUNT(*) FROM jobs
  WHERE NOT EXISTS (SELECT 1 FROM job_counts)
  GROUP BY 1, 2, 3;

-- Old step 008: a late result recorded once per attempt and agent, the first copy kept
-- (the unique index stale_results_once comes after this).
DELETE FROM stale_results WHERE stale_id NOT IN (
  SELECT MIN(stale_id) FROM stale_results GROUP BY job_id, attempt, host);

-- Old step 016: the integer key of each result's series, the first 60 bits of its
-- SHA-256 (results.series, 64 hex digits), as coordinator/core/fingerprint.h SeriesKeyOf
-- computes it for a new result.
UPDATE results SET series_key =
  ((instr('0123456789abcdef', substr(series, 1, 1)) - 1) << 56) |
  ((instr('0123456789abcdef', substr(series, 2, 1)) - 1) << 52) |
  ((instr('0123456789abcdef', substr(series, 3, 1)) - 1) << 48) |
  ((instr('0123456789abcdef', substr(series, 4, 1)) - 1) << 44) |
  ((instr('0123456789abcdef', substr(series, 5, 1)) - 1) << 40) |
  ((instr('0123456789abcdef', substr(series, 6, 1)) - 1) << 36) |
  ((instr('0123456789abcdef', substr(series, 7, 1)) - 1) << 32) |
  ((instr('0123456789abcdef', substr(series, 8, 1)) - 1) << 28) |
  ((instr('0123456789abcdef', substr(series, 9, 1)) - 1) << 24) |
  ((instr('0123456789abcdef', substr(series, 10, 1)) - 1) << 20) |
  ((instr('0123456789abcdef', substr(series, 11, 1)) - 1) << 16) |
  ((instr('0123456789abcdef', substr(series, 12, 1)) - 1) << 12) |
  ((instr('0123456789abcdef', substr(series, 13, 1)) - 1) << 8) |
  ((instr('0123456789abcdef', substr(series, 14, 1)) - 1) << 4) |
  ((instr('0123456789abcdef', substr(series, 15, 1)) - 1) << 0)
WHERE series IS NOT NULL AND series_key IS NULL;

-- Old step 024: each regression candidate carries the sweep it was first seen on.
UPDATE regressions SET sweep_id = (SELECT j.sweep_id FROM jobs j WHERE j.job_id = regressions.job_id)
WHERE sweep_id IS NULL;
