-- A sweep's spec holds its whole matrix: a 100,000-value axis is 600 KB, kept in overflow
-- pages. SQLite finds a column by walking the record from its start, so every column
-- stored after `spec` (those added by later migrations: jobs_planned, next_combination,
-- labels, ...) cost a walk of every overflow page, and `labels`, computed from the spec
-- on each read, a parse of all 600 KB: a `status` reply over ten such sweeps spent most
-- of its time there (docs/performance.md, Status replies at fleet scale).
-- The table is rebuilt with `spec` last and `labels` stored, computed once when the row
-- is written. Columns added to sweeps from now on go in by a rebuild like this one, not
-- by ALTER TABLE ADD COLUMN, which would put them after `spec` again
-- (coordinator/store_test.cc checks that `spec` is last).
-- Migrations run with foreign keys unenforced (coordinator/store.cc), as SQLite's own
-- procedure for a rebuild asks; jobs and results keep referring to the same sweep_ids.
CREATE TABLE sweeps_rebuilt (
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
INSERT INTO sweeps_rebuilt (sweep_id, name, state, created_at, finished_at, submission_id,
                            jobs_planned, next_combination, pinned, schedule_id, schedule_slot, spec)
SELECT sweep_id, name, state, created_at, finished_at, submission_id,
       jobs_planned, next_combination, pinned, schedule_id, schedule_slot, spec
FROM sweeps;
DROP TABLE sweeps;
-- The views that read sweeps name it, not the new table: the legacy rename leaves them as
-- they are (the current one would check them against a schema without sweeps, and fail).
PRAGMA legacy_alter_table = ON;
ALTER TABLE sweeps_rebuilt RENAME TO sweeps;
PRAGMA legacy_alter_table = OFF;
CREATE UNIQUE INDEX sweeps_by_submission ON sweeps(submission_id) WHERE submission_id IS NOT NULL;
CREATE UNIQUE INDEX sweeps_by_schedule_slot ON sweeps(schedule_id, schedule_slot)
  WHERE schedule_id IS NOT NULL;
