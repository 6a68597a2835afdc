#!/usr/bin/env bash
# `benchfleet prune` on a large store through a real coordinator, with a client asking
# for `status` every 0.3 s meanwhile: how long the prune takes, what it gives back, and
# how long clients wait while it runs (docs/performance.md, Retention).
# usage: bench/prune_under_load.sh BUILD_DIR STORE AGE
#   e.g. build/bench/bench_history --db /tmp/h.db --generate --nights 20
#        bench/prune_under_load.sh build /tmp/h.db 250d
set -euo pipefail
build=$(realpath "$1"); db=$(realpath "$2"); age=$3
work=$(mktemp -d -t benchfleet-prune.XXXXXX)
port=$((20000 + RANDOM % 20000))
"$build/coordinator/benchfleet-coordinator" --db "$db" --agents 'tcp://127.0.0.1:*' \
  --clients "tcp://127.0.0.1:$port" --ready-file "$work/ready.json" 2>"$work/coordinator.log" &
coordinator=$!
trap 'kill $coordinator 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 600); do [[ -s $work/ready.json ]] && break; sleep 0.2; done
cli=("$build/cli/benchfleet" --coordinator "tcp://127.0.0.1:$port")
(
  while kill -0 $coordinator 2>/dev/null; do
    start=$(date +%s%N)
    "${cli[@]}" status --format json >/dev/null 2>&1 || echo "status failed" >&2
    echo $(( ($(date +%s%N) - start) / 1000000 ))
    sleep 0.3
  done
) >"$work/status_ms" &
poller=$!
start=$(date +%s%N)
"${cli[@]}" prune --samples-older-than "$age"
echo "prune took $(( ($(date +%s%N) - start) / 1000000 )) ms"
kill $poller 2>/dev/null || true
sort -n "$work/status_ms" | awk '{v[NR] = $1} END {
  printf "status while pruning: %d replies, median %d ms, max %d ms (client start included)\n",
         NR, v[int((NR + 1) / 2)], v[NR]}'
