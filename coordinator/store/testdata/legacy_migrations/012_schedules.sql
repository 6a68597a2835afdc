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

-- Each firing's sweep, tagged with its schedule and slot: one sweep per slot.
ALTER TABLE sweeps ADD COLUMN schedule_id INTEGER REFERENCES schedules(schedule_id);
ALTER TABLE sweeps ADD COLUMN schedule_slot TEXT;
CREATE UNIQUE INDEX sweeps_by_schedule_slot ON sweeps(schedule_id, schedule_slot)
  WHERE schedule_id IS NOT NULL;

-- The history people read: every slot's outcome with its sweep and how that sweep went.
CREATE VIEW schedule_history AS
SELECT sc.name AS schedule, f.slot, f.outcome, f.reason, f.decided_at,
       sw.sweep_id, sw.state AS sweep_state, sw.finished_at AS sweep_finished_at
FROM schedule_firings f
JOIN schedules sc ON sc.schedule_id = f.schedule_id
LEFT JOIN sweeps sw ON sw.schedule_id = f.schedule_id AND sw.schedule_slot = f.slot;
