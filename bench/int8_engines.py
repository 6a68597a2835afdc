"""int8 engines in the torch venv: examples/torch-upgrade.json's transformer and mlp (the zoo,
worker/python/benchfleet_zoo.py) quantized as torch.ao.quantization.quantize_dynamic does,
under each quantized engine (x86, 2.x's default, which the worker takes; onednn, what
Debian's 1.13 runs; fbgemm), fp32 beside; torch.utils.benchmark, pinned by the caller:

    taskset -c 0 /opt/benchfleet/torch-2.15.0/bin/python bench/int8_engines.py 1
"""
import json, sys, os
import torch
import torch.utils.benchmark as benchmark
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "worker", "python"))
import benchfleet_zoo as zoo
threads = int(sys.argv[1])
torch.set_num_threads(threads)
jobs = {
  "transformer": {"model": "transformer", "batch_size": 16, "model_args": {"hidden": 256, "heads": 4, "layers": 4, "ffn": 1024, "seq_len": 128}},
  "mlp": {"model": "mlp", "batch_size": 16, "model_args": {"layers": [1024, 1024, 10]}},
}
for name, job in jobs.items():
    torch.manual_seed(0)
    model, x = zoo.build(job)
    model.eval()
    row = {"model": name, "threads": threads, "torch": torch.__version__}
    with torch.inference_mode():
        row["fp32_ms"] = benchmark.Timer("m(x)", globals={"m": model, "x": x}, num_threads=threads).blocked_autorange(min_run_time=2).median * 1e3
    for engine in ("x86", "onednn", "fbgemm"):
        torch.backends.quantized.engine = engine
        q = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        with torch.inference_mode():
            row[engine + "_ms"] = benchmark.Timer("m(x)", globals={"m": q, "x": x}, num_threads=threads).blocked_autorange(min_run_time=2).median * 1e3
    print(json.dumps(row), flush=True)
