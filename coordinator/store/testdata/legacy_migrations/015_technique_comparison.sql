-- The CPU-acceleration techniques that are model arguments, each against its baseline on
-- the same configuration (same sweep, host, device, model, other arguments, mode, dtype,
-- batch size, threads):
--   memory_format   the cnn in channels_last order against contiguous
--   jit             a TorchScript module frozen ("freeze") or frozen and optimized for
--                   inference ("optimize") against the module as saved ("none")
-- speedup = baseline_median_ms / median_ms; the accuracy columns are the variant's own
-- (a compiled module's outputs against the module as saved, on the same inputs).
CREATE VIEW technique_comparison AS
WITH r AS (
  SELECT sweep_id, host, device, model, mode, dtype, batch_size, threads, median_ms,
         max_abs_err, rel_err, top1_agreement,
         coalesce(json_extract(model_args, '$.memory_format'), 'contiguous') AS memory_format,
         coalesce(json_extract(model_args, '$.jit'), 'none') AS jit,
         json_remove(coalesce(model_args, '{}'), '$.memory_format', '$.jit') AS other_args
  FROM result_summary
  WHERE median_ms IS NOT NULL AND model IN ('cnn', 'torchscript')
)
SELECT v.sweep_id, v.host, v.device, v.model, v.other_args AS model_args, v.mode, v.dtype,
       v.batch_size, v.threads,
       CASE WHEN v.model = 'cnn' THEN 'memory_format' ELSE 'jit' END AS technique,
       CASE WHEN v.model = 'cnn' THEN v.memory_format ELSE v.jit END AS variant,
       CASE WHEN v.model = 'cnn' THEN 'contiguous' ELSE 'none' END AS baseline,
       b.median_ms AS baseline_median_ms, v.median_ms,
       b.median_ms / v.median_ms AS speedup,
       v.max_abs_err, v.rel_err, v.top1_agreement
FROM r v JOIN r b
  ON b.sweep_id = v.sweep_id AND b.host = v.host AND b.device = v.device AND b.model = v.model
 AND b.other_args = v.other_args AND b.mode = v.mode AND b.dtype = v.dtype
 AND b.batch_size = v.batch_size AND b.threads = v.threads
WHERE (v.model = 'cnn' AND v.memory_format = 'channels_last' AND b.memory_format = 'contiguous')
   OR (v.model = 'torchscript' AND v.jit IN ('freeze', 'optimize') AND b.jit = 'none' AND b.memory_format = v.memory_format);
