#!/usr/bin/env bash
# Two LibTorch versions on one host, side by side: a coordinator and one agent carrying the
# worker of the torch wheel (BUILD/worker/benchfleet-worker) and a second one (default:
# Debian's 1.13, deploy/build-worker.sh legacy) run each sweep file given, whose `torch`
# axis interleaves the versions of each configuration; then prints what each worker is
# built with (its --probe: torch, BLAS, MKL, oneDNN) and `benchfleet results --view torch`.
# The table of docs/performance.md (LibTorch versions) comes from here.
#
#   bench/torch_versions.sh [SWEEP.json ...]   (default: examples/torch-versions.json
#                                               examples/torch-upgrade.json)
#   BUILD=build SECOND_WORKER=build-torch1.13/worker/benchfleet-worker DB=torch-versions.db
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
second=${SECOND_WORKER:-build-torch1.13/worker/benchfleet-worker}
db=${DB:-$(pwd)/torch-versions.db}
sweeps=("$@")
((${#sweeps[@]})) || sweeps=(examples/torch-versions.json examples/torch-upgrade.json)
for program in coordinator agent worker; do
  [[ -x $build/$program/benchfleet-$program ]] || { echo "torch_versions: build first (deploy/build.sh)" >&2; exit 1; }
done
[[ -x $second ]] || { echo "torch_versions: no second worker at $second (deploy/build-worker.sh legacy)" >&2; exit 1; }
cli=("$build/cli/benchfleet")
run=$(mktemp -d -t benchfleet-torch-versions.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs; $(env | grep -E '^OPENBLAS_' | tr '\n' ' ')"
for worker in "$build/worker/benchfleet-worker" "$second"; do
  "$worker" --probe | python3 -c 'import json, sys
p = json.load(sys.stdin)
print("worker %s: torch %s, BLAS %s %s, MKL %s, oneDNN %s, quantized engines %s, techniques %s" % (
    sys.argv[1], p["torch_version"], p.get("blas"), p.get("blas_version"), p.get("mkl_version"),
    p.get("onednn_version"), ",".join(p.get("quantized_engines") or []), ",".join(p.get("techniques") or [])))' "$worker"
done

rm -f "$db" "$db-wal" "$db-shm"
"$build/coordinator/benchfleet-coordinator" --db "$db" --agents 'tcp://127.0.0.1:*' --clients 'tcp://127.0.0.1:*' \
  --ready-file "$run/ready.json" 2>"$run/coordinator.log" &
pids+=($!)
for _ in $(seq 300); do [[ -s $run/ready.json ]] && break; sleep 0.1; done
agents=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["agents"])' "$run/ready.json")
export BENCHFLEET_COORDINATOR=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["clients"])' "$run/ready.json")
"$build/agent/benchfleet-agent" --coordinator "$agents" --name two-torches --no-calibrate \
  --worker "$build/worker/benchfleet-worker" --worker "$second" --state-dir "$run/agent" 2>"$run/agent.log" &
pids+=($!)
for _ in $(seq 600); do
  "${cli[@]}" status --format json 2>/dev/null | grep -q '"agent":' && break
  sleep 0.1
done
for sweep in "${sweeps[@]}"; do
  echo
  SECONDS=0
  "${cli[@]}" submit "$sweep" --wait >"$run/submitted.txt" || { cat "$run/submitted.txt" "$run"/*.log >&2; exit 1; }
  id=$(sed -nE 's/^sweep ([0-9]+) .*/\1/p' "$run/submitted.txt")
  echo "$sweep: sweep $id in ${SECONDS}s (benchfleet results --view torch --sweep $id --db $db):"
  "${cli[@]}" results --view torch --sweep "$id"
done
echo
echo "store: $db"
