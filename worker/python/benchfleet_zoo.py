"""The worker's built-in models (worker/models/zoo.cc) in Python, for the tools that run
them outside the worker: the stock-PyTorch references (bench/gpu_reference.py) and the
package compiler (compile_model.py) that turns a zoo model into a TorchScript file or an
AOTInductor package for the `technique` axis.

Module and parameter names are those of the C++ modules, so a state dict the worker saves
(named parameters and buffers) loads here with strict=True: the compiled model has the
worker's weights, and its outputs can be held against the worker's eager ones. Keep the
two in step: a layer renamed or added in zoo.cc must be here too (worker_technique_test
loads the worker's weights into these modules and compares outputs).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as checkpoint

# schemas/worker.md, model_args defaults (common/job_spec.h).
DEFAULT_ARGS = {
    "matmul": {"m": 2048, "k": 2048, "n": 2048},
    "mlp": {"layers": [1024, 1024, 10]},
    "cnn": {"width": 64, "blocks": [2, 2, 2, 2], "image_size": 224, "channels": 3,
            "classes": 1000, "memory_format": "contiguous"},
    "transformer": {"hidden": 768, "heads": 12, "layers": 12, "ffn": 3072, "seq_len": 128},
}

# Models whose outputs are [batch, classes] (the accuracy's top-1 agreement).
CLASSIFIERS = ("mlp", "cnn")


class Matmul(nn.Module):
    """batch_size independent (m x k) . (k x n) products; B is the parameter `b`."""

    def __init__(self, a, batch):
        super().__init__()
        shape = (a["k"], a["n"]) if batch == 1 else (batch, a["k"], a["n"])
        self.b = nn.Parameter(torch.randn(*shape))

    def forward(self, x):
        return torch.mm(x, self.b) if x.dim() == 2 else torch.matmul(x, self.b)


class Dense(nn.Module):
    """The worker's DenseImpl: a Linear held as `linear` (its int8 switch is C++ only)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.linear = nn.Linear(cin, cout)

    def forward(self, x):
        return self.linear(x)


class Layers(nn.Sequential):
    """nn::Sequential as the worker runs it: each child a checkpointed unit in train mode
    with checkpointing (worker/models/checkpoint.h, CheckpointedSequence)."""

    def __init__(self, *modules, checkpointing=False):
        super().__init__(*modules)
        self.checkpointing = checkpointing

    def forward(self, x):
        for module in self:
            x = checkpoint.checkpoint(module, x, use_reentrant=False) if self.checkpointing else module(x)
        return x


def conv(cin, cout, kernel, stride):
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False)


def norm(channels):
    # momentum 1: the running statistics are those of the last training-mode batch
    # (the worker's CalibrateBatchNorm pass).
    return nn.BatchNorm2d(channels, momentum=1.0)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv(cin, cout, 3, stride), norm(cout)
        self.conv2, self.bn2 = conv(cout, cout, 3, 1), norm(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(conv(cin, cout, 1, stride), norm(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class Cnn(nn.Module):
    def __init__(self, c, checkpointing=False):
        super().__init__()
        self.stem, self.stem_bn = conv(c["channels"], c["width"], 7, 2), norm(c["width"])
        blocks, cin = [], c["width"]
        for stage, count in enumerate(c["blocks"]):
            cout = c["width"] << stage
            for b in range(count):
                blocks.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1))
                cin = cout
        self.stages = Layers(*blocks, checkpointing=checkpointing)
        self.fc = Dense(cin, c["classes"])

    def forward(self, x):
        y = F.relu(self.stem_bn(self.stem(x)))
        y = F.max_pool2d(y, 3, 2, 1)
        y = self.stages(y)
        return self.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))


class EncoderLayer(nn.Module):
    """A post-norm BERT encoder layer, as zoo.cc's EncoderLayerImpl."""

    def __init__(self, t):
        super().__init__()
        self.heads = t["heads"]
        h = t["hidden"]
        self.qkv, self.out = Dense(h, 3 * h), Dense(h, h)
        self.norm1 = nn.LayerNorm(h)
        self.ffn1, self.ffn2 = Dense(h, t["ffn"]), Dense(t["ffn"], h)
        self.norm2 = nn.LayerNorm(h)

    def forward(self, x):
        batch, seq, hidden = x.shape
        head_dim = hidden // self.heads
        qkv = self.qkv(x).view(batch, seq, 3, self.heads, head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(qkv[0], qkv[1].transpose(-2, -1)) / math.sqrt(head_dim)
        context = torch.matmul(torch.softmax(scores, -1), qkv[2]).transpose(1, 2).reshape(batch, seq, hidden)
        y = self.norm1(x + self.out(context))
        return self.norm2(y + self.ffn2(F.gelu(self.ffn1(y))))


def model_args(job):
    """The job's model_args over the model's defaults."""
    return dict(DEFAULT_ARGS[job["model"]], **job.get("model_args", {}))


def build(job):
    """(model, input) of a job's zoo model, drawn from the current torch seed in the order
    zoo.cc draws them (weights, then input); fp32 on the CPU, BatchNorm not yet calibrated."""
    name, batch = job["model"], job["batch_size"]
    args = model_args(job)
    ckpt = bool(job.get("checkpointing", False))
    if name == "matmul":
        model = Matmul(args, batch)
        x = torch.randn(args["m"], args["k"]) if batch == 1 else torch.randn(batch, args["m"], args["k"])
        return model, x
    if name == "mlp":
        sizes, layers = args["layers"], []
        for i in range(len(sizes) - 1):
            layers.append(Dense(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(nn.ReLU())
        return Layers(*layers, checkpointing=ckpt), torch.randn(batch, sizes[0])
    if name == "cnn":
        model = Cnn(args, ckpt)
        return model, torch.randn(batch, args["channels"], args["image_size"], args["image_size"])
    if name == "transformer":
        model = Layers(*[EncoderLayer(args) for _ in range(args["layers"])], checkpointing=ckpt)
        return model, torch.randn(batch, args["seq_len"], args["hidden"])
    raise ValueError("model %r is not a zoo model (matmul, mlp, cnn, transformer)" % name)


def calibrate_batchnorm(model, x):
    """One training-mode pass sets BatchNorm's running statistics (zoo.cc, CalibrateBatchNorm)."""
    with torch.no_grad():
        model.train()
        model(x)
    model.eval()


TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16}
