#!/usr/bin/env bash
# The GPU half's check on a GPU host, in one run (docs/gpu.md): builds the worker-only
# tree against that host's LibTorch, then runs --probe, benchfleet-gpu-calibrate, a short
# sweep of GPU jobs each with a CPU twin, the same jobs timed by torch.utils.benchmark
# (bench/gpu_reference.py), and the worker's GPU tests. Everything goes into OUT_DIR; a
# failing step is logged and the run goes on, so one run collects every error. The table
# of results is printed last (OUT_DIR/table.md).
#
#   deploy/gpu-check.sh OUT_DIR
#
# Needs worker-deps/ (deploy/worker-only-deps.sh, run where Debian's packages are) and a
# python with torch: PYTHON, else the venv of deploy/torch.env where it is, else python3.
# The worker is built against that python's torch (BENCHFLEET_TORCH_PYTHON, as every build
# is) and the references run in it, so no comparison crosses versions;
# BENCHFLEET_TORCH_PREFIX builds against the LibTorch there instead. On a host without a
# GPU the GPU jobs are refused with their reasons and the rest still runs (the dry run; a
# 2-core host needs BENCHFLEET_GPU_BUILD_TIMEOUT_S=1200 for the build).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:?usage: deploy/gpu-check.sh OUT_DIR}")
mkdir -p "$out/jobs" "$out/results"
build=${BENCHFLEET_GPU_BUILD_DIR:-build-gpu}
deps=$(realpath -m "${BENCHFLEET_WORKER_DEPS:-worker-deps}")
source deploy/torch.env
python=${PYTHON:-}
if [[ -z $python ]]; then
  python=python3
  [[ -x $BENCHFLEET_TORCH_VENV/bin/python ]] && python=$BENCHFLEET_TORCH_VENV/bin/python
fi
export out deps python
: >"$out/steps.txt"
start=$SECONDS

# step NAME TIMEOUT_S COMMAND...: runs COMMAND (a program or a function of this script)
# with its output in OUT/NAME.log, killed after TIMEOUT_S.
step() {
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  echo "== $name ($(date -u +%H:%M:%S))"
  if declare -F "$1" >/dev/null; then
    timeout --kill-after=10 "$limit" bash -c "$(declare -f "$1"); \"\$@\"" _ "$@" >"$out/$name.log" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  fi
  rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$out/steps.txt"
  return $rc
}

host_facts() {
  date -u +%Y-%m-%dT%H:%M:%SZ
  uname -a
  nproc
  grep -m1 "model name" /proc/cpuinfo
  env | grep -E '^(OPENBLAS_|OMP_|CUDA_|NVIDIA_)' || true
  nvidia-smi || echo "no nvidia-smi"
  nvidia-smi -q -d CLOCK,POWER,TEMPERATURE 2>/dev/null | head -80
  command -v nvcc && nvcc --version
  cmake --version | head -1
  command -v ninja && ninja --version
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None,
"gpus", torch.cuda.device_count(), [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])'
  cat "$deps/PACKAGES" 2>/dev/null || echo "no $deps/PACKAGES"
}
step host 60 host_facts

torch=(-DBENCHFLEET_TORCH_PYTHON="$(command -v "$python")")
[[ -n ${BENCHFLEET_TORCH_PREFIX:-} ]] && torch=(-DBENCHFLEET_TORCH_PYTHON= -DCMAKE_PREFIX_PATH="$BENCHFLEET_TORCH_PREFIX")
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cuda_compiler=()
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $nvcc ]] && cuda_compiler=(-DCMAKE_CUDA_COMPILER="$nvcc")
step configure 300 cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DBENCHFLEET_WORKER_ONLY=ON "${cuda_compiler[@]}" "${torch[@]}" \
  -DCMAKE_PREFIX_PATH="$deps/usr" \
  -Dnlohmann_json_DIR="$deps/usr/share/cmake/nlohmann_json" \
  -DCLI11_DIR="$deps/usr/share/cmake/CLI11" \
  -DGTest_DIR="$deps/usr/lib/x86_64-linux-gnu/cmake/GTest" \
  -DBENCHFLEET_GLOO_INCLUDE_DIR="$deps/gloo/usr/include"
targets=(benchfleet-worker)
grep -q "benchfleet-gpu-calibrate" <(cmake --build "$build" --target help 2>/dev/null) && targets+=(benchfleet-gpu-calibrate)
grep -q "worker_test" <(cmake --build "$build" --target help 2>/dev/null) && targets+=(worker_test worker_measure_test)
# -k 0: a compile error in one file does not hide those in the others (one run collects all).
keep_going=()
[[ ${#generator[@]} -gt 0 ]] && keep_going=(-- -k 0)
step build "${BENCHFLEET_GPU_BUILD_TIMEOUT_S:-420}" cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" "${keep_going[@]}"
worker=$build/worker/benchfleet-worker
export worker

step probe 120 "$worker" --probe
cp "$out/probe.log" "$out/probe.json" 2>/dev/null
if [[ -x $build/worker/benchfleet-gpu-calibrate ]]; then
  step gpu_calibrate 180 "$build/worker/benchfleet-gpu-calibrate"
else
  echo "gpu_calibrate not built (no CUDA Toolkit found at configure)" | tee -a "$out/steps.txt"
fi

# The sweep: each GPU job (gpu-*) and its CPU twin (cpu-*: the same model on every CPU
# of the host, in fp32 for tf32). Short timing: 0.5 s to 3 s per job.
"$python" - "$out/jobs" "$(nproc)" <<'EOF'
import json, sys
jobs_dir, cpus = sys.argv[1], int(sys.argv[2])
timing = {"warmup_s": 0.5, "min_time_s": 1.0, "max_time_s": 3.0}
cases = {
    "matmul-fp32": {"model": "matmul", "model_args": {"m": 4096, "k": 4096, "n": 4096}, "dtype": "fp32", "batch_size": 1},
    "matmul-tf32": {"model": "matmul", "model_args": {"m": 4096, "k": 4096, "n": 4096}, "dtype": "tf32", "batch_size": 1},
    "matmul-bf16": {"model": "matmul", "model_args": {"m": 4096, "k": 4096, "n": 4096}, "dtype": "bf16", "batch_size": 1},
    "mlp-train-fp32": {"model": "mlp", "model_args": {"layers": [1024, 4096, 4096, 10]}, "mode": "train", "dtype": "fp32", "batch_size": 256},
    "cnn-fp32": {"model": "cnn", "dtype": "fp32", "batch_size": 32},
    "cnn-bf16-cl": {"model": "cnn", "model_args": {"memory_format": "channels_last"}, "dtype": "bf16", "batch_size": 32},
    "transformer-bf16": {"model": "transformer", "dtype": "bf16", "batch_size": 8},
    # The same three at batches that keep the GPU busy: at the small ones above, a step's
    # kernels are short enough that issuing them (Python's dispatch in the reference,
    # C++'s in the worker) can bound the time.
    "mlp-train-fp32-b4096": {"model": "mlp", "model_args": {"layers": [1024, 4096, 4096, 10]}, "mode": "train", "dtype": "fp32", "batch_size": 4096},
    "cnn-bf16-cl-b256": {"model": "cnn", "model_args": {"memory_format": "channels_last"}, "dtype": "bf16", "batch_size": 256},
    "transformer-bf16-b64": {"model": "transformer", "dtype": "bf16", "batch_size": 64},
    "cnn-train-fp32": {"model": "cnn", "mode": "train", "dtype": "fp32", "batch_size": 32},
    "cnn-train-ckpt-fp32": {"model": "cnn", "mode": "train", "dtype": "fp32", "batch_size": 32, "checkpointing": True},
    # The per-operator profile by its kernels' device time (Kineto's CUDA activity).
    "profile-fp32": {"model": "mlp", "dtype": "fp32", "batch_size": 64, "profile": True},
    # One step captured into a CUDA graph and replayed (the CPU twin runs eager).
    "transformer-bf16-graph": {"model": "transformer", "dtype": "bf16", "batch_size": 8, "technique": "cuda_graph"},
    "mlp-fp32-graph": {"model": "mlp", "dtype": "fp32", "batch_size": 64, "technique": "cuda_graph"},
}
refused = {  # each must be refused with its reason
    "mlp-int8": {"model": "mlp", "dtype": "int8", "batch_size": 64},
}
for i, (name, case) in enumerate(list(cases.items()) + list(refused.items())):
    for device in ("cuda", "cpu"):
        if device == "cpu" and name in refused:
            continue
        job = {"job_id": i + 1, "mode": "inference", "threads": 1, "timing": timing}
        job.update(case)
        job["device"] = device
        if device == "cpu":
            job["threads"] = cpus
            if job["dtype"] == "tf32":
                job["dtype"] = "fp32"
            job.pop("technique", None)  # a CUDA graph is the GPU's
        prefix = "gpu" if device == "cuda" else "cpu"
        with open("%s/%s-%s.json" % (jobs_dir, prefix, name), "w") as f:
            json.dump(job, f)
EOF

run_jobs() {
  local job name rc
  for job in "$out"/jobs/*.json; do
    name=$(basename "$job" .json)
    timeout --kill-after=10 120 "$worker" --job "$job" --out "$out/results/$name.json" \
      >"$out/results/$name.log" 2>&1
    rc=$?
    echo "$name exit=$rc"
  done
}
step sweep 400 run_jobs

# torch.utils.benchmark on the same jobs that ran (bench/gpu_reference.py), in one python
# process: importing torch once, not once per job.
reference_jobs() {
  local job name ok=()
  for job in "$out"/jobs/*.json; do
    name=$(basename "$job" .json)
    if [[ -f $out/results/$name.json ]] && grep -q '"ok": *true' "$out/results/$name.json"; then
      ok+=("$job")
    fi
  done
  [[ ${#ok[@]} -eq 0 ]] && { echo "no job ran: nothing to hold against a reference"; return 1; }
  "$python" bench/gpu_reference.py "${ok[@]}"
}
step reference 400 reference_jobs
cp "$out/reference.log" "$out/reference.jsonl" 2>/dev/null

# Which OpenMP runtime and LibTorch the worker loaded, for the record beside the probe's.
step linkage 30 ldd "$worker"

# NCCL at world size 1 in this torch: a process group of one rank, an all-reduce of 64 MiB
# on the GPU, its bus bandwidth (nccl-tests' formula: at one rank, the copy it is), and the
# NCCL version the worker's LibTorch loads (linkage.log names the library).
nccl_world_of_one() {
  "$python" - <<'PY'
import json, os, tempfile, time
import torch
import torch.distributed as dist
if not torch.cuda.is_available():
    raise SystemExit("no CUDA device: NCCL not tried")
store = tempfile.mktemp()
dist.init_process_group("nccl", init_method="file://" + store, rank=0, world_size=1)
x = torch.ones(16 << 20, device="cuda")
for _ in range(3):
    dist.all_reduce(x)
torch.cuda.synchronize()
runs = 20
t0 = time.perf_counter()
for _ in range(runs):
    dist.all_reduce(x)
torch.cuda.synchronize()
ms = (time.perf_counter() - t0) / runs * 1e3
print(json.dumps({"nccl": ".".join(map(str, torch.cuda.nccl.version())), "world_size": 1, "bytes": x.numel() * 4,
                  "ms": ms, "ok": bool((x == 1).all())}))
dist.destroy_process_group()
PY
}
step nccl 120 nccl_world_of_one

# Run-to-run spread of the worker against the reference on the same jobs, alternated
# (worker, reference, worker, ...): BENCHFLEET_GPU_CHECK_REPEAT names jobs (cpu-mlp-train-fp32
# ...), each run BENCHFLEET_GPU_CHECK_REPEATS times (default 3) both ways.
repeat_jobs() {
  local i name
  for ((i = 1; i <= ${BENCHFLEET_GPU_CHECK_REPEATS:-3}; i++)); do
    for name in $BENCHFLEET_GPU_CHECK_REPEAT; do
      timeout --kill-after=10 120 "$worker" --job "$out/jobs/$name.json" --out "$out/repeat.$name.$i.json" \
        >/dev/null 2>&1 || echo "$name worker run $i failed"
      "$python" -c 'import json, sys; r = json.load(open(sys.argv[1])); s = r.get("stats") or {}
print(json.dumps({"job": sys.argv[2], "run": int(sys.argv[3]), "worker_median_ms": s.get("median_ms"), "noisy": s.get("noisy"), "error": r.get("error")}))' \
        "$out/repeat.$name.$i.json" "$name" "$i"
      rm -f "$out/repeat.$name.$i.json"
      "$python" bench/gpu_reference.py "$out/jobs/$name.json"
    done
  done
}
[[ -n ${BENCHFLEET_GPU_CHECK_REPEAT:-} ]] && step repeat 300 repeat_jobs

if [[ -x $build/worker/worker_test ]]; then
  step gpu_tests 300 "$build/worker/worker_test" \
    --gtest_filter='*Cuda*:*Gpu*:*GPU*:*InProcessPipeline*:*MaxBatch*'
else
  echo "gpu_tests not built (no GoogleTest in $deps)" | tee -a "$out/steps.txt"
fi

"$python" bench/gpu_check_table.py "$out" >"$out/table.md" 2>>"$out/steps.txt"
echo "total $((SECONDS - start))s" | tee -a "$out/steps.txt"
cat "$out/steps.txt" "$out/table.md"
