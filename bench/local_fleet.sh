# Sourced by bench scripts: fresh local fleets on this host, on one store. Needs $build
# (a build directory), $db (the store), $agent_count; optional $PROCESSES (the
# coordinator's --processes) and $AGENT_FLAGS (more flags for each agent, split on
# spaces: --no-calibrate). start_fleet NAME starts a coordinator and $agent_count
# agents and exports BENCHFLEET_COORDINATOR; stop_fleet stops them; the EXIT trap stops
# them and removes $run.
cli=("$build/cli/benchfleet")
run=$(mktemp -d -t benchfleet-bench-fleet.XXXXXX)
pids=()
stop_fleet() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap 'stop_fleet; rm -rf "$run"' EXIT

# One fresh fleet: a coordinator on the store and AGENTS agents, each with its own state.
start_fleet() {
  local fleet=$run/$1
  mkdir -p "$fleet"
  "$build/coordinator/benchfleet-coordinator" --db "$db" --agents 'tcp://127.0.0.1:*' \
    --clients 'tcp://127.0.0.1:*' --ready-file "$fleet/ready.json" ${PROCESSES:+--processes "$PROCESSES"} \
    2>"$fleet/coordinator.log" &
  pids+=($!)
  for _ in $(seq 300); do [[ -s $fleet/ready.json ]] && break; sleep 0.1; done
  [[ -s $fleet/ready.json ]] || { cat "$fleet/coordinator.log" >&2; exit 1; }
  local agents
  agents=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["agents"])' "$fleet/ready.json")
  BENCHFLEET_COORDINATOR=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["clients"])' "$fleet/ready.json")
  export BENCHFLEET_COORDINATOR
  local i
  for ((i = 0; i < agent_count; ++i)); do
    "$build/agent/benchfleet-agent" --coordinator "$agents" --name "repro-$i" \
      --worker "$build/worker/benchfleet-worker" --state-dir "$fleet/agent-$i" ${AGENT_FLAGS:-} \
      2>"$fleet/agent-$i.log" &
    pids+=($!)
  done
  local registered=0
  for _ in $(seq 600); do
    registered=$("${cli[@]}" status --format json 2>/dev/null | grep -c '"agent":' || true)
    ((registered >= agent_count)) && return 0
    sleep 0.1
  done
  echo "reproducibility: $registered of $agent_count agents registered" >&2
  exit 1
}

