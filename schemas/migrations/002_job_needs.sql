-- What each job asks of the fleet (common/job_needs.h, JobNeeds): computed once from
-- its spec when the job is stored, read by the dispatcher with the job, and carried in
-- its offer (schemas/protocol.md, `job`.`needs`), so that no hop after intake parses a
-- spec to learn it.
--   world_size       the ranks of a gang; 1 for one process or independent replicas
--   spread           1: each rank on an agent of its own (placement "spread")
--   local_processes  the worker processes an agent starts for it
--   replicated       1: those processes are independent copies (replicas), not ranks
--   local_cpus       the CPUs they need together on one agent (0: one process)
ALTER TABLE jobs ADD COLUMN world_size INTEGER NOT NULL DEFAULT 1 CHECK (world_size >= 1);
ALTER TABLE jobs ADD COLUMN spread INTEGER NOT NULL DEFAULT 0 CHECK (spread IN (0, 1));
ALTER TABLE jobs ADD COLUMN local_processes INTEGER NOT NULL DEFAULT 1 CHECK (local_processes >= 1);
ALTER TABLE jobs ADD COLUMN replicated INTEGER NOT NULL DEFAULT 0 CHECK (replicated IN (0, 1));
ALTER TABLE jobs ADD COLUMN local_cpus INTEGER NOT NULL DEFAULT 0 CHECK (local_cpus >= 0);

-- The jobs stored before this step, by the same rule as NeedsOf (common/job_needs.cc).
-- Only a spec that asks for more than one process differs from the defaults; a spec
-- that is not JSON keeps them (CASE, not AND: SQLite need not test json_valid first).
UPDATE jobs SET world_size = CASE
    WHEN json_extract(spec, '$.distributed.world_size') IS NOT NULL
      THEN json_extract(spec, '$.distributed.world_size')
    WHEN json_extract(spec, '$.parallel.in_process') = 1 THEN 1  -- the stages are GPUs
    ELSE COALESCE(json_extract(spec, '$.parallel.world_size'), json_extract(spec, '$.parallel.stages'), 1)
  END
  WHERE CASE WHEN json_valid(spec) THEN json_type(spec, '$.parallel') = 'object' OR
                                        json_type(spec, '$.distributed') = 'object' END;
UPDATE jobs SET spread = 1
  WHERE world_size > 1 AND json_extract(spec, '$.placement') IS 'spread' AND
        json_type(spec, '$.distributed') IS NULL;
UPDATE jobs SET replicated = 1, local_processes = json_extract(spec, '$.replicas')
  WHERE CASE WHEN json_valid(spec) THEN json_type(spec, '$.replicas') = 'integer' AND
                                        json_extract(spec, '$.replicas') > 1 END;
UPDATE jobs SET local_processes = world_size
  WHERE world_size > 1 AND spread = 0 AND json_type(spec, '$.distributed') IS NULL;
UPDATE jobs SET local_cpus = local_processes * json_extract(spec, '$.threads')
  WHERE local_processes > 1 AND json_type(spec, '$.threads') = 'integer';
