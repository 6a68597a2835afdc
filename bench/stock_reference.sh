#!/usr/bin/env bash
# The worker's medians against an independent reference: the same MLP forward pass in
# a plain LibTorch program (bench_stock_reference: nothing of benchfleet linked, only
# torch::set_num_threads set, started with none of the variables the agent sets), on
# the same CPUs. Goal: every median within 10% (bench/README.md, The worker against a
# stock LibTorch loop).
#
# One interleaved run: each round goes through every case — omp_wait_policy x dtype
# (fp32, bf16, int8) x batch (1, 8) x threads (1, 2) — and runs the worker and the
# reference back to back, the order swapped every round, so that drift hits both alike.
# The worker runs as the agent starts it (agent/runner.cc, WorkerEnvironment):
# OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS = threads, OMP_WAIT_POLICY
# only for passive or active, pinned to the first `threads` allowed CPUs, with the
# job's default timing. The reference runs under the same wait policy (unset for
# default) and pinning, and nothing else. With PYTHON=1 torch.utils.benchmark runs each
# case too (blocked_autorange, the same environment as the reference), for the Python
# column, in the python of the torch the worker links (TORCH_PYTHON; default: the venv
# of deploy/torch.env): no comparison crosses versions.
#
# Per case the table gives each round's worker and reference medians, and the median
# over the rounds of worker / reference - 1; "ci" is the widest half-interval
# (median_ci_relative) of the worker's rounds, "eff" its effective threads. The worker
# runs with the job's default timing unless WORKER_TIMING gives a `timing` object.
# usage: bench/stock_reference.sh [build dir] [rounds] [policies]
#   e.g. bench/stock_reference.sh build 2 "default passive active"
#   env: TIME_S (the reference's timed seconds, 3), LAYERS (1024,1024,10), PYTHON (0),
#        WORKER_TIMING (e.g. '{"min_time_s": 0.5, "max_time_s": 1}')
set -euo pipefail
build=${1:-build}
rounds=${2:-2}
policies=${3:-default passive active}
worker=$build/worker/benchfleet-worker
reference=$build/bench/bench_stock_reference
source "$(dirname "$0")/../deploy/torch.env"
torch_python=${TORCH_PYTHON:-$BENCHFLEET_TORCH_VENV/bin/python}
for program in "$worker" "$reference"; do
  [[ -x $program ]] || { echo "stock_reference: $program not built" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
  "load before: $(cut -d' ' -f1-3 /proc/loadavg)" \
  "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-unset}"
TORCH_PYTHON=$torch_python python3 - "$worker" "$reference" "$dir" "$rounds" "${TIME_S:-3}" "${LAYERS:-1024,1024,10}" \
  "${PYTHON:-0}" "${WORKER_TIMING:-}" $policies <<'PY'
import json, os, statistics, subprocess, sys
torch_python = os.environ["TORCH_PYTHON"]

worker, reference, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
rounds, time_s, layers, python = int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7] == "1"
timing = json.loads(sys.argv[8]) if sys.argv[8] else None
policies = sys.argv[9:]
cases = [(policy, dtype, batch, threads)
         for policy in policies
         for dtype in ("fp32", "bf16", "int8")
         for batch in (1, 8)
         for threads in (1, 2)]
allowed = sorted(os.sched_getaffinity(0))
# What the agent manages, and what a stock environment does not have.
managed = ("OMP_", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_", "GOMP_", "KMP_")

def stock_env(policy):
    env = {k: v for k, v in os.environ.items() if not k.startswith(managed)}
    if policy != "default":
        env["OMP_WAIT_POLICY"] = policy.upper()
    return env

def agent_env(policy, threads):
    env = stock_env(policy)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(threads)
    return env

def pin(threads):
    return ["taskset", "-c", ",".join(str(c) for c in allowed[:threads])]

def run_worker(case):
    policy, dtype, batch, threads = case
    job = os.path.join(workdir, "job.json")
    out = os.path.join(workdir, "result.json")
    with open(job, "w") as f:
        json.dump({"job_id": 0, "model": "mlp",
                   "model_args": {"layers": [int(x) for x in layers.split(",")]},
                   "mode": "inference", "dtype": dtype, "device": "cpu", "batch_size": batch,
                   "threads": threads, "omp_wait_policy": policy,
                   **({"timing": timing} if timing else {})}, f)
    subprocess.run(pin(threads) + [worker, "--job", job, "--out", out], env=agent_env(policy, threads),
                   check=True, stderr=subprocess.DEVNULL)
    r = json.load(open(out))
    s = r["stats"]
    return s["median_ms"], s, r

def run_reference(case):
    policy, dtype, batch, threads = case
    out = subprocess.run(pin(threads) + [reference, "--layers", layers, "--dtype", dtype,
                                         "--batch", str(batch), "--threads", str(threads),
                                         "--time-s", time_s],
                         env=stock_env(policy), check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["median_ms"]

PYTHON_REF = r'''
import sys, torch, torch.utils.benchmark as benchmark
layers, dtype, batch, threads, time_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
sizes = [int(x) for x in layers.split(",")]
torch.manual_seed(0)
mods = []
for i in range(len(sizes) - 1):
    mods.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
    if i + 2 < len(sizes): mods.append(torch.nn.ReLU())
model = torch.nn.Sequential(*mods).eval()
x = torch.randn(batch, sizes[0])
if dtype == "bf16": model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
if dtype == "int8": model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
with torch.inference_mode():
    t = benchmark.Timer("model(x)", globals={"model": model, "x": x}, num_threads=threads)
    m = t.blocked_autorange(min_run_time=time_s)
print(m.median * 1e3)
'''

def run_python(case):
    policy, dtype, batch, threads = case
    out = subprocess.run(pin(threads) + [torch_python, "-c", PYTHON_REF, layers, dtype,
                                         str(batch), str(threads), time_s],
                         env=stock_env(policy), check=True, capture_output=True, text=True)
    return float(out.stdout.strip())

results = {case: {"worker": [], "reference": [], "python": [], "noisy": [], "ci": [], "eff": []}
           for case in cases}
for r in range(rounds):
    order = cases if r % 2 == 0 else list(reversed(cases))
    for case in order:
        steps = [("worker", run_worker), ("reference", run_reference)]
        if python:
            steps.append(("python", run_python))
        if r % 2:
            steps.reverse()
        for name, run in steps:
            value = run(case)
            if name == "worker":
                median, stats, result = value
                results[case]["worker"].append(median)
                results[case]["noisy"].append(stats["noisy"])
                rel = stats.get("median_ci_relative")
                results[case]["ci"].append(rel if rel is not None else float("nan"))
                results[case]["eff"].append(result["effective_threads"])
            else:
                results[case][name].append(value)

header = (f"{'policy':<8} {'dtype':<5} {'batch':>5} {'thr':>3}  {'worker ms':<17} "
          f"{'reference ms':<17} {'worker/ref-1':>12} {'ci':>6} {'eff':>5}")
if python:
    header += f"  {'python ms':<17}"
print(header)
worst = 0.0
for case in cases:
    policy, dtype, batch, threads = case
    c = results[case]
    # The median over the rounds of each round's pair: the two sides of a pair run back
    # to back, while a virtual machine's two vCPUs change pace by 20-30% for seconds at
    # a time (where the host schedules them), so many short pairs, not a few long runs.
    ratio = statistics.median([w / ref for w, ref in zip(c["worker"], c["reference"])]) - 1
    worst = max(worst, abs(ratio))
    fmt = lambda values: "/".join(f"{v:.3f}" for v in values)
    line = (f"{policy:<8} {dtype:<5} {batch:>5} {threads:>3}  {fmt(c['worker']):<17} "
            f"{fmt(c['reference']):<17} {ratio:>+11.1%} {max(c['ci']):>6.2%} "
            f"{statistics.median(c['eff']):>5.2f}")
    if python:
        line += f"  {fmt(c['python']):<17}"
    if any(c["noisy"]):
        line += "  noisy"
    print(line)
print(f"# largest |worker / reference - 1|: {worst:.1%}; "
      f"{'within' if worst <= 0.10 else 'NOT within'} 10%")
PY
