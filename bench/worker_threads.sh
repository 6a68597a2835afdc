#!/usr/bin/env bash
# Thread scaling of one MLP job under each OpenMP wait policy (the job's
# omp_wait_policy: default, passive, active). Timing comparisons live here, not in unit tests, because
# the answer depends on the host and its load.
# usage: bench/worker_threads.sh [path/to/benchfleet-worker] [layers] [batch]
set -euo pipefail
worker=${1:-build-worker/worker/benchfleet-worker}
layers=${2:-[1024, 1024, 10]}
batch=${3:-64}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

printf '%-8s %-8s %10s %10s %10s %6s %6s\n' policy threads median_ms iqr_ms p90_ms eff n
for policy in default passive active; do
  for threads in 1 2; do
    cat >"$dir/job.json" <<JOB
{"job_id": 0, "model": "mlp", "model_args": {"layers": $layers}, "mode": "inference",
 "dtype": "fp32", "device": "cpu", "batch_size": $batch, "threads": $threads,
 "omp_wait_policy": "$policy",
 "timing": {"warmup_s": 0.2, "min_time_s": 0.5, "max_time_s": 5, "target_ci": 0.01}}
JOB
    # The worker starts itself under the job's policy, as the agent would start it.
    OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
      "$worker" --job "$dir/job.json" --out "$dir/result.json" 2>/dev/null
    python3 - "$dir/result.json" "$policy" "$threads" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["stats"]
print(f"{sys.argv[2]:<8} {sys.argv[3]:<8} {s['median_ms']:10.3f} {s['iqr_ms']:10.3f} "
      f"{s['p90_ms']:10.3f} {r['effective_threads']:6.2f} {s['n']:6d}")
PY
  done
done
