#!/usr/bin/env bash
# What one `status` reply costs the coordinator with a whole fleet busy
# (docs/performance.md, Status replies at fleet scale).
#  1. bench_fleet_load plays N agents that hold each job for a minute, with JOBS jobs
#     queued behind them (100,000 unless told: one sweep whose spec holds a 100,000-value
#     axis; 1,000,000 is ten such sweeps).
#  2. Once every agent holds a job: the coordinator's CPU over 5 s of that background
#     (heartbeats, the simulator's own status every 250 ms), then over K status
#     requests sent one after another by the CLI.
#  3. Prints (CPU over the requests - background for as long) / K.
# /proc/PID/stat counts in 10 ms ticks: K = 150 resolves about 0.1 ms per reply.
# usage: bench/status_cost.sh BUILD_DIR [K] [AGENTS] [COORDINATOR] [JOBS]
set -euo pipefail
build=$(realpath "$1"); k=${2:-150}; agents=${3:-1000}
coordinator=${4:-$build/coordinator/benchfleet-coordinator}
jobs=${5:-100000}
work=$(mktemp -d -t benchfleet-status.XXXXXX)
load= pid=
cleanup() {
  [ -n "$load" ] && kill "$load" 2>/dev/null
  [ -n "$pid" ] && kill "$pid" 2>/dev/null  # the coordinator, should the simulator leave it
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
TMPDIR=$work "$build/bench/bench_fleet_load" --agents "$agents" --jobs "$jobs" --job-delay-ms 60000 \
  --timeout-s 120 --coordinator "$coordinator" >/dev/null 2>"$work/load.err" &
load=$!
ready=
for _ in $(seq 600); do
  ready=$(ls "$work"/bench-fleet-load-*/coordinator.ready 2>/dev/null | head -1 || true)
  [ -n "$ready" ] && break
  sleep 0.1
done
[ -n "$ready" ] || { echo "the coordinator did not start" >&2; cat "$work/load.err" >&2; exit 1; }
endpoint=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['clients'])" "$ready")
pid=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" "$ready")
cli=("$build/cli/benchfleet" --coordinator "$endpoint")
# Settled: every agent holds a job and the large sweep is stored whole (its slices
# are the coordinator's work until then, not the background).
settled() {
  "${cli[@]}" status --format json 2>/dev/null | python3 -c "
import json, sys
s = json.load(sys.stdin)
busy = sum(a['state'] == 'busy' for a in s['agents'])
storing = sum(w['jobs']['storing'] for w in s['sweeps'])
sys.exit(0 if busy >= $agents and s['sweeps'] and storing == 0 else 1)" 2>/dev/null
}
ok=
for _ in $(seq 1200); do
  if settled; then ok=1; break; fi
  sleep 0.5
done
[ -n "$ok" ] || { echo "the fleet did not settle (every agent busy, the sweep stored)" >&2; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
a=$(ticks); sleep 5; b=$(ticks)
c=$(ticks); start=$(date +%s.%N)
for _ in $(seq "$k"); do "${cli[@]}" status --format json >/dev/null; done
end=$(date +%s.%N); d=$(ticks)
python3 - "$a" "$b" "$c" "$d" "$start" "$end" "$k" "$agents" <<'EOF'
import sys
a, b, c, d, start, end, k, agents = map(float, sys.argv[1:])
hz = 100.0
background = (b - a) / hz / 5.0
elapsed = end - start
per_reply_ms = ((d - c) / hz - background * elapsed) / k * 1000.0
print(f'{{"agents": {int(agents)}, "status_requests": {int(k)}, "background_cpu_fraction": {background:.3f}, '
      f'"elapsed_s": {elapsed:.2f}, "coordinator_cpu_ms_per_status": {per_reply_ms:.2f}}}')
EOF
