-- benchfleet store: every view, in one place (docs/results.md says what each answers).
-- Views hold no data: the coordinator drops each view named here and creates it again
-- from this file at every start, after the numbered migrations and after adding a
-- column for every field declared in schemas/result_fields.json, so a view may use any
-- declared column. Changing a view is an edit of this file alone; a view removed from
-- it is dropped by the migration that removes it. Views read each other by name, in any
-- order.

-- One row per successfully finished benchmark job: the job and its host, the job's
-- configuration as the coordinator stored it (never as the result claims it), every
-- measured column of schemas/result_fields.json's "result" list in declaration order
-- (the store puts them in place of the name in braces: "r.n, r.median_ms, ..."), the
-- calibrated peak the result is compared with, and when it came.
-- site: in a store `benchfleet merge` wrote, the site the sweep came from (docs/sites.md);
-- NULL in a coordinator's own store.
-- calibration_suspect: a fraction of the calibrated peak above 1.05 says the
-- calibration is suspect (taken under load, or for another dtype), not that the job
-- beat the hardware.
-- The unary + keeps any index on the job's kind out of users' plans: nearly every job
-- is a benchmark, and without ANALYZE statistics SQLite would otherwise walk every
-- benchmark job to answer one night's results (it did through an index of jobs by kind,
-- since replaced by calibration_jobs_by_state).
CREATE VIEW result_summary AS
SELECT s.name AS sweep, r.sweep_id AS sweep_id, r.job_id AS job_id, h.name AS host,
       r.device, r.model, r.mode, r.dtype, r.batch_size, r.threads, r.interop_threads, r.onednn,
       r.model_args,
       {result_columns},
       r.peak_gflops, r.fraction_of_peak, r.fraction_of_peak > 1.05 AS calibration_suspect,
       r.attempt, r.received_at AS finished_at,
       (SELECT t.name FROM site_rows o JOIN sites t ON t.site_id = o.site_id
        WHERE o.table_name = 'sweeps' AND o.row_id = r.sweep_id) AS site
FROM results r
JOIN jobs j   ON j.job_id = r.job_id
JOIN sweeps s ON s.sweep_id = r.sweep_id
JOIN hosts h  ON h.host_id = r.host_id
WHERE r.ok = 1 AND +j.kind = 'benchmark';

-- Failed jobs with their reason (a crash, a timeout, a rejected spec).
CREATE VIEW job_failures AS
SELECT s.name AS sweep, j.sweep_id, j.job_id, h.name AS host, j.attempts, j.error,
       j.spec, j.finished_at
FROM jobs j
JOIN sweeps s ON s.sweep_id = j.sweep_id
LEFT JOIN hosts h ON h.host_id = j.host_id
WHERE j.state = 'failed';

-- Every raw sample as a row, unpacked from result_samples in plain SQL so that any
-- SQLite client can read them: samples(job_id, idx, ms). Each sample's four bytes are read as an IEEE 754 float32:
-- sign bit, 8-bit exponent (0: subnormal), 23-bit fraction. Filter on job_id: that is an
-- index lookup; the whole view is every sample ever kept.
CREATE VIEW samples AS
WITH x(hex_bytes) AS (SELECT '00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 10 11 12 13 14 15 16 17 18 19 1A 1B 1C 1D 1E 1F 20 21 22 23 24 25 26 27 28 29 2A 2B 2C 2D 2E 2F 30 31 32 33 34 35 36 37 38 39 3A 3B 3C 3D 3E 3F 40 41 42 43 44 45 46 47 48 49 4A 4B 4C 4D 4E 4F 50 51 52 53 54 55 56 57 58 59 5A 5B 5C 5D 5E 5F 60 61 62 63 64 65 66 67 68 69 6A 6B 6C 6D 6E 6F 70 71 72 73 74 75 76 77 78 79 7A 7B 7C 7D 7E 7F 80 81 82 83 84 85 86 87 88 89 8A 8B 8C 8D 8E 8F 90 91 92 93 94 95 96 97 98 99 9A 9B 9C 9D 9E 9F A0 A1 A2 A3 A4 A5 A6 A7 A8 A9 AA AB AC AD AE AF B0 B1 B2 B3 B4 B5 B6 B7 B8 B9 BA BB BC BD BE BF C0 C1 C2 C3 C4 C5 C6 C7 C8 C9 CA CB CC CD CE CF D0 D1 D2 D3 D4 D5 D6 D7 D8 D9 DA DB DC DD DE DF E0 E1 E2 E3 E4 E5 E6 E7 E8 E9 EA EB EC ED EE EF F0 F1 F2 F3 F4 F5 F6 F7 F8 F9 FA FB FC FD FE FF')
SELECT rs.job_id AS job_id,
       j.key     AS idx,
       (1 - 2 * (((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 4, 1))) - 1) / 3) >> 7))
         * (((((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 3, 1))) - 1) / 3) & 127) * 65536 + ((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 2, 1))) - 1) / 3) * 256 + ((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 1, 1))) - 1) / 3)) + (((((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 4, 1))) - 1) / 3) & 127) * 2 + (((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 3, 1))) - 1) / 3) >> 7)) > 0) * 8388608)
         * power(2, max(((((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 4, 1))) - 1) / 3) & 127) * 2 + (((instr(x.hex_bytes, hex(substr(rs.ms_f32le, 4 * j.key + 3, 1))) - 1) / 3) >> 7)), 1) - 150) AS ms
FROM result_samples rs,
     json_each('[' || rtrim(replace(hex(zeroblob(rs.n)), '00', '0,'), ',') || ']') j,
     x;

-- One row per label of each sweep (sweeps.labels): sweep_id, sweep (its name), label,
-- value; e.g. the sweeps of a commit:
--   SELECT sweep_id FROM sweep_labels WHERE label = 'commit' AND value = 'abc123'
CREATE VIEW sweep_labels AS
SELECT s.sweep_id, s.name AS sweep, l.key AS label, l.value AS value
FROM sweeps s, json_each(s.labels) l;

-- In a store `benchfleet merge` wrote (docs/sites.md), the site of each sweep: its name
-- and the sweep's id there. Empty in a coordinator's own store.
CREATE VIEW sweep_sites AS
SELECT o.row_id AS sweep_id, t.name AS site, o.site_row_id AS site_sweep_id
FROM site_rows o JOIN sites t ON t.site_id = o.site_id
WHERE o.table_name = 'sweeps';

-- The latest calibration of each host.
CREATE VIEW host_calibration AS
SELECT h.name AS host, c.*
FROM calibrations c JOIN hosts h ON h.host_id = c.host_id
WHERE c.calibration_id = (SELECT MAX(calibration_id) FROM calibrations WHERE host_id = c.host_id);

-- CPU vs GPU, paired strictly: a GPU result against the CPU result of the same host,
-- sweep and configuration, that is the job's whole spec but its device and threads
-- (model, model arguments, mode, dtype, batch size, inter-op threads, oneDNN,
-- omp_wait_policy, timing, and every technique: profile, checkpointing, parallel,
-- prune, reference, replicas, scenario, search), and the batch size the result ran (a
-- search's is the batch it found). Each side is its configuration's fastest result that
-- is not noisy: the CPU at its best thread count, the GPU at its own (ties: fewer
-- threads, then the earlier job). One row per configuration and GPU device; a
-- configuration whose results on one side are all noisy has no row. speedup > 1: the
-- GPU is faster.
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

-- Batch-size scaling: throughput relative to the smallest batch of the same series.
CREATE VIEW batch_scaling AS
SELECT sweep_id, host, device, model, model_args, mode, dtype, threads, batch_size,
       median_ms, throughput_per_s,
       throughput_per_s / FIRST_VALUE(throughput_per_s) OVER series AS throughput_vs_smallest_batch,
       median_ms / batch_size AS ms_per_sample
FROM result_summary
WINDOW series AS (PARTITION BY sweep_id, host, device, model, model_args, mode, dtype, threads
                  ORDER BY batch_size);

-- Thread scaling: speedup over the fewest threads of the same series, and parallel
-- efficiency (speedup per added thread; 1.0 is perfect scaling).
CREATE VIEW thread_scaling AS
SELECT sweep_id, host, device, model, model_args, mode, dtype, batch_size, threads,
       median_ms, effective_threads, threads_mismatch,
       FIRST_VALUE(median_ms) OVER series / median_ms AS speedup,
       (FIRST_VALUE(median_ms) OVER series / median_ms)
         * FIRST_VALUE(threads) OVER series / threads AS parallel_efficiency
FROM result_summary
WINDOW series AS (PARTITION BY sweep_id, host, device, model, model_args, mode, dtype, batch_size
                  ORDER BY threads);

-- bf16 / int8 against fp32 for the same configuration: speedup and accuracy delta.
-- What the speedups of the comparison views below are read with (docs/results.md,
-- Comparison views: Speedups with intervals). result_log_error: each result's standard
-- error of log(median_ms) and the t factor of its 95% interval: across its processes
-- (processes.log_se, processes.t975), else from its own 95% interval on the normal scale.
-- A speedup of two results is paired where they ran as the two sides of a pair (a
-- sweep's versus, versus_results: the pairs' own interval), unpaired otherwise:
-- base / variant x exp(+- max(t) x sqrt(se_base^2 + se_variant^2)), the larger t of the
-- two (fewer degrees of freedom than Welch's: the wider interval).
CREATE VIEW result_log_error AS
SELECT r.job_id,
       coalesce(r.median_log_se,
                CASE WHEN r.median_ci_low_ms > 0 AND r.median_ci_high_ms >= r.median_ci_low_ms
                     THEN (ln(r.median_ci_high_ms) - ln(r.median_ci_low_ms)) / (2 * 1.959963984540054)
                END) AS log_se,
       coalesce(r.median_log_t975, 1.959963984540054) AS log_t
FROM results r
WHERE r.ok = 1;

-- Each pair of results a versus ran, by job: side A, side B, and B over A with its interval.
CREATE VIEW versus_pairs AS
SELECT job_id AS a_job_id, b_job_id, ratio, ratio_ci_low, ratio_ci_high
FROM versus_results
WHERE ratio IS NOT NULL;

CREATE VIEW dtype_comparison AS
SELECT q.sweep_id, q.host, q.device, q.model, q.model_args, q.mode, q.batch_size, q.threads,
       q.dtype, f.median_ms AS fp32_median_ms, q.median_ms,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio
            ELSE f.median_ms / q.median_ms END AS speedup,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio_ci_high
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio_ci_low
            ELSE f.median_ms / q.median_ms *
                 exp(-max(eb.log_t, ev.log_t) * sqrt(eb.log_se * eb.log_se + ev.log_se * ev.log_se))
       END AS speedup_ci_low,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio_ci_low
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio_ci_high
            ELSE f.median_ms / q.median_ms *
                 exp(max(eb.log_t, ev.log_t) * sqrt(eb.log_se * eb.log_se + ev.log_se * ev.log_se))
       END AS speedup_ci_high,
       CASE WHEN pa.a_job_id IS NOT NULL OR pb.a_job_id IS NOT NULL THEN 'paired'
            WHEN eb.log_se IS NOT NULL AND ev.log_se IS NOT NULL THEN 'unpaired' END AS speedup_interval,
       q.max_abs_err, q.mean_abs_err, q.rel_err, q.top1_agreement,
       q.peak_rss_mb - f.peak_rss_mb AS peak_rss_delta_mb,
       f.job_id AS fp32_job_id, q.job_id
FROM result_summary q
JOIN result_summary f
  ON f.sweep_id = q.sweep_id AND f.host = q.host AND f.device = q.device
 AND f.model = q.model AND f.model_args IS q.model_args AND f.mode = q.mode
 AND f.batch_size = q.batch_size AND f.threads = q.threads AND f.dtype = 'fp32'
LEFT JOIN versus_pairs pa ON pa.a_job_id = f.job_id AND pa.b_job_id = q.job_id
LEFT JOIN versus_pairs pb ON pb.a_job_id = q.job_id AND pb.b_job_id = f.job_id
LEFT JOIN result_log_error eb ON eb.job_id = f.job_id
LEFT JOIN result_log_error ev ON ev.job_id = q.job_id
WHERE q.dtype <> 'fp32';

-- The CPU-acceleration techniques, each against its baseline on the same configuration
-- (same sweep, host, device, model, other arguments, mode, dtype, batch size, threads,
-- torch):
--   memory_format   the cnn in channels_last order against contiguous
--   jit             a TorchScript module frozen ("freeze") or frozen and optimized for
--                   inference ("optimize") against the module as saved ("none")
--   technique       a zoo model traced to TorchScript ("torchscript") or compiled into an
--                   AOTInductor package ("aoti") against the worker's eager modules
--                   ("eager"); compile_s is what Inductor took to make the package
-- speedup = baseline_median_ms / median_ms, with both medians' 95% intervals; the
-- accuracy columns are the variant's own (a compiled module's outputs against the fp32
-- eager model, or the module as saved, on the same inputs).
CREATE VIEW technique_comparison AS
WITH r AS (
  SELECT sweep_id, host, device, model, mode, dtype, batch_size, threads, median_ms, job_id,
         median_ci_low_ms, median_ci_high_ms, max_abs_err, rel_err, top1_agreement, compile_s,
         coalesce(technique, 'eager') AS technique_run,
         coalesce(json_extract(model_args, '$.memory_format'), 'contiguous') AS memory_format,
         coalesce(json_extract(model_args, '$.jit'), 'none') AS jit,
         json_remove(coalesce(model_args, '{}'), '$.memory_format', '$.jit') AS other_args,
         coalesce(torch_version, '') AS torch
  FROM result_summary
  WHERE median_ms IS NOT NULL AND (model IN ('cnn', 'torchscript') OR
                                   sweep_id IN (SELECT sweep_id FROM results WHERE technique IS NOT NULL))
)
SELECT v.sweep_id, v.host, v.device, v.model, v.other_args AS model_args, v.mode, v.dtype,
       v.batch_size, v.threads,
       CASE WHEN v.technique_run <> b.technique_run THEN 'technique'
            WHEN v.model = 'cnn' THEN 'memory_format' ELSE 'jit' END AS technique,
       CASE WHEN v.technique_run <> b.technique_run THEN v.technique_run
            WHEN v.model = 'cnn' THEN v.memory_format ELSE v.jit END AS variant,
       CASE WHEN v.technique_run <> b.technique_run THEN 'eager'
            WHEN v.model = 'cnn' THEN 'contiguous' ELSE 'none' END AS baseline,
       b.median_ms AS baseline_median_ms, b.median_ci_low_ms AS baseline_ci_low_ms,
       b.median_ci_high_ms AS baseline_ci_high_ms,
       v.median_ms, v.median_ci_low_ms, v.median_ci_high_ms,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio
            ELSE b.median_ms / v.median_ms END AS speedup,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio_ci_high
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio_ci_low
            ELSE b.median_ms / v.median_ms *
                 exp(-max(eb.log_t, ev.log_t) * sqrt(eb.log_se * eb.log_se + ev.log_se * ev.log_se))
       END AS speedup_ci_low,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio_ci_low
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio_ci_high
            ELSE b.median_ms / v.median_ms *
                 exp(max(eb.log_t, ev.log_t) * sqrt(eb.log_se * eb.log_se + ev.log_se * ev.log_se))
       END AS speedup_ci_high,
       CASE WHEN pa.a_job_id IS NOT NULL OR pb.a_job_id IS NOT NULL THEN 'paired'
            WHEN eb.log_se IS NOT NULL AND ev.log_se IS NOT NULL THEN 'unpaired' END AS speedup_interval,
       v.max_abs_err, v.rel_err, v.top1_agreement, v.compile_s, b.job_id AS baseline_job_id, v.job_id
FROM r v JOIN r b
  ON b.sweep_id = v.sweep_id AND b.host = v.host AND b.device = v.device AND b.model = v.model
 AND b.other_args = v.other_args AND b.mode = v.mode AND b.dtype = v.dtype
 AND b.batch_size = v.batch_size AND b.threads = v.threads AND b.torch = v.torch
LEFT JOIN versus_pairs pa ON pa.a_job_id = b.job_id AND pa.b_job_id = v.job_id
LEFT JOIN versus_pairs pb ON pb.a_job_id = v.job_id AND pb.b_job_id = b.job_id
LEFT JOIN result_log_error eb ON eb.job_id = b.job_id
LEFT JOIN result_log_error ev ON ev.job_id = v.job_id
WHERE (v.model = 'cnn' AND v.memory_format = 'channels_last' AND b.memory_format = 'contiguous'
       AND v.technique_run = b.technique_run)
   OR (v.model = 'torchscript' AND v.jit IN ('freeze', 'optimize') AND b.jit = 'none'
       AND b.memory_format = v.memory_format)
   OR (v.technique_run IN ('torchscript', 'aoti') AND b.technique_run = 'eager'
       AND b.memory_format = v.memory_format AND v.model <> 'aoti');

-- Versions of LibTorch side by side (the sweep's `torch` axis: one agent carrying several
-- workers, each built against another LibTorch; schemas/sweep.md): each result beside the
-- result of the same sweep, host and configuration (device, model, model arguments, mode,
-- dtype, batch size, threads, inter-op threads, oneDNN, technique) run on the oldest torch
-- of that configuration, the baseline.
--   torch, base_torch  runtime.torch_version of each side ("2.15.0", "1.13.0")
--   speedup            base_median_ms / median_ms: above 1, the newer torch is faster
--                      (paired: the pairs' own estimate), with its 95% interval
--                      speedup_ci_low, speedup_ci_high, and speedup_interval saying how it
--                      was made: paired (the two ran as a versus' pairs) or unpaired
--   differs            1 when the speedup's interval excludes 1 (0 when it holds 1; NULL
--                      without an interval)
CREATE VIEW torch_comparison AS
WITH r AS (
  SELECT sweep_id, host, device, model, model_args, mode, dtype, batch_size, threads,
         interop_threads, onednn, coalesce(technique, 'eager') AS technique, torch_version AS torch,
         median_ms, median_ci_low_ms, median_ci_high_ms, noisy, job_id,
         -- 2.15.0 as 2015000: the numeric order of versions, which their text is not
         CAST(torch_version AS INTEGER) * 1000000 +
           CAST(substr(torch_version, instr(torch_version, '.') + 1) AS INTEGER) * 1000 +
           CAST(substr(substr(torch_version, instr(torch_version, '.') + 1),
                       instr(substr(torch_version, instr(torch_version, '.') + 1), '.') + 1) AS INTEGER)
           AS torch_order
  FROM result_summary
  WHERE median_ms IS NOT NULL AND torch_version IS NOT NULL
),
base AS (
  SELECT * FROM r b
  WHERE b.torch_order = (SELECT min(o.torch_order) FROM r o
                         WHERE o.sweep_id = b.sweep_id AND o.host = b.host AND o.device = b.device
                           AND o.model = b.model AND o.model_args IS b.model_args
                           AND o.mode = b.mode AND o.dtype = b.dtype AND o.batch_size = b.batch_size
                           AND o.threads = b.threads AND o.interop_threads = b.interop_threads
                           AND o.onednn = b.onednn AND o.technique = b.technique)
),
compared AS (
SELECT v.sweep_id, v.host, v.device, v.model, v.model_args, v.mode, v.dtype, v.batch_size,
       v.threads, v.technique,
       b.torch AS base_torch, b.median_ms AS base_median_ms, b.median_ci_low_ms AS base_ci_low_ms,
       b.median_ci_high_ms AS base_ci_high_ms,
       v.torch, v.median_ms, v.median_ci_low_ms, v.median_ci_high_ms,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio
            ELSE b.median_ms / v.median_ms END AS speedup,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio_ci_high
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio_ci_low
            ELSE b.median_ms / v.median_ms *
                 exp(-max(eb.log_t, ev.log_t) * sqrt(eb.log_se * eb.log_se + ev.log_se * ev.log_se))
       END AS speedup_ci_low,
       CASE WHEN pa.a_job_id IS NOT NULL THEN 1.0 / pa.ratio_ci_low
            WHEN pb.a_job_id IS NOT NULL THEN pb.ratio_ci_high
            ELSE b.median_ms / v.median_ms *
                 exp(max(eb.log_t, ev.log_t) * sqrt(eb.log_se * eb.log_se + ev.log_se * ev.log_se))
       END AS speedup_ci_high,
       CASE WHEN pa.a_job_id IS NOT NULL OR pb.a_job_id IS NOT NULL THEN 'paired'
            WHEN eb.log_se IS NOT NULL AND ev.log_se IS NOT NULL THEN 'unpaired' END AS speedup_interval,
       b.noisy AS base_noisy, v.noisy, b.job_id AS base_job_id, v.job_id
FROM r v JOIN base b
  ON b.sweep_id = v.sweep_id AND b.host = v.host AND b.device = v.device AND b.model = v.model
 AND b.model_args IS v.model_args AND b.mode = v.mode AND b.dtype = v.dtype
 AND b.batch_size = v.batch_size AND b.threads = v.threads AND b.interop_threads = v.interop_threads
 AND b.onednn = v.onednn AND b.technique = v.technique
LEFT JOIN versus_pairs pa ON pa.a_job_id = b.job_id AND pa.b_job_id = v.job_id
LEFT JOIN versus_pairs pb ON pb.a_job_id = v.job_id AND pb.b_job_id = b.job_id
LEFT JOIN result_log_error eb ON eb.job_id = b.job_id
LEFT JOIN result_log_error ev ON ev.job_id = v.job_id
WHERE v.torch_order > b.torch_order
)
SELECT sweep_id, host, device, model, model_args, mode, dtype, batch_size, threads, technique,
       base_torch, base_median_ms, base_ci_low_ms, base_ci_high_ms,
       torch, median_ms, median_ci_low_ms, median_ci_high_ms,
       speedup, speedup_ci_low, speedup_ci_high, speedup_interval,
       CASE WHEN speedup_ci_low IS NULL OR speedup_ci_high IS NULL THEN NULL
            ELSE (speedup_ci_low > 1 OR speedup_ci_high < 1) END AS differs,
       base_noisy, noisy, base_job_id, job_id
FROM compared;

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

-- Each priced host's current price.
CREATE VIEW host_price AS
SELECT h.host_id, h.name AS host, p.per_hour, p.currency, p.set_at, p.source
FROM hosts h
JOIN host_prices p ON p.price_id = (SELECT max(q.price_id) FROM host_prices q WHERE q.host_id = h.host_id);

-- What each result offers a user choosing a configuration (docs/results.md, Capacity):
-- the one place that says which throughput and which latency describe a result, and so
-- the one place of the cost formula.
--   capacity_per_s   samples/s the configuration sustains: a server run's highest rate
--                    within its SLO (else the rate it achieved), all replicas together,
--                    else the job's own throughput_per_s
--   latency_p99_ms   a serving run's p99 from arrival (queueing included), replicas'
--                    slowest copy's median, else one iteration's p99 (else its median)
--   median_ms        with its 95% interval beside it (benchfleet recommend, the report)
--   accuracy_loss    1 - top1_agreement, else rel_err; 0 for an fp32 model as built
--                    (no pruning, no reference); NULL when unmeasured
--   stale            1 when the result predates its host's last fingerprint change
--   cost_per_1m_samples  per_hour / (capacity_per_s × 3600) × 1e6 at the host's current
--                    price; NULL for a host without one
CREATE VIEW result_capacity AS
SELECT c.*, p.per_hour, p.currency, p.set_at AS price_set_at,
       p.per_hour / (c.capacity_per_s * 3600.0) * 1e6 AS cost_per_1m_samples
FROM (
  SELECT s.sweep_id, s.sweep, s.job_id, s.host, s.device, s.model, s.model_args, s.mode, s.dtype,
         coalesce(s.scenario, 'offline') AS scenario, s.threads, s.batch_size,
         coalesce(s.replicas, 1) AS replicas, s.median_ms, s.median_ci_low_ms, s.median_ci_high_ms,
         s.throughput_per_s,
         coalesce(s.max_qps_within_slo, s.achieved_qps, s.aggregate_throughput_per_s,
                  s.throughput_per_s) AS capacity_per_s,
         coalesce(s.serving_p99_ms, s.replica_median_ms_max, s.p99_ms, s.median_ms) AS latency_p99_ms,
         CASE WHEN s.top1_agreement IS NOT NULL THEN 1 - s.top1_agreement
              WHEN s.rel_err IS NOT NULL THEN s.rel_err
              WHEN s.dtype = 'fp32' AND s.prune_kind IS NULL AND s.reference_model IS NULL THEN 0
         END AS accuracy_loss,
         s.joules_per_sample, coalesce(s.noisy, 0) AS noisy,
         (r.fingerprint IS NOT h.fingerprint) AS stale
  FROM result_summary s
  JOIN results r ON r.job_id = s.job_id
  JOIN hosts h ON h.name = s.host) c
LEFT JOIN host_price p ON p.host = c.host;

-- The cost of a million samples of each result on a priced host, at its current price,
-- priced by its capacity (result_capacity), so that a server run or a replicas job is
-- priced by what the host serves; for any other result capacity_per_s is
-- throughput_per_s. A training result's samples are training samples; `mode` says which.
CREATE VIEW result_cost AS
SELECT sweep_id, sweep, job_id, host, device, model, model_args, mode, dtype, scenario,
       batch_size, threads, replicas, median_ms, throughput_per_s, capacity_per_s,
       per_hour, currency, price_set_at, cost_per_1m_samples
FROM result_capacity
WHERE per_hour IS NOT NULL AND capacity_per_s > 0;

-- CPU against GPU for the same workload (sweep, model, arguments, mode, dtype, batch):
-- the cheapest CPU result and the cheapest GPU result of any host, per currency.
-- cost_ratio > 1: the GPU's samples are cheaper.
CREATE VIEW cpu_gpu_cost AS
WITH best AS (
  SELECT sweep_id, model, model_args, mode, dtype, batch_size, currency,
         CASE WHEN device = 'cpu' THEN 'cpu' ELSE 'gpu' END AS kind,
         host, device, threads, throughput_per_s, per_hour, cost_per_1m_samples,
         row_number() OVER (PARTITION BY sweep_id, model, model_args, mode, dtype, batch_size, currency,
                                         device = 'cpu'
                            ORDER BY cost_per_1m_samples, job_id) AS rank
  FROM result_cost)
SELECT c.sweep_id, c.model, c.model_args, c.mode, c.dtype, c.batch_size, c.currency,
       c.host AS cpu_host, c.threads AS cpu_threads, c.throughput_per_s AS cpu_throughput_per_s,
       c.per_hour AS cpu_per_hour, c.cost_per_1m_samples AS cpu_cost_per_1m_samples,
       g.host AS gpu_host, g.device AS gpu_device, g.throughput_per_s AS gpu_throughput_per_s,
       g.per_hour AS gpu_per_hour, g.cost_per_1m_samples AS gpu_cost_per_1m_samples,
       c.cost_per_1m_samples / g.cost_per_1m_samples AS cost_ratio
FROM best c
JOIN best g
  ON g.sweep_id = c.sweep_id AND g.model = c.model AND g.model_args IS c.model_args
 AND g.mode = c.mode AND g.dtype = c.dtype AND g.batch_size = c.batch_size
 AND g.currency = c.currency AND g.kind = 'gpu' AND g.rank = 1
WHERE c.kind = 'cpu' AND c.rank = 1;

-- Each confirmed change point once (`benchfleet regressions`, docs/regressions.md): when
-- and on which sweep it was first seen (the night whose result became the candidate),
-- the configuration and host, its size, the candidate's median with its interval, the
-- baseline it left and the confirming runs.
CREATE VIEW confirmed_regressions AS
SELECT g.regression_id, g.detected_at AS first_seen_at, g.sweep_id AS first_seen_sweep_id,
       g.detected_at, g.decided_at, h.name AS host, r.model, r.mode, r.dtype,
       r.batch_size, r.threads, r.device, r.model_args, g.direction,
       round(g.change * 100, 1) AS change_pct, g.median_ms, g.median_ci_low_ms,
       g.median_ci_high_ms, g.rerun_median_ms,
       g.baseline_median_ms, g.baseline_mad_ms, g.baseline_n, g.baseline_from, g.baseline_to,
       g.z, g.reruns, g.job_id, r.sweep_id, g.series,
       round(g.host_pace_change * 100, 1) AS host_pace_change_pct,
       round(g.detectable_change * 100, 1) AS detectable_change_pct
FROM regressions g
JOIN results r ON r.job_id = g.job_id
JOIN hosts h ON h.host_id = g.host_id
WHERE g.state = 'confirmed';

-- Paired comparisons (schemas/sweep.md, Versus): one row per pair of jobs whose pairs are
-- done (or failed): the configuration (side A's), the axis and each side's value, each
-- side's median with its interval across its pairs' processes, and B over A from the
-- pairs (docs/results.md, Versus): ratio with its 95% interval, the verdict (change:
-- slower, faster, unchanged or failed), the smallest change it could have detected, and
-- why the pairs stopped where they did.
CREATE VIEW versus_comparison AS
SELECT s.name AS sweep, v.sweep_id, h.name AS host, a.device, a.model, a.model_args, a.mode,
       a.dtype, a.batch_size, a.threads, v.axis, v.a_value, v.b_value, v.pairing, v.pairs,
       a.median_ms AS a_median_ms, a.median_ci_low_ms AS a_ci_low_ms,
       a.median_ci_high_ms AS a_ci_high_ms,
       b.median_ms AS b_median_ms, b.median_ci_low_ms AS b_ci_low_ms,
       b.median_ci_high_ms AS b_ci_high_ms,
       v.ratio, v.ratio_ci_low, v.ratio_ci_high, v.p, v.change, v.min_change, v.detectable,
       v.precision_target, v.precision_reached, v.stopped, v.why, v.method,
       v.job_id AS a_job_id, v.b_job_id, v.decided_at
FROM versus_results v
JOIN sweeps s ON s.sweep_id = v.sweep_id
LEFT JOIN hosts h ON h.host_id = v.host_id
LEFT JOIN results a ON a.job_id = v.job_id
LEFT JOIN results b ON b.job_id = v.b_job_id;

-- The history people read: every slot's outcome with its sweep and how that sweep went.
CREATE VIEW schedule_history AS
SELECT sc.name AS schedule, f.slot, f.outcome, f.reason, f.decided_at,
       sw.sweep_id, sw.state AS sweep_state, sw.finished_at AS sweep_finished_at
FROM schedule_firings f
JOIN schedules sc ON sc.schedule_id = f.schedule_id
LEFT JOIN sweeps sw ON sw.schedule_id = f.schedule_id AND sw.schedule_slot = f.slot;
