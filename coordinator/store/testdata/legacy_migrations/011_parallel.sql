-- Jobs of several ranks (collectives, data-parallel, pipeline; schemas/worker.md).
-- A gang's result row is rank 0's (its figures are the group's); every rank's own
-- figures go to result_ranks, one row per rank. Its measured columns (median_ms,
-- comm_share, ...) are added at start from result_fields.json's "rank" list, as the
-- results table's are.
CREATE TABLE result_ranks (
  job_id INTEGER NOT NULL REFERENCES jobs(job_id),
  rank INTEGER NOT NULL,
  host_id INTEGER REFERENCES hosts(host_id),  -- the agent that ran this rank
  detail TEXT,                                -- the rank's result JSON (no raw samples)
  PRIMARY KEY (job_id, rank)
) WITHOUT ROWID;

-- Per model, host set and world size: throughput, scaling efficiency, communication
-- share, bus bandwidth, measured and theoretical bubble (docs/results.md). One row per
-- successful job of several ranks; `host_set` lists the hosts its ranks ran on.
CREATE VIEW parallel_scaling AS
SELECT s.sweep_id, s.job_id,
       (SELECT group_concat(name, ',') FROM
          (SELECT DISTINCT h.name AS name FROM result_ranks rr JOIN hosts h ON h.host_id = rr.host_id
           WHERE rr.job_id = s.job_id ORDER BY h.name)) AS host_set,
       s.model, s.model_args, s.mode,
       coalesce(s.parallel_kind, 'collective') AS kind,
       s.world_size, s.batch_size, s.threads,
       CAST(json_extract(s.model_args, '$.bytes') AS INTEGER) AS bytes,
       s.median_ms, s.step_p95_ms,
       s.samples_per_s, s.baseline_samples_per_s, s.scaling_efficiency,
       s.comm_share, s.allreduce_bytes_per_step,
       coalesce(s.busbw_gbps, s.comm_busbw_gbps) AS busbw_gbps, s.algbw_gbps,
       s.speedup_vs_unsplit, s.pipeline_schedule, s.micro_batches, s.bubble, s.bubble_theory, s.bytes_between_stages,
       s.overlap_share
FROM result_summary s
WHERE s.world_size > 1;
