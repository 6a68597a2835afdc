#!/usr/bin/env bash
# What repeats in fresh processes cost and give: one sweep (the quickstart's by default)
# run once per setting, each in a fresh fleet on this host, with `processes` fixed at
# each K of KS and with each `precision` of PRECISIONS (schemas/sweep.md, Processes).
# Prints per setting the sweep's wall time, and over its results the half-width of
# the median's interval (median and widest, a fraction of the median) and the processes
# run (the table of docs/performance.md, Processes).
#
#   bench/processes.sh [SWEEP.json]   (default: examples/cpu-mlp.json)
#   KS="1 3 10" PRECISIONS="0.03 0.01" BUILD=build AGENTS=2 DB=processes.db
# The agents do not calibrate (--no-calibrate): each wall time is the sweep's alone.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
agent_count=${AGENTS:-2}
db=${DB:-$(pwd)/processes.db}
sweep_file=${1:-examples/cpu-mlp.json}
for program in coordinator agent worker; do
  [[ -x $build/$program/benchfleet-$program ]] ||
    { echo "processes: build first (deploy/build.sh --programs)" >&2; exit 1; }
done
AGENT_FLAGS="--no-calibrate ${AGENT_FLAGS:-}"
source bench/local_fleet.sh

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs;" \
  "load $(cut -d' ' -f1-3 /proc/loadavg); $(env | grep -E '^OPENBLAS_' | tr '\n' ' ')"
rm -f "$db" "$db-wal" "$db-shm"
settings=()
for k in ${KS-1 3 10}; do settings+=("{\"processes\": $k}"); done
for p in ${PRECISIONS-0.03 0.01}; do settings+=("{\"precision\": $p}"); done
declare -A seconds=()
fleet=0
for setting in "${settings[@]}"; do
  sweep=$run/sweep.json
  python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s.update(json.loads(sys.argv[2])); s["name"] += " " + sys.argv[2]; json.dump(s, open(sys.argv[3], "w"))' \
    "$sweep_file" "$setting" "$sweep"
  start_fleet "fleet-$((fleet++))"
  SECONDS=0
  "${cli[@]}" submit "$sweep" --wait >"$run/submitted.txt" || { cat "$run/submitted.txt" >&2; exit 1; }
  id=$(sed -nE 's/^sweep ([0-9]+) .*/\1/p' "$run/submitted.txt")
  seconds[$id]=$SECONDS
  echo "sweep $id $setting: ${SECONDS}s, $(date -u +%H:%M:%S) UTC"
  stop_fleet
done
echo
values=""
for id in "${!seconds[@]}"; do values+="${values:+, }($id, ${seconds[$id]})"; done
"${cli[@]}" query --db "$db" "
  with wall(sweep_id, s) as (values $values),
  own as (select r.* from result_summary r join jobs j on j.job_id = r.job_id where j.confirms_job_id is null),
  halves as (select sweep_id, processes, (median_ci_high_ms - median_ci_low_ms) / 2 / median_ms as half,
                    row_number() over (partition by sweep_id order by (median_ci_high_ms - median_ci_low_ms) / median_ms) as k,
                    count(*) over (partition by sweep_id) as n
             from own)
  select h.sweep_id, sw.name as setting, w.s as wall_s, count(*) as results,
         printf('%.2f%%', 100 * max(case when h.k = (h.n + 1) / 2 then h.half end)) as half_median,
         printf('%.2f%%', 100 * max(h.half)) as half_max,
         sum(h.half <= 0.01) as within_1pct, sum(h.half <= 0.03) as within_3pct,
         min(h.processes) as k_min, max(h.processes) as k_max, sum(h.processes) as processes_run
  from halves h join wall w on w.sweep_id = h.sweep_id join sweeps sw on sw.sweep_id = h.sweep_id
  group by h.sweep_id order by h.sweep_id"
echo "store: $db"
