-- Which of an agent's workers may run a job (common/job_needs.h, WorkerNeeds): an agent
-- may carry several, each built against another LibTorch (`benchfleet-agent --worker A
-- --worker B`). Computed once when the job is stored, read by the dispatcher with the
-- job, carried in its offer (schemas/protocol.md, `job`.`needs`); '' asks nothing.
--   torch      the job's `torch`: a prefix of the worker's torch version ("2.15")
--   torch_min  the oldest torch that runs it: an AOTInductor package's own
--   technique  a technique the worker must run: "torchscript" or "aoti"
-- Jobs stored before this step asked nothing of the worker: they keep ''.
ALTER TABLE jobs ADD COLUMN torch TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN torch_min TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN technique TEXT NOT NULL DEFAULT '';
