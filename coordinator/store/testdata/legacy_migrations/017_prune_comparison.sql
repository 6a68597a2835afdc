-- Pruning (the job's `prune`, schemas/worker.md, Pruning) against the unpruned model: each
-- pruned result beside the result of the same sweep, host and configuration (device,
-- model, model arguments, mode, dtype, batch size, threads, inter-op threads, oneDNN)
-- that was neither pruned nor compared with a reference.
--   speedup        baseline_median_ms / median_ms (magnitude pruning keeps the kernels
--                  dense: expect about 1; structured pruning runs a smaller dense model)
--   params_share   params / params_unpruned
--   accuracy       the pruned model's outputs against the unpruned fp32 model's on the
--                  same inputs; with dtype int8 or bf16, pruning and conversion together,
--                  and the baseline_ columns show what the conversion alone costs
CREATE VIEW prune_comparison AS
SELECT v.sweep_id, v.host, v.device, v.model, v.model_args, v.mode, v.dtype, v.batch_size,
       v.threads, v.prune_kind, coalesce(v.prune_sparsity, v.prune_ratio) AS prune_amount,
       b.median_ms AS baseline_median_ms, v.median_ms, b.median_ms / v.median_ms AS speedup,
       v.params_unpruned, v.params, CAST(v.params AS REAL) / v.params_unpruned AS params_share,
       v.weight_sparsity, v.max_abs_err, v.mean_abs_err, v.rel_err, v.top1_agreement,
       b.max_abs_err AS baseline_max_abs_err, b.top1_agreement AS baseline_top1_agreement
FROM result_summary v JOIN result_summary b
  ON b.sweep_id = v.sweep_id AND b.host = v.host AND b.device = v.device AND b.model = v.model
 AND b.model_args IS v.model_args AND b.mode = v.mode AND b.dtype = v.dtype
 AND b.batch_size = v.batch_size AND b.threads = v.threads
 AND b.interop_threads IS v.interop_threads AND b.onednn IS v.onednn
WHERE v.prune_kind IS NOT NULL AND b.prune_kind IS NULL AND b.reference_model IS NULL
  AND v.median_ms IS NOT NULL AND b.median_ms IS NOT NULL;
