#!/usr/bin/env python3
"""Is it where the memory landed? (docs/performance.md, Why processes differ.)

Two copies of the zoo's mlp (1024-1024-10, fp32, batch 16, one thread, the same seed) in
one fresh process, timed in groups of four blocks A B B A for SECONDS, as an in-process
pair is (schemas/worker.md, Versus). Fresh processes alternate between two kinds:

  plain     the copies stay where they were allocated;
  relayout  every --every groups both copies' weights, biases and inputs move to fresh
            allocations (a random-sized allocation kept in between, so that the allocator
            does not hand the same addresses back), as Stabilizer re-randomizes a running
            program's layout.

Prints, per kind: the spread of the copies' ratio B/A from process to process (if where a
copy's memory lands made it faster or slower, two copies in one process would differ, and
moving them around would narrow that), and the spread of A's median between processes.

  taskset -c 0 /opt/benchfleet/torch-2.15.0/bin/python bench/relayout.py [-n 16] [--seconds 2]
"""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

import torch


def one_process(seconds, relayout, every):
    torch.set_num_threads(1)

    def make():
        torch.manual_seed(1)
        return [torch.nn.Linear(1024, 1024), torch.nn.Linear(1024, 10), torch.randn(16, 1024)]

    a, b, keep = make(), make(), []

    def move(m):
        keep.append(torch.empty(int(torch.randint(1, 1 << 20, (1,)))))
        if len(keep) > 8:
            keep.pop(0)
        with torch.no_grad():
            for layer in m[:2]:
                layer.weight = torch.nn.Parameter(layer.weight.clone())
                layer.bias = torch.nn.Parameter(layer.bias.clone())
            m[2] = m[2].clone()

    def forward(m):
        with torch.inference_mode():
            return m[1](torch.relu(m[0](m[2])))

    def block(m):  # two forward passes, about 1 ms
        start = time.perf_counter()
        forward(m)
        forward(m)
        return (time.perf_counter() - start) / 2 * 1e3

    for _ in range(100):
        forward(a)
        forward(b)
    times_a, times_b, group = [], [], 0
    end = time.time() + seconds
    while time.time() < end:
        if relayout and group % every == 0:
            move(a)
            move(b)
            forward(a)
            forward(b)
        times_a.append(block(a))
        times_b.append(block(b))
        times_b.append(block(b))
        times_a.append(block(a))
        group += 1
    print(f"{statistics.median(times_a):.5f} {statistics.median(times_b):.5f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=16, help="processes of each kind")
    p.add_argument("--seconds", type=float, default=2)
    p.add_argument("--every", type=int, default=50, help="groups between moves")
    p.add_argument("--one", choices=["plain", "relayout"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        one_process(args.seconds, args.one == "relayout", args.every)
        return
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    print(f"host: {cpu}, {os.cpu_count()} CPUs; load "
          f"{' '.join(open('/proc/loadavg').read().split()[:3])}; affinity "
          f"{sorted(os.sched_getaffinity(0))}")
    rows = {"plain": [], "relayout": []}
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    for _ in range(args.n):
        for kind in rows:
            out = subprocess.run([sys.executable, __file__, "--one", kind, "--seconds",
                                  str(args.seconds), "--every", str(args.every)],
                                 env=env, check=True, capture_output=True, text=True).stdout
            rows[kind].append(tuple(float(v) for v in out.split()))
    print("| processes | B/A from process to process (sd of the log) | mean B/A | A's median, sd of the log | A's range, ms |")
    print("|---|---|---|---|---|")
    for kind, pairs in rows.items():
        ratios = [math.log(b / a) for a, b in pairs]
        logs_a = [math.log(a) for a, _ in pairs]
        print(f"| {args.n} {kind} | {statistics.stdev(ratios) * 100:.2f}% | "
              f"{math.exp(statistics.mean(ratios)):.4f} | {statistics.stdev(logs_a) * 100:.2f}% | "
              f"{min(a for a, _ in pairs):.4f}-{max(a for a, _ in pairs):.4f} |")


if __name__ == "__main__":
    main()
