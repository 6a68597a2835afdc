#!/usr/bin/env python3
"""The same job as benchfleet-worker, timed by torch.utils.benchmark: the independent
reference each GPU (and CPU) figure of deploy/gpu-check.sh is held against.

    gpu_reference.py JOB.json [JOB.json ...]   prints one JSON line per job:
    {"job": FILE, "median_ms": ..., "iqr_ms": ..., "runs": ..., "issue_ms": ..., "torch": VERSION}
    or {"job": FILE, "error": WHY}

The models mirror worker/models/zoo.cc (matmul, mlp, cnn = ResNet BasicBlocks, transformer =
post-norm BERT encoder layers) and the step mirrors worker/models/workload.cc (inference under
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
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.benchmark as benchmark
import torch.utils.checkpoint as checkpoint

MIN_RUN_TIME_S = 2.0  # blocked_autorange keeps measuring blocks for at least this long
TRAIN_LR = 1e-3       # worker/models/workload.h kTrainLearningRate

DEFAULT_ARGS = {
    "matmul": {"m": 2048, "k": 2048, "n": 2048},
    "mlp": {"layers": [1024, 1024, 10]},
    "cnn": {"width": 64, "blocks": [2, 2, 2, 2], "image_size": 224, "channels": 3,
            "classes": 1000, "memory_format": "contiguous"},
    "transformer": {"hidden": 768, "heads": 12, "layers": 12, "ffn": 3072, "seq_len": 128},
}


class Matmul(nn.Module):
    def __init__(self, a, batch):
        super().__init__()
        shape = (a["k"], a["n"]) if batch == 1 else (batch, a["k"], a["n"])
        self.b = nn.Parameter(torch.randn(*shape))

    def forward(self, x):
        return torch.mm(x, self.b) if x.dim() == 2 else torch.matmul(x, self.b)


def conv(cin, cout, kernel, stride):
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv(cin, cout, 3, stride), nn.BatchNorm2d(cout, momentum=1.0)
        self.conv2, self.bn2 = conv(cout, cout, 3, 1), nn.BatchNorm2d(cout, momentum=1.0)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(conv(cin, cout, 1, stride), nn.BatchNorm2d(cout, momentum=1.0))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class Cnn(nn.Module):
    def __init__(self, c, checkpointing):
        super().__init__()
        self.stem, self.stem_bn = conv(c["channels"], c["width"], 7, 2), nn.BatchNorm2d(c["width"], momentum=1.0)
        blocks, cin = [], c["width"]
        for stage, count in enumerate(c["blocks"]):
            cout = c["width"] << stage
            for b in range(count):
                blocks.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1))
                cin = cout
        self.stages = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, c["classes"])
        self.checkpointing = checkpointing

    def forward(self, x):
        y = F.relu(self.stem_bn(self.stem(x)))
        y = F.max_pool2d(y, 3, 2, 1)
        for block in self.stages:
            y = checkpoint.checkpoint(block, y, use_reentrant=False) if self.checkpointing else block(y)
        return self.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))


class EncoderLayer(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.heads = t["heads"]
        h = t["hidden"]
        self.qkv, self.out = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.norm1, self.norm2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.ffn1, self.ffn2 = nn.Linear(h, t["ffn"]), nn.Linear(t["ffn"], h)

    def forward(self, x):
        batch, seq, hidden = x.shape
        head_dim = hidden // self.heads
        qkv = self.qkv(x).view(batch, seq, 3, self.heads, head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(qkv[0], qkv[1].transpose(-2, -1)) / math.sqrt(head_dim)
        context = torch.matmul(torch.softmax(scores, -1), qkv[2]).transpose(1, 2).reshape(batch, seq, hidden)
        y = self.norm1(x + self.out(context))
        return self.norm2(y + self.ffn2(F.gelu(self.ffn1(y))))


class Stack(nn.Module):
    def __init__(self, layers, checkpointing):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.checkpointing = checkpointing

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint.checkpoint(layer, x, use_reentrant=False) if self.checkpointing else layer(x)
        return x


def build(job):
    model_name, batch = job["model"], job["batch_size"]
    args = dict(DEFAULT_ARGS[model_name], **job.get("model_args", {}))
    ckpt = bool(job.get("checkpointing", False))
    if model_name == "matmul":
        x = torch.randn(args["m"], args["k"]) if batch == 1 else torch.randn(batch, args["m"], args["k"])
        return Matmul(args, batch), x
    if model_name == "mlp":
        layers, sizes = [], args["layers"]
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(nn.ReLU())
        # The worker checkpoints each (Linear, ReLU) unit; a checkpointed mlp is a Stack.
        units = [nn.Sequential(*layers[i:i + 2]) for i in range(0, len(layers), 2)]
        return Stack(units, ckpt), torch.randn(batch, sizes[0])
    if model_name == "cnn":
        x = torch.randn(batch, args["channels"], args["image_size"], args["image_size"])
        return Cnn(args, ckpt), x
    t = args
    return Stack([EncoderLayer(t) for _ in range(t["layers"])], ckpt), torch.randn(batch, t["seq_len"], t["hidden"])


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
        with torch.no_grad():
            model.train()
            model(x)
        model.eval()
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
