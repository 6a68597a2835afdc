#!/usr/bin/env bash
# How close a worker job for fp32 matmul 2048x2048x2048 gets to this host's
# calibrated GEMM peak: runs `benchfleet-worker --calibrate`, then the job,
# and prints the job's GFLOP/s, the peak for its thread count and the
# fraction. A healthy harness on an idle host lands near 1.0 (the job and the
# calibration run the same torch::mm on the same BLAS).
# usage: bench/matmul_peak.sh [path/to/benchfleet-worker] [threads]
set -euo pipefail
worker=${1:-build/worker/benchfleet-worker}
threads=${2:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$worker" --calibrate >"$dir/calibration.json"

cat >"$dir/job.json" <<JOB
{"job_id": 1, "model": "matmul", "model_args": {"m": 2048, "k": 2048, "n": 2048},
 "mode": "inference", "dtype": "fp32", "device": "cpu", "batch_size": 1, "threads": $threads,
 "timing": {"warmup_s": 0.5, "min_time_s": 2, "max_time_s": 10, "target_ci": 0.01}}
JOB
# The agent pins a job with N threads to the first N allowed CPUs; do the same.
cpus=$(python3 -c "import os; print(','.join(map(str, sorted(os.sched_getaffinity(0))[:$threads])))")
status=0
OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
  taskset -c "$cpus" "$worker" --job "$dir/job.json" --out "$dir/result.json" || status=$?

python3 - "$dir/calibration.json" "$dir/result.json" "$threads" "$status" <<'PY'
import json, sys
cal = json.load(open(sys.argv[1]))["cpu"]
try:
    result = json.load(open(sys.argv[2]))
except (OSError, ValueError) as e:
    sys.exit(f"the worker wrote no readable result: {e}")
threads, status = int(sys.argv[3]), int(sys.argv[4])
if status != 0 or not result.get("ok"):
    sys.exit(f"the matmul job failed (exit {status}): {result.get('error')}")
if threads == 1:
    peak = cal["gemm_gflops_1"]
elif threads == cal["gemm_threads_all"]:
    peak = cal["gemm_gflops_all"]
else:
    sys.exit(f"no calibrated peak for {threads} threads "
             f"(calibration has 1 and {cal['gemm_threads_all']})")
gflops = result["gflops"]
print(f"matmul 2048^3 fp32, {threads} threads: {gflops:.1f} GFLOP/s "
      f"(median {result['stats']['median_ms']:.2f} ms, n={result['stats']['n']})")
print(f"calibrated peak ({cal['gemm_n']}^3, same threads): {peak:.1f} GFLOP/s")
print(f"fraction of peak: {gflops / peak:.3f}")
if cal.get("theoretical_gflops_all") and threads == cal["gemm_threads_all"]:
    print(f"theoretical peak: {cal['theoretical_gflops_all']:.1f} GFLOP/s "
          f"({cal['isa']}, {cal['clock_mhz']:.0f} MHz from {cal['clock_source']}); "
          f"fraction {gflops / cal['theoretical_gflops_all']:.3f}")
PY
