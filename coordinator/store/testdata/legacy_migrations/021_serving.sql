-- The serving scenarios (a sweep's `scenario` axis, schemas/worker.md, Scenarios): one
-- row per single_stream or server result, per model, host and threads. Latencies run
-- from a query's arrival to its batch's completion, queueing included; offline_ms is
-- the same job's median time of one batch at max_batch (its service time). An invalid
-- run (shorter than min_duration_s or min_queries, or queries left unserved) failed its
-- job: it has no result and no row here.
--   max_qps_within_slo  with slo_p99_ms: the highest Poisson rate whose p99 met it
-- e.g. SELECT host, threads, max_qps_within_slo FROM serving
--      WHERE model = 'mlp' AND slo_p99_ms = 5 ORDER BY host, threads
CREATE VIEW serving AS
SELECT s.sweep_id, s.job_id, s.host, s.device, s.model, s.model_args, s.dtype, s.threads,
       s.scenario, s.serving_max_batch AS max_batch, s.serving_max_wait_ms AS max_wait_ms,
       s.target_qps, s.achieved_qps,
       s.serving_p50_ms AS p50_ms, s.serving_p90_ms AS p90_ms, s.serving_p99_ms AS p99_ms,
       s.serving_queries AS queries, s.serving_batches AS batches,
       s.serving_mean_batch AS mean_batch, s.slo_p99_ms, s.max_qps_within_slo,
       s.median_ms AS offline_ms
FROM result_summary s
WHERE s.scenario IS NOT NULL;
