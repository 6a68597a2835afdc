#!/usr/bin/env bash
# The CPU techniques' figures on this host, through a local coordinator and one agent:
# structured and magnitude pruning of the mlp (examples/cpu-prune.json), the cnn's
# channels_last, a TorchScript cnn's jit modes, the transformer's top operators,
# processes or threads (examples/processes-or-threads.json), the largest cnn batch within
# 2 GiB (examples/cnn-max-batch.json, a few minutes) and the mlp's highest server rate
# within a 5 ms p99 (examples/cpu-serving.json, a few minutes). --quick leaves out the
# last two; --serving runs the last alone.
# Run on a quiet host; the results stay in the store it names.
# usage: bench/techniques.sh [BUILD_DIR] [--quick|--serving]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$repo/build}")
quick=${2:-}
run_dir=$(mktemp -d -t benchfleet-techniques.XXXXXX)
db=$run_dir/results.db
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
cli=$build/cli/benchfleet

"$build/coordinator/benchfleet-coordinator" --db "$db" --agents 'tcp://127.0.0.1:*' \
  --clients 'tcp://127.0.0.1:*' --ready-file "$run_dir/ready.json" 2>"$run_dir/coordinator.log" &
pids+=($!)
for _ in $(seq 300); do [[ -s $run_dir/ready.json ]] && break; sleep 0.1; done
agents=$(sed -E 's/.*"agents":"([^"]+)".*/\1/' "$run_dir/ready.json")
BENCHFLEET_COORDINATOR=$(sed -E 's/.*"clients":"([^"]+)".*/\1/' "$run_dir/ready.json")
export BENCHFLEET_COORDINATOR
"$build/agent/benchfleet-agent" --coordinator "$agents" --name techniques --no-calibrate \
  --state-dir "$run_dir/agent" --worker "$build/worker/benchfleet-worker" 2>"$run_dir/agent.log" &
pids+=($!)
for _ in $(seq 600); do
  "$cli" status --format json 2>/dev/null | grep -q '"agent":' && break
  sleep 0.1
done

"$build/bench/bench_write_torchscript_cnn" --out "$run_dir/cnn.pt" --width 32 >/dev/null
sed "s|@TORCHSCRIPT_CNN@|$run_dir/cnn.pt|" "$repo/bench/techniques/jit.json" >"$run_dir/jit.json"

echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset}"
sweeps=("$repo/examples/cpu-prune.json" "$repo/bench/techniques/channels-last.json" "$run_dir/jit.json"
        "$repo/bench/techniques/transformer-profile.json" "$repo/examples/processes-or-threads.json")
[[ $quick == --quick ]] || sweeps+=("$repo/examples/cnn-max-batch.json" "$repo/examples/cpu-serving.json")
[[ $quick == --serving ]] && sweeps=("$repo/examples/cpu-serving.json")
for sweep in "${sweeps[@]}"; do
  "$cli" submit "$sweep" --wait >/dev/null
done

q() { echo; echo "== $1"; "$cli" query "$2"; }
if [[ $quick != --serving ]]; then
q "pruning the mlp (view prune_comparison)" \
  "select threads, prune_kind, round(baseline_median_ms, 3) as unpruned_ms, round(median_ms, 3) as median_ms,
          round(speedup, 2) as speedup, params, weight_sparsity, round(top1_agreement, 3) as top1_agreement
   from prune_comparison order by threads, prune_kind"
q "channels_last and jit (view technique_comparison)" \
  "select model, technique, variant, baseline, round(baseline_median_ms, 3) as baseline_ms,
          round(median_ms, 3) as median_ms, round(speedup, 2) as speedup, max_abs_err
   from technique_comparison order by model, variant"
q "the transformer's top 5 operators by self time (op_profile)" \
  "select o.op, o.calls / r.profile_iterations as calls_per_iter,
          round(o.self_us / r.profile_iterations / 1000.0, 2) as self_ms_per_iter,
          round(o.total_us / r.profile_iterations / 1000.0, 2) as total_ms_per_iter
   from op_profile o join results r using (job_id) where r.model = 'transformer'
   order by o.self_us desc limit 5"
q "processes or threads (view replica_scaling)" \
  "select batch_size, replicas, threads, cores, round(aggregate_throughput_per_s, 1) as samples_per_s,
          round(replica_median_ms, 3) as replica_median_ms, round(slowest_median_ms, 3) as slowest_ms,
          round(overlap_s, 2) as overlap_s, noisy
   from replica_scaling where sweep_id = (select sweep_id from sweeps where name = 'processes-or-threads')
   order by batch_size, replicas"
[[ $quick == --quick ]] || q "the largest cnn batch within 2 GiB (view max_batch_fit)" \
  "select model, threads, memory_mb, baseline_mb, max_batch, round(median_ms, 1) as median_ms,
          round(throughput_per_s, 1) as samples_per_s, probes from max_batch_fit"
fi
[[ $quick == --quick ]] || q "the mlp served: the highest rate within p99 5 ms (view serving)" \
  "select threads, max_batch, max_wait_ms, slo_p99_ms, max_qps_within_slo, round(achieved_qps, 1) as achieved_qps,
          round(p50_ms, 3) as p50_ms, round(p99_ms, 3) as p99_ms, queries, round(mean_batch, 2) as mean_batch,
          round(offline_ms, 3) as offline_batch_ms
   from serving order by threads"
q "noise: results flagged noisy or disturbed" \
  "select count(*) as results, sum(noisy) as noisy, sum(json_extract(detail, '$.disturbed')) as disturbed
   from results where ok = 1"
echo; echo "store: $db (kept)"
