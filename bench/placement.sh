#!/usr/bin/env bash
# Where a job's threads go (schemas/worker.md, Thread placement): one sweep crossing
# thread_placement (PLACEMENTS) with threads 1 and 2 on the mlp at batch 16 and 64, in
# fresh processes (PROCESSES per job), on one agent of a fresh fleet on this host. Prints
# per configuration the CPUs the worker got, the cores and nodes they span, the median
# with its interval across processes, and its ratio to the default (cores) placement
# (docs/performance.md, Thread placement).
#
#   PLACEMENTS='"cores", "spread", "os"' PROCESSES=5 BUILD=build DB=placement.db bench/placement.sh
# A placement this host cannot give (smt without SMT, spread beyond its cores) fails its
# jobs with the reason, printed in the table's place.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
agent_count=1
db=${DB:-$(pwd)/placement.db}
PROCESSES=${PROCESSES:-5}
for program in coordinator agent worker; do
  [[ -x $build/$program/benchfleet-$program ]] ||
    { echo "placement: build first (deploy/build.sh --programs)" >&2; exit 1; }
done
AGENT_FLAGS="--no-calibrate ${AGENT_FLAGS:-}"
source bench/local_fleet.sh

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs," \
  "$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l) NUMA nodes, siblings of cpu0:" \
  "$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null || echo unknown);" \
  "load $(cut -d' ' -f1-3 /proc/loadavg); $(env | grep -E '^OPENBLAS_' | tr '\n' ' ')"
rm -f "$db" "$db-wal" "$db-shm"
sweep=$run/sweep.json
cat >"$sweep" <<JSON
{"name": "placement", "placement": "any",
 "matrix": {"model": "mlp", "batch_size": [16, 64], "threads": [1, 2],
            "thread_placement": [${PLACEMENTS:-\"cores\", \"spread\", \"os\"}]},
 "timing": {"warmup_s": 0.2, "min_time_s": 0.5, "max_time_s": 2, "target_ci": 0.01}}
JSON
start_fleet placement
SECONDS=0
"${cli[@]}" submit "$sweep" --wait >"$run/submitted.txt" || true
echo "sweep: ${SECONDS}s"
stop_fleet
"${cli[@]}" query --db "$db" "
  with r as (select s.*, json_extract(j.spec, '$.thread_placement') as asked, j.error as job_error
             from jobs j left join result_summary s on s.job_id = j.job_id where j.kind = 'benchmark')
  select r.batch_size, r.threads, coalesce(r.asked, 'cores') as placement, r.placement_cpus as cpus,
         r.placement_cores as cores, r.placement_nodes as nodes, r.processes,
         printf('%.4f', r.median_ms) as median_ms,
         printf('±%.1f%%', 100 * (r.median_ci_high_ms - r.median_ci_low_ms) / 2 / r.median_ms) as interval,
         printf('%.3f', r.median_ms / (select d.median_ms from r d where d.batch_size = r.batch_size
                                       and d.threads = r.threads and coalesce(d.asked, 'cores') = 'cores')) as vs_cores,
         r.job_error as error
  from r order by r.batch_size, r.threads, placement"
