#!/usr/bin/env bash
# What the worker's harness (the std::function closure, blocked timing, adaptive
# sampling, the statistics) adds to a forward pass's median, and what the worker
# takes to start. Goal: <= 2% for the mlp at batch 1 and 64 and the transformer
# at batch 8, at threads 1 and 2.
#
# One interleaved run: each round goes through every configuration. For each,
# bench_harness_overhead alternates, in one process set up by the worker's own
# code, a plain loop and the worker's sampler over the same forward pass
# (PAIRS pairs of TIME_S seconds a side, the order swapped every pair), so that
# drift (clocks, neighbours, the VM's speed) hits both alike; then the real
# worker binary runs the same job once, for its start-up figures. Both run as
# the agent runs a worker: the OpenMP runtime's default wait policy, OMP/OPENBLAS/MKL threads =
# the job's threads, pinned to the first `threads` allowed CPUs.
#
# Per configuration the table gives the median over every pair of
# worker / plain - 1 ("overhead", the plain side's median over blocks of the
# worker's size) with the lowest and highest pair, each side's median, the plain
# loop's single-iteration median ("iter_ms", for the gap between that statistic
# and the blocked one), and the worker binary's start-up: exec to first timed
# iteration less model build and warm-up ("start_s", startup_s - warmup_s), and
# the model build ("build_s").
# usage: bench/harness_overhead.sh [build dir] [rounds]   (env: PAIRS, TIME_S)
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
pairs=${PAIRS:-4}
time_s=${TIME_S:-1}
worker=$build/worker/benchfleet-worker
plain=$build/bench/bench_harness_overhead
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) load before: $(cut -d' ' -f1-3 /proc/loadavg)" \
  "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-unset}"
python3 - "$worker" "$plain" "$dir" "$rounds" "$pairs" "$time_s" <<'PY'
import json, os, statistics, subprocess, sys

worker, plain, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
rounds, pairs, time_s = int(sys.argv[4]), sys.argv[5], sys.argv[6]
mlp = ("mlp", {"layers": [1024, 1024, 10]})
# The transformer of examples/cpu-zoo.json: the default (BERT-base) takes
# seconds per batch-8 pass here.
transformer = ("transformer", {"hidden": 128, "heads": 4, "layers": 2, "ffn": 512, "seq_len": 64})
configs = [(model, args, batch, threads)
           for threads in (1, 2)
           for (model, args), batch in ((mlp, 1), (mlp, 64), (transformer, 8))]
allowed = sorted(os.sched_getaffinity(0))

def env_for(threads):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(threads)
    return env

def job_file(i, model, args, batch, threads):
    path = os.path.join(workdir, f"job{i}.json")
    with open(path, "w") as f:
        json.dump({"job_id": 0, "model": model, "model_args": args, "mode": "inference",
                   "dtype": "fp32", "device": "cpu", "batch_size": batch, "threads": threads,
                   "seed": 0, "timing": {"warmup_s": 0.5, "min_time_s": 1, "max_time_s": 2,
                                         "target_ci": 0.01}}, f)
    return path

def run_bench(job, threads):
    out = subprocess.run(["taskset", "-c", ",".join(map(str, allowed[:threads])), plain,
                          "--job", job, "--warmup", "0.5", "--pairs", pairs, "--time", time_s],
                         env=env_for(threads), check=True, capture_output=True, text=True)
    return json.loads(out.stdout)

def run_worker(job, threads):
    result = os.path.join(workdir, "result.json")
    subprocess.run(["taskset", "-c", ",".join(map(str, allowed[:threads])), worker,
                    "--job", job, "--out", result], env=env_for(threads), check=True,
                   capture_output=True)
    with open(result) as f:
        r = json.load(f)
    assert r["ok"], r.get("error")
    return r

jobs = [job_file(i, *c) for i, c in enumerate(configs)]
rows = {i: [] for i in range(len(configs))}
starts = {i: [] for i in range(len(configs))}
for round_ in range(rounds):
    for i, (model, args, batch, threads) in enumerate(configs):
        p = run_bench(jobs[i], threads)
        w = run_worker(jobs[i], threads)
        for key in ("intraop_threads", "openblas_threads", "omp_wait_policy", "affinity"):
            if p["runtime"][key] != w["runtime"][key]:
                sys.exit(f"set-ups differ in {key}: bench {p['runtime']} worker {w['runtime']}")
        rows[i] += p["pairs"]
        starts[i].append((w["startup_s"] - w["stats"]["warmup_s"], w["model_build_s"]))

med = statistics.median
print(f"{'model':<12}{'batch':>6}{'threads':>8}{'k':>6}{'plain_ms':>10}{'worker_ms':>10}"
      f"{'overhead':>10}{'range':>18}{'iter_ms':>9}{'start_s':>9}{'build_s':>9}")
for i, (model, args, batch, threads) in enumerate(configs):
    r = rows[i]
    over = [x["overhead"] for x in r]
    k = f"{med(x['plain_iters_per_block'] for x in r):.0f}/{med(x['worker_iters_per_sample'] for x in r):.0f}"
    print(f"{model:<12}{batch:>6}{threads:>8}{k:>6}"
          f"{med(x['plain_block_median_ms'] for x in r):10.4f}{med(x['worker_median_ms'] for x in r):10.4f}"
          f"{med(over) * 100:+9.2f}%{f'{min(over) * 100:+.1f}% .. {max(over) * 100:+.1f}%':>18}"
          f"{med(x['plain_iteration_median_ms'] for x in r):9.4f}"
          f"{med(s for s, _ in starts[i]):9.3f}{med(b for _, b in starts[i]):9.4f}")
print(f"# {len(rows[0])} pairs of {time_s} s a side per configuration, over {rounds} rounds")
PY
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
