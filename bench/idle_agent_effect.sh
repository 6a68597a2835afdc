#!/usr/bin/env bash
# What an idle agent costs and what its heartbeats do to a benchmark beside it
# (docs/performance.md, An idle agent).
#  1. A coordinator and one agent; once the agent is idle (its start-up calibration
#     done), the agent's own on-CPU time over 60 s (/proc/PID/schedstat).
#  2. Interleaved pairs of the same worker job, with the agent heartbeating and with
#     it stopped (SIGSTOP: present in memory, silent); the median of each run, and the
#     median over pairs of (with / without - 1).
# usage: bench/idle_agent_effect.sh BUILD_DIR [PAIRS]   (BUILD_DIR has the worker)
set -euo pipefail
build=$(realpath "$1"); pairs=${2:-10}
work=$(mktemp -d -t benchfleet-idle.XXXXXX)
port=$((20000 + RANDOM % 20000))
pids=()
cleanup() { kill -CONT "${pids[@]}" 2>/dev/null || true; kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$build/coordinator/benchfleet-coordinator" --db "$work/r.db" --agents "tcp://127.0.0.1:$port" \
  --clients "tcp://127.0.0.1:$((port + 1))" 2>"$work/coordinator.log" &
pids+=($!)
"$build/agent/benchfleet-agent" --coordinator "tcp://127.0.0.1:$port" --name idle-agent \
  --state-dir "$work/agent" --worker "$build/worker/benchfleet-worker" 2>"$work/agent.log" &
agent=$!
pids+=($agent)
cli=("$build/cli/benchfleet" --coordinator "tcp://127.0.0.1:$((port + 1))")
for _ in $(seq 300); do
  # The agent's start-up calibration (a sweep of its own) has finished.
  "${cli[@]}" status --format json 2>/dev/null | grep -q '"state": "done"' && break
  sleep 1
done
start=$(awk '{print $1}' /proc/$agent/schedstat)
sleep 60
end=$(awk '{print $1}' /proc/$agent/schedstat)
echo "idle agent: $(( (end - start) / 1000 )) us on a CPU in 60 s = $(echo "scale=3; ($end - $start) / 600000000" | bc)% of a core"

cat >"$work/job.json" <<JOB
{"job_id": 0, "model": "mlp", "model_args": {"layers": [1024, 1024, 10]}, "mode": "inference",
 "dtype": "fp32", "device": "cpu", "batch_size": 1, "threads": 1,
 "timing": {"warmup_s": 0.5, "min_time_s": 3, "max_time_s": 3, "target_ci": 0.01}}
JOB
median() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['stats']['median_ms'])" "$1"; }
: >"$work/pairs"
for i in $(seq "$pairs"); do
  kill -CONT $agent
  "$build/worker/benchfleet-worker" --job "$work/job.json" --out "$work/with.json" 2>/dev/null
  kill -STOP $agent
  "$build/worker/benchfleet-worker" --job "$work/job.json" --out "$work/without.json" 2>/dev/null
  echo "$(median "$work/with.json") $(median "$work/without.json")" | tee -a "$work/pairs"
done
kill -CONT $agent
python3 - "$work/pairs" <<'PY'
import statistics, sys
pairs = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
ratios = sorted(w / wo - 1 for w, wo in pairs)
print(f"{len(pairs)} pairs (mlp 1024x1024x10, batch 1, 1 thread, 3 s each): median with the agent "
      f"{statistics.median(w for w, _ in pairs):.4f} ms, without {statistics.median(wo for _, wo in pairs):.4f} ms; "
      f"median of (with / without - 1) = {100 * statistics.median(ratios):+.2f}% "
      f"(range {100 * ratios[0]:+.2f}% to {100 * ratios[-1]:+.2f}%)")
PY
