-- Two techniques a job may add (schemas/worker.md): profile and checkpointing.
--
-- A profiled job's top operators by self time over the block the profiler recorded
-- after timing (profile_iterations iterations; the result's op_profile): one row per
-- operator. calls and the times are over the whole block; input_shapes (JSON) are
-- those of the calls that took the most self time.
CREATE TABLE op_profile (
  job_id       INTEGER NOT NULL REFERENCES jobs(job_id),
  op           TEXT NOT NULL,
  calls        INTEGER NOT NULL,
  self_us      REAL NOT NULL,
  total_us     REAL NOT NULL,
  input_shapes TEXT NOT NULL,
  PRIMARY KEY (job_id, op)
) WITHOUT ROWID;

-- The same model's operators across devices, dtypes and threads: which operations gain
-- from a GPU, from int8, from more threads. Every profiled result's operators, each
-- against the same operator in its baseline: the result of the same sweep, host,
-- model, arguments, mode, batch size, inter-op threads, oneDNN setting and
-- checkpointing on device cpu in fp32 with the fewest threads. Times are per iteration
-- (the block's, over profile_iterations) and per call; speedup = baseline self time per
-- iteration / this one. An operator the baseline does not list (int8's quantized ops,
-- or one outside its top 20) has no baseline figures.
CREATE VIEW op_comparison AS
WITH p AS (
  SELECT s.sweep_id, s.job_id, s.host, s.device, s.model, coalesce(s.model_args, '{}') AS model_args,
         s.mode, s.batch_size, s.dtype, s.threads, s.interop_threads, s.onednn,
         coalesce(json_extract(j.spec, '$.checkpointing'), 0) AS checkpointing,
         s.profile_iterations, o.op, o.calls, o.self_us, o.total_us, o.input_shapes
  FROM op_profile o JOIN result_summary s ON s.job_id = o.job_id JOIN jobs j ON j.job_id = o.job_id
),
runs AS (
  SELECT DISTINCT sweep_id, job_id, host, device, model, model_args, mode, batch_size, dtype, threads,
         interop_threads, onednn, checkpointing
  FROM p
),
base AS (
  SELECT r.job_id,
         (SELECT b.job_id FROM runs b
          WHERE b.sweep_id = r.sweep_id AND b.host = r.host AND b.model = r.model
            AND b.model_args = r.model_args AND b.mode = r.mode AND b.batch_size = r.batch_size
            AND b.interop_threads = r.interop_threads AND b.onednn = r.onednn
            AND b.checkpointing = r.checkpointing AND b.device = 'cpu' AND b.dtype = 'fp32'
          ORDER BY b.threads, b.job_id LIMIT 1) AS base_job_id
  FROM runs r
)
SELECT v.sweep_id, v.job_id, v.host, v.model, v.model_args, v.mode, v.batch_size, v.checkpointing,
       v.device, v.dtype, v.threads, v.op, v.calls, v.input_shapes,
       v.self_us / v.profile_iterations AS self_us_per_iter,
       v.total_us / v.profile_iterations AS total_us_per_iter,
       v.self_us / v.calls AS self_us_per_call,
       bp.job_id AS base_job_id, bp.device AS base_device, bp.dtype AS base_dtype, bp.threads AS base_threads,
       bp.self_us / bp.profile_iterations AS base_self_us_per_iter,
       bp.self_us / bp.calls AS base_self_us_per_call,
       (bp.self_us / bp.profile_iterations) / (v.self_us / v.profile_iterations) AS speedup
FROM p v JOIN base ON base.job_id = v.job_id
LEFT JOIN p bp ON bp.job_id = base.base_job_id AND bp.op = v.op;

-- Activation checkpointing (mode train) against the same training job without it:
-- what it costs in time and what it saves in memory. time_ratio = checkpointed median /
-- plain median (above 1: slower); memory_ratio = checkpointed step_peak_alloc_mb /
-- plain (below 1: less held during a step); peak_rss_mb is the whole process's.
CREATE VIEW checkpointing_comparison AS
WITH r AS (
  SELECT s.sweep_id, s.job_id, s.host, s.device, s.model, coalesce(s.model_args, '{}') AS model_args,
         s.dtype, s.batch_size, s.threads, s.interop_threads, s.onednn,
         coalesce(json_extract(j.spec, '$.checkpointing'), 0) AS checkpointing,
         coalesce(json_extract(j.spec, '$.profile'), 0) AS profile,
         s.median_ms, s.peak_rss_mb, s.step_peak_alloc_mb
  FROM result_summary s JOIN jobs j ON j.job_id = s.job_id
  WHERE s.mode = 'train' AND s.median_ms IS NOT NULL
)
SELECT c.sweep_id, c.host, c.device, c.model, c.model_args, c.dtype, c.batch_size, c.threads,
       p.job_id AS plain_job_id, c.job_id AS checkpointed_job_id,
       p.median_ms AS plain_median_ms, c.median_ms AS checkpointed_median_ms,
       c.median_ms / p.median_ms AS time_ratio,
       p.step_peak_alloc_mb AS plain_step_peak_alloc_mb, c.step_peak_alloc_mb AS checkpointed_step_peak_alloc_mb,
       c.step_peak_alloc_mb / p.step_peak_alloc_mb AS memory_ratio,
       p.peak_rss_mb AS plain_peak_rss_mb, c.peak_rss_mb AS checkpointed_peak_rss_mb
FROM r c JOIN r p
  ON p.sweep_id = c.sweep_id AND p.host = c.host AND p.device = c.device AND p.model = c.model
 AND p.model_args = c.model_args AND p.dtype = c.dtype AND p.batch_size = c.batch_size
 AND p.threads = c.threads AND p.interop_threads = c.interop_threads AND p.onednn = c.onednn
 AND p.profile = c.profile AND p.checkpointing = 0
WHERE c.checkpointing = 1;
