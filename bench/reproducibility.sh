#!/usr/bin/env bash
# Does a sweep give the same numbers when it is run again? Runs one sweep file twice, each
# time in a fresh fleet (a new coordinator on the same store, new agents, new workers), on
# this host, and prints per configuration the two medians with their 95% intervals, the
# ratio of the second to the first, and whether the two intervals overlap; then how many
# do, and `benchfleet compare` of the two runs.
#
#   bench/reproducibility.sh [SWEEP.json]   (default: examples/cpu-mlp.json, the quickstart's)
#   SLOWDOWN=0.1: from the second run on, a real-time (SCHED_FIFO) loop on every CPU takes
#   that share of each 200 us, an induced slowdown compare must find (needs root). The
#   period is well below a timed block (>= 1 ms), so every block is stretched alike; a
#   share of each 10 ms would leave most sub-ms blocks untouched and the median unmoved
#   ROUNDS=2 (runs of the sweep, each in a fresh fleet: every later run's medians are
#   checked against every earlier run's intervals)
#   BUILD=build AGENTS=2 DB=reproducibility.db PROCESSES=   (the coordinator's --processes;
#   unset: its default)
# AGENTS agents run on this one host as the quickstart's two do, taking turns.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
agent_count=${AGENTS:-2}
db=${DB:-$(pwd)/reproducibility.db}
sweep_file=${1:-examples/cpu-mlp.json}
for program in coordinator agent worker; do
  [[ -x $build/$program/benchfleet-$program ]] ||
    { echo "reproducibility: build first (deploy/build.sh --programs)" >&2; exit 1; }
done
source bench/local_fleet.sh

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs;" \
  "load $(cut -d' ' -f1-3 /proc/loadavg); $(env | grep -E '^OPENBLAS_' | tr '\n' ' ')"
rm -f "$db" "$db-wal" "$db-shm"
sweeps=()
rounds=${ROUNDS:-2}
antagonists=()
stop_antagonists() {
  local pid
  for pid in "${antagonists[@]}"; do kill "$pid" 2>/dev/null || true; done
  antagonists=()
}
trap 'stop_antagonists; stop_fleet; rm -rf "$run"' EXIT
for round in $(seq "$rounds"); do
  if [[ -n ${SLOWDOWN:-} && $round == 2 ]]; then
    for ((cpu = 0; cpu < $(nproc); ++cpu)); do
      taskset -c "$cpu" chrt -f 50 python3 -c '
import sys, time
busy, period = float(sys.argv[1]) * 0.0002, 0.0002
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < busy:
        pass
    time.sleep(period - busy)' "$SLOWDOWN" &
      antagonists+=($!)
    done
    echo "from run 2 on: a SCHED_FIFO loop takes $SLOWDOWN of every CPU"
  fi
  start_fleet "run-$round"
  SECONDS=0
  "${cli[@]}" submit "$sweep_file" --wait >"$run/submitted-$round.txt" ||
    { cat "$run/submitted-$round.txt" "$run/run-$round"/*.log >&2; exit 1; }
  sweeps+=("$(sed -nE 's/^sweep ([0-9]+) .*/\1/p' "$run/submitted-$round.txt")")
  echo "run $round: sweep ${sweeps[-1]} in ${SECONDS}s, $(date -u +%H:%M:%S) UTC"
  stop_fleet
done
stop_antagonists

# Read with no coordinator: each configuration of one run against the same on the same
# agent in the other; each sweep's own results, not the reruns the regression judge
# queued to confirm a candidate.
read_cli() { "${cli[@]}" "$1" --db "$db" "${@:2}"; }
echo
echo "per configuration (ratio = second / first; overlap: the two 95% intervals share a point):"
own="with own as (select s.* from result_summary s join jobs j on j.job_id = s.job_id
                  where j.confirms_job_id is null)"
read_cli query "$own
  select a.host, a.model, a.dtype, a.batch_size as batch, a.threads, a.processes as k,
         printf('%.4g [%.4g, %.4g]', a.median_ms, a.median_ci_low_ms, a.median_ci_high_ms) as first_ms,
         printf('%.4g [%.4g, %.4g]', b.median_ms, b.median_ci_low_ms, b.median_ci_high_ms) as second_ms,
         printf('%.3f', b.median_ms / a.median_ms) as ratio,
         case when a.median_ci_low_ms is null or b.median_ci_low_ms is null then 'no interval'
              when a.median_ci_high_ms >= b.median_ci_low_ms
               and b.median_ci_high_ms >= a.median_ci_low_ms then 'yes' else 'no' end as overlap,
         case when b.median_ms between a.median_ci_low_ms and a.median_ci_high_ms
              then 'yes' else 'no' end as second_in_first
  from own a join own b
    on b.host = a.host and b.model = a.model and b.mode = a.mode and b.dtype = a.dtype
   and b.batch_size = a.batch_size and b.threads = a.threads and b.device = a.device
  where a.sweep_id = ${sweeps[0]} and b.sweep_id = ${sweeps[1]}
  order by a.host, a.model, a.dtype, a.batch_size, a.threads"
echo
echo "coverage: the later run's median inside the earlier run's 95% interval, per pair of runs:"
for ((i = 0; i < rounds; ++i)); do
  for ((j = i + 1; j < rounds; ++j)); do
    read_cli query "$own
  select ${sweeps[i]} as earlier, ${sweeps[j]} as later, count(*) as configurations,
         sum(a.median_ci_high_ms >= b.median_ci_low_ms and b.median_ci_high_ms >= a.median_ci_low_ms)
           as intervals_overlap,
         sum(b.median_ms between a.median_ci_low_ms and a.median_ci_high_ms) as later_in_earlier,
         printf('%.3f', min(b.median_ms / a.median_ms)) as ratio_min,
         printf('%.3f', max(b.median_ms / a.median_ms)) as ratio_max
  from own a join own b
    on b.host = a.host and b.model = a.model and b.mode = a.mode and b.dtype = a.dtype
   and b.batch_size = a.batch_size and b.threads = a.threads and b.device = a.device
  where a.sweep_id = ${sweeps[i]} and b.sweep_id = ${sweeps[j]}"
  done
done
echo
echo "benchfleet compare ${sweeps[0]} ${sweeps[1]} --db $db:"
read_cli compare "${sweeps[0]}" "${sweeps[1]}" || true
echo
echo "store: $db"
