#!/usr/bin/env bash
# A gang spread over two hosts: two agents in separate network namespaces, joined by a
# veth pair, run a data-parallel job of 2 ranks (placement "spread"). Its ranks must
# talk over the veth addresses, not loopback: rank 0's store and each rank's Gloo
# address are read back from result_ranks and printed. Needs root and `ip netns`;
# where namespaces are not permitted it skips (exit 77) saying why.
# Usage: netns_gang_test.sh COORDINATOR AGENT WORKER CLI
set -euo pipefail
coordinator=$1 agent=$2 worker=$3 cli=$4
skip() { echo "SKIP: $1"; exit 77; }

[[ $(id -u) -eq 0 ]] || skip "network namespaces need root (running as uid $(id -u))"
command -v ip >/dev/null || skip "the ip command (iproute2) is not installed"
(( $(nproc) >= 2 )) || skip "two one-thread ranks need 2 CPUs; this host has $(nproc)"

tag=$$
ns_a=bf-a-$tag ns_b=bf-b-$tag
veth_a=bfa$tag veth_b=bfb$tag
addr_a=10.231.0.1 addr_b=10.231.0.2
dir=$(mktemp -d -t bf-netns.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $1" >&2
  tail -n 30 "$dir"/*.log >&2 || true
  exit 1
}

if ! ip netns add "$ns_a" 2>"$dir/netns.err"; then
  skip "ip netns add is not permitted here: $(cat "$dir/netns.err")"
fi
ip netns add "$ns_b"
ip link add "$veth_a" type veth peer name "$veth_b" || skip "veth pairs are not permitted here"
ip link set "$veth_a" netns "$ns_a"
ip link set "$veth_b" netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev "$veth_a"
ip -n "$ns_b" addr add "$addr_b/24" dev "$veth_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

# The coordinator lives in host A; its client endpoint stays on A's loopback. The agents'
# endpoint is beyond loopback: plain TCP must be asked for (--insecure).
ip netns exec "$ns_a" "$coordinator" --db "$dir/results.db" --agents "tcp://$addr_a:5556" \
  --clients tcp://127.0.0.1:5555 --insecure --heartbeat-ms 500 --ready-file "$dir/ready.json" \
  2>"$dir/coordinator.log" &
pids+=($!)
for _ in $(seq 300); do [[ -s $dir/ready.json ]] && break; sleep 0.1; done
[[ -s $dir/ready.json ]] || fail "the coordinator did not start"
# Each agent's advertise address is its default: the address it reaches the coordinator from.
ip netns exec "$ns_a" "$agent" --coordinator "tcp://$addr_a:5556" --name host-a --cpus 0 \
  --worker "$worker" --state-dir "$dir/agent-a" --no-calibrate 2>"$dir/agent-a.log" &
pids+=($!)
ip netns exec "$ns_b" "$agent" --coordinator "tcp://$addr_a:5556" --name host-b --cpus 1 \
  --worker "$worker" --state-dir "$dir/agent-b" --no-calibrate 2>"$dir/agent-b.log" &
pids+=($!)

client() { ip netns exec "$ns_a" "$cli" --coordinator tcp://127.0.0.1:5555 "$@"; }
for _ in $(seq 300); do
  [[ $(client query --format csv "select 1" 2>/dev/null | wc -l) -ge 1 ]] &&
    client status 2>/dev/null | grep -q host-b && client status 2>/dev/null | grep -q host-a && break
  sleep 0.2
done
cat >"$dir/sweep.json" <<JSON
{"name": "dp across namespaces", "placement": "spread",
 "matrix": {"model": "mlp", "mode": "train", "batch_size": 32,
            "parallel": {"kind": "data", "world_size": 2}},
 "models": {"mlp": {"layers": [256, 512, 10]}},
 "timing": {"warmup_s": 0.05, "min_time_s": 0.2, "max_time_s": 0.5, "target_ci": 0.1}}
JSON
client submit "$dir/sweep.json" --wait >"$dir/submit.log" 2>&1 || fail "the sweep did not finish: $(cat "$dir/submit.log")"

echo "ranks of the data-parallel job (result_ranks):"
client query "select rr.rank, h.name as host, rr.address, rr.store, rr.ok, rr.median_ms
              from result_ranks rr join hosts h on h.host_id = rr.host_id order by rr.rank"
rows=$(client query --format csv "select rr.rank, h.name, rr.address, rr.store, rr.ok
                                  from result_ranks rr join hosts h on h.host_id = rr.host_id
                                  order by rr.rank" | tail -n +2)
client results --view parallel
expected_store_prefix="$addr_a:"
row0=$(sed -n 1p <<<"$rows") row1=$(sed -n 2p <<<"$rows")
[[ $row0 == 0,host-a,$addr_a,$expected_store_prefix*,1 ]] || fail "rank 0 did not run on host-a at $addr_a: $row0"
[[ $row1 == 1,host-b,$addr_b,$expected_store_prefix*,1 ]] || fail "rank 1 did not run on host-b at $addr_b: $row1"
store0=$(cut -d, -f4 <<<"$row0") store1=$(cut -d, -f4 <<<"$row1")
[[ $store0 == "$store1" ]] || fail "the ranks met at different stores: $store0, $store1"
grep -q "met the others at $store0 from $addr_b" "$dir"/agent-b/jobs/*/worker.log 2>/dev/null ||
  echo "(rank 1's worker log was removed with its successful job)"
echo "PASS: rank 0 on $addr_a, rank 1 on $addr_b, both met at $store0 over the veth pair"
