-- benchfleet store, schema version 2: the benchmark engine's measurements, host
-- calibration, and the comparison views.

-- Jobs are benchmarks or host calibrations (the latter run like any job, one machine at
-- a time, so a calibration is never disturbed by a benchmark on the same machine).
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'benchmark'
  CHECK (kind IN ('benchmark', 'calibration'));

ALTER TABLE results ADD COLUMN model_args        TEXT;     -- canonical JSON of the model's arguments
ALTER TABLE results ADD COLUMN interop_threads   INTEGER;
ALTER TABLE results ADD COLUMN onednn            INTEGER;  -- 1 when oneDNN was enabled
ALTER TABLE results ADD COLUMN flops_per_sample  REAL;     -- NULL where the op count is unknown
ALTER TABLE results ADD COLUMN gflops            REAL;
ALTER TABLE results ADD COLUMN peak_gflops       REAL;     -- the calibrated peak fraction_of_peak uses
ALTER TABLE results ADD COLUMN fraction_of_peak  REAL;
ALTER TABLE results ADD COLUMN threads_mismatch  INTEGER;  -- 1: effective_threads off by > 25%
ALTER TABLE results ADD COLUMN max_abs_err       REAL;     -- accuracy vs the fp32 model (non-fp32 only)
ALTER TABLE results ADD COLUMN mean_abs_err      REAL;
ALTER TABLE results ADD COLUMN rel_err           REAL;
ALTER TABLE results ADD COLUMN top1_agreement    REAL;
ALTER TABLE results ADD COLUMN gpu_peak_mem_mb   REAL;

-- One row per calibration run of a host: the physical limits fraction_of_peak refers to.
CREATE TABLE calibrations (
  calibration_id         INTEGER PRIMARY KEY,
  host_id                INTEGER NOT NULL REFERENCES hosts(host_id),
  job_id                 INTEGER REFERENCES jobs(job_id),
  gemm_gflops_all        REAL,   -- measured fp32 GEMM peak, all CPUs of the agent
  gemm_threads_all       INTEGER,
  gemm_gflops_1          REAL,   -- same on one CPU
  stream_triad_gbps_all  REAL,   -- measured memory bandwidth (STREAM triad)
  stream_triad_gbps_1    REAL,
  theoretical_gflops_all REAL,   -- cores x clock x FLOP/cycle, where known
  theoretical_gflops_1   REAL,
  gpus                   TEXT NOT NULL DEFAULT '[]',  -- per GPU: sgemm_gflops, bandwidth_gbps, theoretical_gflops
  detail                 TEXT NOT NULL,
  measured_at            TEXT NOT NULL
);
CREATE INDEX calibrations_by_host ON calibrations(host_id, calibration_id);

-- The latest calibration of each host.
CREATE VIEW host_calibration AS
SELECT h.name AS host, c.*
FROM calibrations c JOIN hosts h ON h.host_id = c.host_id
WHERE c.calibration_id = (SELECT MAX(calibration_id) FROM calibrations WHERE host_id = c.host_id);

DROP VIEW result_summary;
CREATE VIEW result_summary AS
SELECT s.name               AS sweep,
       s.sweep_id           AS sweep_id,
       r.job_id             AS job_id,
       h.name               AS host,
       r.device, r.model, r.mode, r.dtype, r.batch_size, r.threads,
       r.n, r.median_ms, r.mean_ms, r.stdev_ms, r.min_ms, r.max_ms,
       r.p90_ms, r.p99_ms, r.iqr_ms, r.noisy,
       r.throughput_per_s, r.peak_rss_mb, r.effective_threads,
       r.attempt,
       r.received_at        AS finished_at,
       r.model_args, r.interop_threads, r.onednn, r.threads_mismatch,
       r.flops_per_sample, r.gflops, r.peak_gflops, r.fraction_of_peak,
       r.rss_before_model_mb, r.param_bytes, r.gpu_peak_mem_mb,
       r.max_abs_err, r.mean_abs_err, r.rel_err, r.top1_agreement
FROM results r
JOIN jobs j   ON j.job_id = r.job_id
JOIN sweeps s ON s.sweep_id = j.sweep_id
JOIN hosts h  ON h.host_id = r.host_id
WHERE r.ok = 1 AND j.kind = 'benchmark';

-- CPU vs GPU on the same host, same sweep and identical configuration: one row per
-- (CPU thread count, GPU device) pair. speedup > 1: the GPU is faster.
CREATE VIEW cpu_gpu_speedup AS
SELECT c.sweep_id, c.host, c.model, c.model_args, c.mode, c.dtype, c.batch_size,
       c.threads AS cpu_threads, g.device AS gpu_device,
       c.median_ms AS cpu_median_ms, g.median_ms AS gpu_median_ms,
       c.median_ms / g.median_ms AS speedup,
       c.throughput_per_s AS cpu_throughput_per_s, g.throughput_per_s AS gpu_throughput_per_s
FROM result_summary c
JOIN result_summary g
  ON g.sweep_id = c.sweep_id AND g.host = c.host AND g.model = c.model
 AND g.model_args IS c.model_args AND g.mode = c.mode AND g.dtype = c.dtype
 AND g.batch_size = c.batch_size AND g.device LIKE 'cuda%'
WHERE c.device = 'cpu';

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
CREATE VIEW dtype_comparison AS
SELECT q.sweep_id, q.host, q.device, q.model, q.model_args, q.mode, q.batch_size, q.threads,
       q.dtype, f.median_ms AS fp32_median_ms, q.median_ms,
       f.median_ms / q.median_ms AS speedup,
       q.max_abs_err, q.mean_abs_err, q.rel_err, q.top1_agreement,
       q.peak_rss_mb - f.peak_rss_mb AS peak_rss_delta_mb
FROM result_summary q
JOIN result_summary f
  ON f.sweep_id = q.sweep_id AND f.host = q.host AND f.device = q.device
 AND f.model = q.model AND f.model_args IS q.model_args AND f.mode = q.mode
 AND f.batch_size = q.batch_size AND f.threads = q.threads AND f.dtype = 'fp32'
WHERE q.dtype <> 'fp32';
