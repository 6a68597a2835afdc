-- A large sweep is answered as soon as it is checked and its row stored; its jobs go
-- into `jobs` a slice per coordinator round after that, so that the coordinator keeps
-- serving everyone else meanwhile, and after a restart they go on from where they
-- stopped.
--   jobs_planned      how many jobs the sweep has once all are stored (NULL on sweeps
--                     stored before this migration: they were stored whole)
--   next_combination  the first combination of the matrix whose jobs are not stored
--                     yet; NULL once every one is (or the sweep was cancelled)
--   pinned            placement "each": the agents of each device, JSON, fixed when the
--                     sweep was accepted, so that the last slice goes where the first went
ALTER TABLE sweeps ADD COLUMN jobs_planned INTEGER;
ALTER TABLE sweeps ADD COLUMN next_combination INTEGER;
ALTER TABLE sweeps ADD COLUMN pinned TEXT;
