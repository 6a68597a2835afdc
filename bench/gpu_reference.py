#!/usr/bin/env python3
"""The same job as benchfleet-worker, timed by torch.utils.benchmark: the independent
reference each GPU (and CPU) figure of deploy/gpu-check.sh is held against.

    gpu_reference.py JOB.json [JOB.json ...]   prints one JSON line per job:
    {"job": FILE, "median_ms": ..., "iqr_ms": ..., "runs": ..., "issue_ms": ..., "torch": VERSION}
    or {"job": FILE, "error": WHY}

The models are worker/python/benchfleet_zoo.py's, which mirror worker/models/zoo.cc (matmul,
mlp, cnn = ResNet BasicBlocks, transformer = post-norm BERT encoder layers), and the step
mirrors worker/models/workload.cc (inference under
torch.inference_mode; train: SGD lr 1e-3 on the MSE to a fixed random target). The math
settings are the worker's: TF32 in cuBLAS and cuDNN only for dtype "tf32", cuDNN
autotuning on. Timer.blocked_autorange synchronises CUDA around each block, as the worker
does; its median is per iteration.

On a GPU it also gives `issue_ms`: the host time Python takes to issue one step (a few
steps enqueued back to back, no synchronisation between them). Where that is near the
median, the reference is bound by Python's dispatch, not by the GPU, and a C++ LibTorch
loop (the worker) issuing the same kernels faster is expected to measure less.
"""
import json
import os
import sys
import time

import torch
import torch.utils.benchmark as benchmark

MIN_RUN_TIME_S = 2.0  # blocked_autorange keeps measuring blocks for at least this long
TRAIN_LR = 1e-3       # worker/models/workload.h kTrainLearningRate

# The zoo, as the worker builds it (worker/python/benchfleet_zoo.py: the same modules the
# worker's package compiler exports, its names those of the C++ modules).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "worker", "python"))
import benchfleet_zoo as zoo  # noqa: E402


def build(job):
    return zoo.build(job)


def measure(job):
    device = torch.device(job["device"])
    dtype = job["dtype"]
    if dtype not in ("fp32", "tf32", "bf16"):
        raise ValueError("dtype %s has no reference here" % dtype)
    torch.set_num_threads(int(job.get("threads", 1)))
    torch.manual_seed(int(job.get("seed", 0)))
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        torch.backends.cudnn.allow_tf32 = dtype == "tf32"
        torch.backends.cudnn.benchmark = True
    model, x = build(job)
    model, x = model.to(device), x.to(device)
    if job["model"] == "cnn":  # BatchNorm statistics of one training-mode pass, as the worker
        zoo.calibrate_batchnorm(model, x)
    if dtype == "bf16":
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
    channels_last = job["model"] == "cnn" and job.get("model_args", {}).get("memory_format") == "channels_last"
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    if job["mode"] == "train":
        model.train()
        optimizer = torch.optim.SGD(model.parameters(), lr=TRAIN_LR)
        with torch.no_grad():
            target = torch.randn_like(model(x))

        def step():
            optimizer.zero_grad()
            loss = (model(x) - target).pow(2).mean()
            loss.backward()
            optimizer.step()
    elif job.get("technique") == "cuda_graph":
        # As the worker does: warm-up passes on a side stream, one forward pass captured,
        # then each step a replay (torch.cuda.graphs' recipe).
        model.eval()
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(3):
                model(x)
        torch.cuda.current_stream(device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.inference_mode():
            model(x)

        def step():
            graph.replay()
    else:
        model.eval()

        def step():
            with torch.inference_mode():
                model(x)
    for _ in range(3):  # warm-up: cuDNN's autotuning, the allocator's first blocks
        step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    m = benchmark.Timer(stmt="step()", globals={"step": step},
                        num_threads=int(job.get("threads", 1))).blocked_autorange(min_run_time=MIN_RUN_TIME_S)
    row = {"median_ms": m.median * 1e3, "iqr_ms": m.iqr * 1e3, "runs": len(m.times),
           "number_per_run": m.number_per_run}
    if device.type == "cuda":
        row["issue_ms"] = issue_ms(step, device)
    return row


def issue_ms(step, device, steps=3):
    """Host time per step to enqueue `steps` steps on an idle GPU (few enough that the
    launch queue does not fill and block)."""
    samples = []
    for _ in range(5):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        samples.append((time.perf_counter() - t0) / steps * 1e3)
        torch.cuda.synchronize(device)
    return sorted(samples)[len(samples) // 2]


def main(paths):
    for path in paths:
        with open(path) as f:
            job = json.load(f)
        try:
            row = measure(job)
        except Exception as e:  # one job's failure is that job's row, not the run's end
            row = {"error": "%s: %s" % (type(e).__name__, e)}
        row.update({"job": path, "torch": torch.__version__})
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
