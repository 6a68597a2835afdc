-- CPU vs GPU as in 002, paired strictly: a GPU result against the CPU result of the same
-- host, sweep and configuration, that is the job's whole spec but its device and threads
-- (model, model arguments, mode, dtype, batch size, inter-op threads, oneDNN,
-- omp_wait_policy, timing, and every technique: profile, checkpointing, parallel,
-- prune, reference, replicas, scenario, search), and the batch size the result ran (a
-- search's is the batch it found). Each side is its configuration's fastest result that
-- is not noisy: the CPU at its best thread count, the GPU at its own (ties: fewer
-- threads, then the earlier job). One row per configuration and GPU device; a
-- configuration whose results on one side are all noisy has no row. speedup > 1: the
-- GPU is faster.
DROP VIEW cpu_gpu_speedup;
CREATE VIEW cpu_gpu_speedup AS
SELECT c.sweep_id, c.host, c.model, c.model_args, c.mode, c.dtype, c.batch_size,
       c.threads AS cpu_threads, g.device AS gpu_device,
       c.median_ms AS cpu_median_ms, g.median_ms AS gpu_median_ms,
       c.median_ms / g.median_ms AS speedup,
       c.throughput_per_s AS cpu_throughput_per_s, g.throughput_per_s AS gpu_throughput_per_s,
       g.threads AS gpu_threads, c.job_id AS cpu_job_id, g.job_id AS gpu_job_id
FROM result_summary c
JOIN jobs cj ON cj.job_id = c.job_id
JOIN result_summary g
  ON g.sweep_id = c.sweep_id AND g.host = c.host AND g.model = c.model
 AND g.model_args IS c.model_args AND g.mode = c.mode AND g.dtype = c.dtype
 AND g.batch_size = c.batch_size AND g.device LIKE 'cuda%'
JOIN jobs gj ON gj.job_id = g.job_id
 AND json_remove(gj.spec, '$.device', '$.threads') = json_remove(cj.spec, '$.device', '$.threads')
WHERE c.device = 'cpu'
  AND c.median_ms IS NOT NULL AND coalesce(c.noisy, 0) = 0
  AND g.median_ms IS NOT NULL AND coalesce(g.noisy, 0) = 0
  -- no faster result of the same configuration on the same device, on either side
  AND NOT EXISTS (
    SELECT 1 FROM result_summary f JOIN jobs fj ON fj.job_id = f.job_id
    WHERE f.sweep_id = c.sweep_id AND f.host = c.host AND f.model = c.model
      AND f.mode = c.mode AND f.batch_size = c.batch_size AND f.dtype = c.dtype
      AND f.device = c.device AND f.median_ms IS NOT NULL AND coalesce(f.noisy, 0) = 0
      AND (f.median_ms < c.median_ms OR (f.median_ms = c.median_ms AND
           (f.threads < c.threads OR (f.threads = c.threads AND f.job_id < c.job_id))))
      AND json_remove(fj.spec, '$.device', '$.threads') = json_remove(cj.spec, '$.device', '$.threads'))
  AND NOT EXISTS (
    SELECT 1 FROM result_summary f JOIN jobs fj ON fj.job_id = f.job_id
    WHERE f.sweep_id = g.sweep_id AND f.host = g.host AND f.model = g.model
      AND f.mode = g.mode AND f.batch_size = g.batch_size AND f.dtype = g.dtype
      AND f.device = g.device AND f.median_ms IS NOT NULL AND coalesce(f.noisy, 0) = 0
      AND (f.median_ms < g.median_ms OR (f.median_ms = g.median_ms AND
           (f.threads < g.threads OR (f.threads = g.threads AND f.job_id < g.job_id))))
      AND json_remove(fj.spec, '$.device', '$.threads') = json_remove(gj.spec, '$.device', '$.threads'));
