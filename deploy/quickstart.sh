#!/usr/bin/env bash
# The main job on one machine: installs dependencies, builds and installs benchfleet,
# starts a coordinator and two agents on loopback, runs the default CPU sweep with a
# progress bar, prints the results and a thread-scaling comparison, stops everything it
# started, and leaves results.db in the current directory.
#
# usage: deploy/quickstart.sh [SWEEP_FILE]   (default: examples/cpu-mlp.json)
set -euo pipefail
here=$(pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
sweep_file=$(realpath "${1:-$repo/examples/cpu-mlp.json}")

"$repo/deploy/install-deps.sh"
# Only the four programs, not the test suite (deploy/test.sh builds that); cmake's
# progress lines show how far it is, its configure chatter does not.
build_dir=$repo/${BENCHFLEET_BUILD_DIR:-build}
echo "building the four programs into $build_dir"
build_started=$SECONDS
(cd "$repo" && deploy/build.sh --programs) |
  { grep --line-buffered -E '^\[ *[0-9]+%\]|^\[[0-9]+/[0-9]+\]' || true; }
echo "built in $((SECONDS - build_started)) s"
sudo_cmd=(); [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" cmake --install "$build_dir" --prefix /usr/local >/dev/null
hash -r
echo "installed: $(command -v benchfleet-coordinator benchfleet-agent benchfleet-worker benchfleet | tr '\n' ' ')"

# A fresh store for this run; an earlier one is kept beside it, renamed.
db=$here/results.db
if [[ -e $db ]]; then
  backup=$db.$(date +%Y%m%dT%H%M%S)
  mv "$db" "$backup"
  for suffix in -wal -shm; do [[ -e $db$suffix ]] && mv "$db$suffix" "$backup$suffix"; done
  echo "kept the previous results.db as $backup"
fi

run_dir=$(mktemp -d -t benchfleet-quickstart.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$run_dir"
}
trap cleanup EXIT
fail() {
  echo "quickstart: $1" >&2
  tail -n 20 "$run_dir"/*.log >&2 || true
  exit 1
}

# Wildcard ports on loopback: the coordinator writes the ports it got to the ready file.
benchfleet-coordinator --db "$db" --agents 'tcp://127.0.0.1:*' --clients 'tcp://127.0.0.1:*' \
  --ready-file "$run_dir/ready.json" 2>"$run_dir/coordinator.log" &
pids+=($!)
for _ in $(seq 300); do [[ -s $run_dir/ready.json ]] && break; sleep 0.1; done
[[ -s $run_dir/ready.json ]] || fail "the coordinator did not start"
agents_endpoint=$(sed -E 's/.*"agents":"([^"]+)".*/\1/' "$run_dir/ready.json")
BENCHFLEET_COORDINATOR=$(sed -E 's/.*"clients":"([^"]+)".*/\1/' "$run_dir/ready.json")
export BENCHFLEET_COORDINATOR

for name in quickstart-a quickstart-b; do
  benchfleet-agent --coordinator "$agents_endpoint" --name "$name" \
    --state-dir "$run_dir/$name" 2>"$run_dir/$name.log" &
  pids+=($!)
done
agents=0
for _ in $(seq 600); do
  agents=$(benchfleet status --format json 2>/dev/null | grep -c '"agent":' || true)
  [[ $agents -ge 2 ]] && break
  sleep 0.1
done
[[ $agents -ge 2 ]] || fail "the agents did not register"
echo "coordinator at $BENCHFLEET_COORDINATOR, 2 agents registered"
echo

SECONDS=0
benchfleet submit "$sweep_file" --wait | tee "$run_dir/submitted.txt" || fail "the sweep did not complete"
sweep_id=$(sed -nE 's/^sweep ([0-9]+) .*/\1/p' "$run_dir/submitted.txt")
echo "sweep $sweep_id finished in ${SECONDS}s"
echo
echo "results (benchfleet results --sweep $sweep_id):"
benchfleet results --sweep "$sweep_id"
echo
echo "what they ran on (each host's LibTorch, BLAS and oneDNN, as its worker's runtime says):"
benchfleet query "
  select distinct host, s.torch_version,
         json_extract(r.detail, '\$.runtime.blas') || ' ' ||
           json_extract(r.detail, '\$.runtime.blas_version') as blas,
         json_extract(r.detail, '\$.runtime.onednn_version') as onednn
  from result_summary s join results r using (job_id)
  where s.sweep_id = $sweep_id order by host"
echo
echo "thread scaling, 1 -> 2 threads (median ms; speedup = t1 / t2):"
benchfleet query "
  select one.host, one.model, one.batch_size,
         one.median_ms as median_ms_1t, two.median_ms as median_ms_2t,
         round(one.median_ms / two.median_ms, 2) as speedup,
         round(two.effective_threads, 2) as effective_threads_2t
  from result_summary one
  join result_summary two
    on two.sweep_id = one.sweep_id and two.host = one.host and two.model = one.model
   and two.mode = one.mode and two.dtype = one.dtype and two.batch_size = one.batch_size
  where one.sweep_id = $sweep_id and one.threads = 1 and two.threads = 2
  order by one.host, one.model, one.batch_size"
echo
echo "results are in $db; read them with no coordinator running: benchfleet results --db $db"
echo "  (or: sqlite3 $db \"select * from result_summary\")"
