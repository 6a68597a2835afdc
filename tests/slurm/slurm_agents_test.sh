#!/usr/bin/env bash
# Agents as Slurm jobs, on a real single-node Slurm started here: munged, slurmctld and
# slurmd (Debian's slurm-wlm and munge) with a configuration written into a temporary
# directory, on free ports, bound to the jobs' CPUs by task/affinity. A small sweep is
# queued, two agents are submitted with deploy/slurm/benchfleet-agent.sbatch (one CPU
# each); every result's host facts must be its Slurm job's allocation (the agent's name,
# the one CPU scontrol names, one thread, this host), and the agents must leave by
# themselves (--exit-when-idle) with nothing requeued. Then the bad input: an agent asked
# for CPUs outside its allocation exits non-zero with the reason in the job's output file.
# Needs root and the Slurm and munge daemons; skips (exit 77) saying which is missing.
# Usage: slurm_agents_test.sh COORDINATOR AGENT WORKER CLI SBATCH_SCRIPT
set -euo pipefail
coordinator=$1 agent=$2 worker=$3 cli=$4 sbatch_script=$5
skip() { echo "SKIP: $1"; exit 77; }
export PATH=$PATH:/usr/sbin:/sbin

[[ $(id -u) -eq 0 ]] || skip "slurmd and munged run as root here (running as uid $(id -u))"
(($(nproc) >= 2)) || skip "two one-CPU agents need 2 CPUs; this host has $(nproc)"
for tool in munged munge slurmctld slurmd sbatch squeue sinfo scontrol scancel python3; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (Debian: slurm-wlm, munge)"
done

dir=$(mktemp -d -t bf-slurm.XXXXXX)
chmod 755 "$dir"  # munge's clients reach its socket through it
pids=()
jobs_submitted=false
cleanup() {
  local pid
  # The jobs first, while slurmd is there to end their processes.
  if $jobs_submitted; then
    scancel --full --quiet --partition bf 2>/dev/null || true
    for _ in $(seq 100); do
      [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
      sleep 0.1  # waits for slurmd to end the cancelled jobs' processes
    done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done  # waits for the daemon to exit
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [[ -n ${BENCHFLEET_KEEP_TEST_DIR:-} ]]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
fail() {
  echo "FAIL: $1" >&2
  for log in "$dir"/*.log "$dir"/*.out "$dir"/log/*; do
    [[ -f $log ]] && { echo "==== $log" >&2; tail -n 25 "$log" >&2; }
  done
  exit 1
}
# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1  # polls a daemon's state
  done
}
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# munge: its own key, socket, pid, log and seed, all in the temporary directory.
mkdir -m 700 "$dir/munge-key" && mkdir -m 755 "$dir/munge" "$dir/log" "$dir/state" "$dir/spool"
dd if=/dev/urandom of="$dir/munge-key/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge-key/munge.key"
socket=$dir/munge/munge.socket
munged --foreground --force --socket="$socket" --key-file="$dir/munge-key/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
  --seed-file="$dir/munge/munged.seed" 2>"$dir/munged.log" &
pids+=($!)
munge_answers() { munge --socket="$socket" --no-input --output=/dev/null 2>/dev/null; }
wait_for 20 munge_answers ||
  fail "munged did not answer on $socket"

# Slurm: one node (this host, its CPUs), one partition, jobs bound to their CPUs.
node=$(hostname -s)
cpus=$(nproc)
export SLURM_CONF=$dir/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=benchfleet-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=100 State=UNKNOWN
PartitionName=bf Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -f "$SLURM_CONF" >"$dir/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$dir/slurmd.log" 2>&1 &
pids+=($!)
node_idle() { [[ $(sinfo -h -n "$node" -o %t 2>/dev/null) == idle ]]; }
wait_for 60 node_idle || fail "the node did not become idle: $(sinfo 2>&1)"

# The coordinator, and the sweep queued before any agent comes: an agent has work as soon
# as it registers, so a short --exit-when-idle ends it only after the sweep.
"$coordinator" --db "$dir/results.db" --agents 'tcp://127.0.0.1:*' --clients 'tcp://127.0.0.1:*' \
  --heartbeat-ms 500 --processes 1 --share-machines --ready-file "$dir/ready.json" \
  2>"$dir/coordinator.log" &
pids+=($!)
wait_for 30 test -s "$dir/ready.json" || fail "the coordinator did not start"
agents_endpoint=$(sed -E 's/.*"agents":"([^"]+)".*/\1/' "$dir/ready.json")
export BENCHFLEET_COORDINATOR
BENCHFLEET_COORDINATOR=$(sed -E 's/.*"clients":"([^"]+)".*/\1/' "$dir/ready.json")
cat >"$dir/sweep.json" <<'JSON'
{"name": "slurm", "placement": "any",
 "matrix": {"model": "mlp", "batch_size": [1, 2, 4, 8, 16, 32], "threads": 1, "mode": "inference"},
 "models": {"mlp": {"layers": [64, 64, 10]}},
 "timing": {"warmup_s": 0.02, "min_time_s": 0.1, "max_time_s": 0.2, "target_ci": 0.5}}
JSON
"$cli" submit "$dir/sweep.json" >"$dir/submit.log" 2>&1 || fail "submit: $(cat "$dir/submit.log")"

# The agents, as a user submits them. TMPDIR: their node-local state under this test's dir.
export BENCHFLEET_AGENT_COORDINATOR=$agents_endpoint BENCHFLEET_AGENT_BIN=$agent
export BENCHFLEET_EXIT_WHEN_IDLE=3 BENCHFLEET_AGENT_OPTIONS="--worker $worker --no-calibrate"
export TMPDIR=$dir
jobs_submitted=true
job_ids=()
for _ in 1 2; do
  job_ids+=("$(sbatch --parsable --cpus-per-task=1 --output="$dir/agent-%j.out" "$sbatch_script")")
done
# The CPU each job holds, as Slurm's controller states it, read while it runs.
# (Slurm's CPU ids are its own numbering; on this one-socket node without SMT they are
# the kernel's.)
cpu_ids() { scontrol show job -d "$1" | grep -o 'CPU_IDs=[0-9,-]*' | head -1 | cut -d= -f2; }
holds_cpus() { [[ -n $(cpu_ids "$1") ]]; }
declare -A job_cpu
for id in "${job_ids[@]}"; do
  wait_for 30 holds_cpus "$id" || fail "Slurm job $id did not start"
  job_cpu[$id]=$(cpu_ids "$id")
done
allocations="job ${job_ids[0]} on CPU ${job_cpu[${job_ids[0]}]}, job ${job_ids[1]} on CPU ${job_cpu[${job_ids[1]}]}"
echo "Slurm agents: $allocations"
[[ ${job_cpu[${job_ids[0]}]} != "${job_cpu[${job_ids[1]}]}" ]] || fail "both jobs hold CPU ${job_cpu[${job_ids[0]}]}"

# The agents leave by themselves once the sweep is done and they have been idle: the queue
# empties with no scancel.
sweep_done() { "$cli" status --format json 2>/dev/null | grep -q '"state": *"done"'; }
wait_for 120 sweep_done || fail "the sweep did not finish: $("$cli" status 2>&1)"
queue_empty() { [[ -z $(squeue -h -o %i) ]]; }
wait_for 60 queue_empty || fail "the agents did not leave: $(squeue)"
for id in "${job_ids[@]}"; do
  state=$(scontrol show job "$id" | grep -o 'JobState=[A-Z]*' | cut -d= -f2)
  exit_code=$(scontrol show job "$id" | grep -o ' ExitCode=[0-9:]*' | cut -d= -f2)
  [[ $state == COMPLETED && $exit_code == 0:0 ]] ||
    fail "Slurm job $id ended $state with exit code $exit_code"
  grep -q "Slurm job $id: 1 CPU allocated on this node, jobs run on CPU ${job_cpu[$id]};" \
    "$dir/agent-$id.out" || fail "agent of job $id did not log its allocation"
  grep -q "leaving: idle for 3 s (--exit-when-idle)" "$dir/agent-$id.out" ||
    fail "agent of job $id did not leave by itself"
done

# Every result: ran by one of the two agents, on its job's CPU, in one thread, on this host.
echo "results and their agents' allocations:"
sql="select h.name as agent, json_extract(h.capabilities, '$.host.hostname') as hostname,
            json_extract(h.capabilities, '$.cpus') as agent_cpus, r.placement_cpus, r.threads,
            r.ok from results r join hosts h using (host_id) order by r.job_id"
"$cli" query "$sql"
rows=$("$cli" query --format csv "$sql" | tail -n +2)
[[ $(wc -l <<<"$rows") -eq 6 ]] || fail "expected 6 results, got: $rows"
declare -A expected
for id in "${job_ids[@]}"; do expected[$node-slurm-$id]=${job_cpu[$id]}; done
while IFS=, read -r name hostname agent_cpus placement_cpus threads ok; do
  cpu=${expected[$name]:-}
  [[ -n $cpu ]] || fail "a result came from $name, not an agent of the Slurm jobs"
  [[ $hostname == "$(hostname)" ]] || fail "$name reported host $hostname"
  [[ $agent_cpus == "$cpu" && $placement_cpus == "$cpu" ]] ||
    fail "$name ran on CPUs $placement_cpus (agent: $agent_cpus), its allocation is CPU $cpu"
  [[ $threads == 1 && $ok == 1 ]] || fail "$name: threads $threads, ok $ok"
done <<<"$rows"
status=$("$cli" status --format json)
grep -q '"requeued_jobs": *0' <<<"$status" || fail "jobs were requeued: $status"
[[ $(grep -o 'left: idle for 3 s' <<<"$status" | wc -l) -eq 2 ]] ||
  fail "the coordinator did not see both agents leave: $status"

# Bad input: allocations with no CPU the agent can use. Each agent exits non-zero before
# it registers, and the job's output file says why:
#  - its --cpus beyond its one-CPU allocation;
#  - its affinity widened to the whole node (as where Slurm does not bind jobs to their
#    CPUs, TaskPlugin=task/none): which CPU is the job's cannot be told.
printf '#!/bin/sh\nexec taskset -c 0-%d "%s" "$@"\n' $((cpus - 1)) "$agent" >"$dir/unbound-agent"
chmod +x "$dir/unbound-agent"
outside=$(BENCHFLEET_AGENT_OPTIONS="--worker $worker --no-calibrate --cpus 0-1" \
  sbatch --parsable --cpus-per-task=1 --output="$dir/bad-%j.out" "$sbatch_script")
unbound=$(BENCHFLEET_AGENT_BIN=$dir/unbound-agent \
  sbatch --parsable --cpus-per-task=1 --output="$dir/bad-%j.out" "$sbatch_script")
job_ended() { [[ $(scontrol show job "$1" | grep -o 'JobState=[A-Z]*') =~ =(COMPLETED|FAILED) ]]; }
expect_refusal() {
  local id=$1 reason=$2
  wait_for 60 job_ended "$id" || fail "Slurm job $id did not end: $(scontrol show job "$id")"
  scontrol show job "$id" | grep -q 'JobState=FAILED' || fail "Slurm job $id did not fail"
  grep -q -- "$reason" "$dir/bad-$id.out" ||
    fail "the output of Slurm job $id does not say \"$reason\": $(cat "$dir/bad-$id.out")"
  echo "bad input, in the output of Slurm job $id: $(grep -o -- "$reason.*" "$dir/bad-$id.out")"
}
expect_refusal "$outside" "--cpus 0-1: CPU [0-9]* is not among Slurm job $outside's CPUs on this node"
expect_refusal "$unbound" \
  "Slurm job $unbound was allocated 1 CPU on this node, but this process may run on $cpus CPUs"
echo "PASS: 6 results on their Slurm jobs' CPUs ($allocations); both agents left by themselves"
