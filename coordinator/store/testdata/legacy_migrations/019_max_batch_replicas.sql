-- The largest batch that fits (a sweep's "search": {"max_batch": {"memory_mb": M}},
-- schemas/worker.md): one row per search, the batch it found and that batch's figures.
-- A search result's batch_size column is already the batch found (its median_ms and
-- throughput_per_s are measured at it); start_batch is where the search began.
--   memory_mb    the budget asked for: on a CPU MiB of address space above
--                baseline_mb, the warm worker's own; not applied on a GPU (limit
--                'device': the device's memory bounded it)
--   probes       how many batches were tried
CREATE VIEW max_batch_fit AS
SELECT s.sweep_id, s.job_id, s.host, s.device, s.model, s.model_args, s.mode, s.dtype, s.threads,
       s.max_batch_memory_mb AS memory_mb,
       json_extract(r.detail, '$.search.limit') AS limit_kind,
       s.max_batch_baseline_mb AS baseline_mb,
       s.max_batch, coalesce(CAST(json_extract(j.spec, '$.batch_size') AS INTEGER), 1) AS start_batch,
       s.median_ms, s.throughput_per_s, s.peak_rss_mb,
       json_array_length(json_extract(r.detail, '$.search.probes')) AS probes
FROM result_summary s
JOIN results r ON r.job_id = s.job_id
JOIN jobs j ON j.job_id = s.job_id
WHERE s.max_batch IS NOT NULL;

-- Processes or threads? A CPU job of one process (replicas 1) or of several replicas (P
-- independent copies of `threads` threads each, on disjoint CPUs of one agent, timed
-- while all run), so that the splits of the same cores sit side by side:
--   cores                       replicas x threads
--   aggregate_throughput_per_s  all copies' samples/s together (one process: its own)
--   replica_median_ms           each copy's latency: the mean of their median_ms (their
--                               own rows are in result_ranks); slowest_median_ms the worst
-- e.g. SELECT * FROM replica_scaling WHERE cores = 2 ORDER BY model, batch_size, replicas
CREATE VIEW replica_scaling AS
SELECT s.sweep_id, s.job_id, s.host, s.model, s.model_args, s.mode, s.dtype, s.batch_size,
       coalesce(s.replicas, 1) AS replicas, s.threads,
       coalesce(s.replicas, 1) * s.threads AS cores,
       coalesce(s.aggregate_throughput_per_s, s.throughput_per_s) AS aggregate_throughput_per_s,
       coalesce((SELECT avg(rr.median_ms) FROM result_ranks rr WHERE rr.job_id = s.job_id), s.median_ms)
         AS replica_median_ms,
       coalesce(s.replica_median_ms_max, s.median_ms) AS slowest_median_ms,
       s.replicas_overlap_s AS overlap_s, s.noisy
FROM result_summary s
WHERE s.device = 'cpu' AND coalesce(s.world_size, 1) = 1;
