"""int8 against fp32 at 1 and 2 threads, the worker beside stock PyTorch: the mlp
1024-1024-10 at batch 8 and examples/cpu-int8.json's transformer at batch 64, each
configuration in fresh processes, alternating a stock one (torch.utils.benchmark in the
torch venv, quantize_dynamic under the x86 engine as the worker does) and a worker one
(`benchfleet-worker --job`, pinned as the agent pins it: CPUs 0..threads-1):

    /opt/benchfleet/torch-2.15.0/bin/python bench/int8_threads.py [build/worker/benchfleet-worker] [PROCESSES]

Prints one JSON line per configuration: each side's process medians (ms).
"""
import json, os, subprocess, sys, tempfile

worker = sys.argv[1] if len(sys.argv) > 1 else "build/worker/benchfleet-worker"
processes = int(sys.argv[2]) if len(sys.argv) > 2 else 3
here = os.path.dirname(os.path.abspath(__file__))
jobs = [
    {"model": "mlp", "batch_size": 8, "model_args": {"layers": [1024, 1024, 10]}},
    {"model": "transformer", "batch_size": 64,
     "model_args": {"hidden": 256, "heads": 4, "layers": 2, "ffn": 1024, "seq_len": 64}},
]
STOCK = r"""
import json, sys, os, torch
import torch.utils.benchmark as benchmark
sys.path.insert(0, os.path.join(sys.argv[1], "..", "worker", "python"))
import benchfleet_zoo as zoo
job = json.loads(sys.argv[2]); threads = job["threads"]
torch.set_num_threads(threads); torch.manual_seed(0)
model, x = zoo.build(job); model.eval()
if job["dtype"] == "int8":
    torch.backends.quantized.engine = "x86"
    model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
with torch.inference_mode():
    t = benchmark.Timer("m(x)", globals={"m": model, "x": x}, num_threads=threads).blocked_autorange(min_run_time=1)
print(t.median * 1e3)
"""

def worker_median(job):
    with tempfile.TemporaryDirectory() as d:
        spec = dict(job, job_id=1, mode="inference", device="cpu",
                    timing={"warmup_s": 0.3, "min_time_s": 1, "max_time_s": 3, "target_ci": 0.01})
        with open(os.path.join(d, "job.json"), "w") as f:
            json.dump(spec, f)
        cpus = ",".join(str(c) for c in range(job["threads"]))
        env = dict(os.environ, OMP_NUM_THREADS=str(job["threads"]), MKL_NUM_THREADS=str(job["threads"]))
        subprocess.run(["taskset", "-c", cpus, worker, "--job", os.path.join(d, "job.json"), "--out",
                        os.path.join(d, "result.json")], check=True, env=env, capture_output=True)
        with open(os.path.join(d, "result.json")) as f:
            return json.load(f)["stats"]["median_ms"]

def stock_median(job):
    cpus = ",".join(str(c) for c in range(job["threads"]))
    out = subprocess.run(["taskset", "-c", cpus, sys.executable, "-c", STOCK, here, json.dumps(job)],
                         check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])

for base in jobs:
    for dtype in ("fp32", "int8"):
        for threads in (1, 2):
            job = dict(base, dtype=dtype, threads=threads)
            stock, ours = [], []
            for _ in range(processes):
                stock.append(round(stock_median(job), 4))
                ours.append(round(worker_median(job), 4))
            print(json.dumps({"model": base["model"], "batch": base["batch_size"], "dtype": dtype,
                              "threads": threads, "stock_ms": stock, "worker_ms": ours}), flush=True)
