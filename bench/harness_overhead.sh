#!/usr/bin/env bash
# What the worker's harness (job parsing, std::function call, blocked timing,
# adaptive sampling) adds to the median of an MLP forward pass, against a
# plain timing loop over the same model (bench_harness_overhead). Goal: <= 2%.
# Both run with the environment and pinning the agent gives a worker
# (OMP_WAIT_POLICY=PASSIVE, OMP/OPENBLAS_NUM_THREADS, the first N allowed
# CPUs), and the two are alternated ROUNDS times per configuration so that
# drift (clocks, neighbours) hits both alike; the table shows the median over
# rounds of each side's median. plain_ms is the median of the plain loop's
# 1 s window means; plain_iter_ms the median of its single iterations. On a
# quiet host they agree; under load the window means also absorb time slices
# lost to other processes, which the worker's median of ~1 ms blocks mostly
# leaves out; compare the worker with both.
# usage: bench/harness_overhead.sh [build dir] [rounds]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
worker=$build/worker/benchfleet-worker
plain=$build/bench/bench_harness_overhead
layers=${LAYERS:-1024,1024,10}
batches=${BATCHES:-1 16 64}
thread_counts=${THREADS:-1 2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-7s %10s %13s %10s %9s %9s   %s\n' batch threads plain_ms plain_iter_ms worker_ms \
  overhead vs_iter "per-round overhead"
for threads in $thread_counts; do
  cpus=$(python3 -c "import os; print(','.join(map(str, sorted(os.sched_getaffinity(0))[:$threads])))")
  run() {
    OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
      MKL_NUM_THREADS=$threads taskset -c "$cpus" "$@"
  }
  for batch in $batches; do
    cat >"$dir/job.json" <<JOB
{"job_id": 0, "model": "mlp", "model_args": {"layers": [$layers]}, "mode": "inference",
 "dtype": "fp32", "device": "cpu", "batch_size": $batch, "threads": $threads, "seed": 0,
 "timing": {"warmup_s": 0.5, "min_time_s": 5, "max_time_s": 10, "target_iqr": 0.05}}
JOB
    : >"$dir/pairs"
    for ((round = 0; round < rounds; ++round)); do
      run "$plain" --layers "$layers" --batch "$batch" --threads "$threads" \
        --warmup 0.5 --window 1 --windows 10 >"$dir/plain.json"
      run "$worker" --job "$dir/job.json" --out "$dir/result.json" 2>/dev/null
      python3 - "$dir/plain.json" "$dir/result.json" >>"$dir/pairs" <<'PY'
import json, sys
plain = json.load(open(sys.argv[1]))
result = json.load(open(sys.argv[2]))
assert result["ok"], result.get("error")
print(plain["median_ms"], plain["median_iteration_ms"], result["stats"]["median_ms"])
PY
    done
    python3 - "$dir/pairs" "$batch" "$threads" <<'PY'
import statistics, sys
rows = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
plain = statistics.median(p for p, _, _ in rows)
plain_iter = statistics.median(i for _, i, _ in rows)
worker = statistics.median(w for _, _, w in rows)
rounds = " ".join(f"{(w / p - 1) * 100:+.1f}%" for p, _, w in rows)
print(f"{sys.argv[2]:<6} {sys.argv[3]:<7} {plain:10.4f} {plain_iter:13.4f} {worker:10.4f} "
      f"{(worker / plain - 1) * 100:+8.2f}% {(worker / plain_iter - 1) * 100:+8.2f}%   {rounds}")
PY
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
