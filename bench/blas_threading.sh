#!/usr/bin/env bash
# OpenBLAS's pthread build against its OpenMP build, under the worker's default OpenMP
# wait policy: the choice deploy/install-deps.sh makes (bench/README.md, One pool of
# threads). With the pthread build OpenBLAS keeps a pool of its own beside OpenMP's, and
# a forward pass that alternates between ATen/oneDNN's OpenMP regions (LayerNorm,
# softmax, convolutions) and OpenBLAS's GEMMs (Linear layers) has the two pools spin and
# compute on the same cores; with the OpenMP build both are one pool.
#
# One interleaved run: each round goes through every case, and each case runs the worker
# once with each build, the order swapped every round; the build is chosen with
# LD_LIBRARY_PATH (the directories Debian's two packages install), the system's
# alternative left as it is. Run as the agent runs a worker: OMP_NUM_THREADS and
# OPENBLAS_NUM_THREADS = threads, pinned to the first `threads` allowed CPUs.
# usage: bench/blas_threading.sh [build dir] [rounds]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
worker=$build/worker/benchfleet-worker
lib=/usr/lib/x86_64-linux-gnu
for variant in openblas-pthread openblas-openmp; do
  [[ -e $lib/$variant/libblas.so.3 ]] || { echo "blas_threading: $lib/$variant missing (apt-get install lib${variant/-/0-})" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
  "load before: $(cut -d' ' -f1-3 /proc/loadavg)" \
  "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-unset}"
python3 - "$worker" "$dir" "$rounds" "$lib" <<'PY'
import json, os, statistics, subprocess, sys

worker, workdir, rounds, lib = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
models = {
    "mlp": {"layers": [1024, 1024, 10]},
    "transformer": {"hidden": 256, "heads": 4, "layers": 2, "ffn": 1024, "seq_len": 64},
    "cnn": {"width": 16, "blocks": [1, 1, 1, 1], "image_size": 64, "classes": 10},
}
cases = [(model, mode, batch, threads)
         for model, mode, batch in (("mlp", "inference", 8), ("mlp", "inference", 64),
                                    ("transformer", "inference", 8), ("transformer", "train", 8),
                                    ("cnn", "inference", 8))
         for threads in (1, 2)]
builds = ("openblas-pthread", "openblas-openmp")
allowed = sorted(os.sched_getaffinity(0))

def run(case, build):
    model, mode, batch, threads = case
    job, out = os.path.join(workdir, "job.json"), os.path.join(workdir, "result.json")
    with open(job, "w") as f:
        json.dump({"job_id": 0, "model": model, "model_args": models[model], "mode": mode,
                   "dtype": "fp32", "device": "cpu", "batch_size": batch, "threads": threads}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "OPENBLAS_NUM", "GOMP_"))}
    env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), LD_LIBRARY_PATH=os.path.join(lib, build))
    subprocess.run(["taskset", "-c", ",".join(map(str, allowed[:threads])), worker, "--job", job,
                    "--out", out], env=env, check=True, stderr=subprocess.DEVNULL)
    r = json.load(open(out))
    assert r["runtime"]["blas_threading"] == ("openmp" if build.endswith("openmp") else "pthreads"), r["runtime"]
    return r["stats"]["median_ms"], r["stats"]["noisy"]

medians = {(c, b): [] for c in cases for b in builds}
noisy = {(c, b): False for c in cases for b in builds}
for r in range(rounds):
    for case in (cases if r % 2 == 0 else list(reversed(cases))):
        for build in (builds if r % 2 == 0 else tuple(reversed(builds))):
            median, flag = run(case, build)
            medians[(case, build)].append(median)
            noisy[(case, build)] |= flag

print(f"{'model':<12} {'mode':<9} {'batch':>5} {'thr':>3}  {'pthread ms':<23} {'openmp ms':<23} {'openmp/pthread':>14}")
for case in cases:
    model, mode, batch, threads = case
    p, o = medians[(case, builds[0])], medians[(case, builds[1])]
    ratio = statistics.median([b / a for a, b in zip(p, o)])
    flags = " noisy" if noisy[(case, builds[0])] or noisy[(case, builds[1])] else ""
    fmt = lambda v: "/".join(f"{x:.3f}" for x in v)
    print(f"{model:<12} {mode:<9} {batch:>5} {threads:>3}  {fmt(p):<23} {fmt(o):<23} {ratio:>13.3f}{flags}")
PY
