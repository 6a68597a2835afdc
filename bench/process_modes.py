#!/usr/bin/env python3
"""Why fresh processes of one job differ (docs/performance.md, Why processes differ).

Runs benchfleet-worker directly (no fleet), pinned as an agent pins it, and prints:

  1. episodes: one long job on each vCPU at once (CPU 0 and CPU 1, 1 thread each), its
     samples cut into windows; a window is "slow" when its median is more than 10% above
     the job's median. If slow windows come at the same time on both vCPUs, the whole host
     slowed; if apart, each vCPU has episodes of its own.
  2. spread: per configuration, the spread of the medians of N fresh processes of S
     seconds each, against the spread of N windows of S seconds inside one long process
     of the same job, taken alternately. A process-level cause (where its memory landed,
     where its threads went) spreads the processes more than the windows; a cause in time
     (the vCPU's episodes) spreads both alike.
  3. flip (--flip, needs root): one long job on CPU 0, and in the middle third of it a
     real-time (SCHED_FIFO) loop that takes --flip-share of every 1 ms of CPU 0 (what a
     neighbour sharing the vCPU's core does); the windows before, during and after. The
     slow mode comes and goes with the loop.

Where the memory landed (layout) is ruled out by bench/relayout.py.

  bench/process_modes.py [--worker build/worker/benchfleet-worker]
      [--configs mlp:16:1,mlp:16:2,mlp:64:2,cnn:1:2,mlp-bf16:8:2] [-n 12] [--seconds 1]
      [--episode-seconds 20] [--flip] [--flip-share 0.25]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time


def job(model, batch, threads, seconds, dtype="fp32"):
    j = {"job_id": 1, "model": model, "mode": "inference", "dtype": dtype, "device": "cpu",
         "batch_size": batch, "threads": threads,
         "timing": {"warmup_s": 0.2, "min_time_s": seconds, "max_time_s": seconds,
                    "target_ci": 0.0001}}
    if model == "cnn":
        j["model_args"] = {"width": 32, "image_size": 112}
    return j


def parse_config(text):
    model, batch, threads = text.split(":")
    dtype = "fp32"
    if "-" in model:
        model, dtype = model.split("-")
    return model, int(batch), int(threads), dtype


def start(worker, spec, cpus, tmp, tag):
    path = os.path.join(tmp, f"{tag}.json")
    out = os.path.join(tmp, f"{tag}.out.json")
    json.dump(spec, open(path, "w"))
    env = dict(os.environ)
    n = str(spec["threads"])
    env.update(OMP_NUM_THREADS=n, MKL_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n)
    proc = subprocess.Popen(["taskset", "-c", cpus, worker, "--job", path, "--out", out],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, out


def result(proc, out):
    proc.wait()
    r = json.load(open(out))
    if not r.get("ok"):
        raise SystemExit(f"process_modes: the job failed: {r.get('error')}")
    return r


def windows(r, seconds):
    """Medians of consecutive windows of `seconds` of a result's samples."""
    ips = r["stats"]["iters_per_sample"]
    out, current, elapsed = [], [], 0.0
    for ms in r["samples_ms"]:
        current.append(ms)
        elapsed += ms * ips / 1000
        if elapsed >= seconds:
            out.append(statistics.median(current))
            current, elapsed = [], 0.0
    return out


def spread(values):
    logs = [math.log(v) for v in values]
    return statistics.stdev(logs), min(values), max(values)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--worker", default="build/worker/benchfleet-worker")
    p.add_argument("--configs", default="mlp:16:1,mlp:16:2,mlp:64:2,cnn:1:2,mlp-bf16:8:2")
    p.add_argument("-n", type=int, default=12)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--episode-seconds", type=float, default=20)
    p.add_argument("--flip", action="store_true")
    p.add_argument("--flip-share", type=float, default=0.25)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="benchfleet-modes-")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    print(f"host: {cpu}, {os.cpu_count()} CPUs; load {' '.join(open('/proc/loadavg').read().split()[:3])}")

    # 1. Episodes: one job on each vCPU at once.
    a = start(args.worker, job("mlp", 16, 1, args.episode_seconds), "0", tmp, "cpu0")
    b = start(args.worker, job("mlp", 16, 1, args.episode_seconds), "1", tmp, "cpu1")
    wa, wb = windows(result(*a), 0.25), windows(result(*b), 0.25)
    n = min(len(wa), len(wb))
    ma, mb = statistics.median(wa), statistics.median(wb)
    slow_a = [w > 1.1 * ma for w in wa[:n]]
    slow_b = [w > 1.1 * mb for w in wb[:n]]
    both = sum(x and y for x, y in zip(slow_a, slow_b))
    print(f"\n1. episodes, mlp b16 1 thread on CPU 0 and CPU 1 at once, {n} windows of 0.25 s:")
    print(f"   slow windows (> 1.1x the median): CPU 0 {sum(slow_a)}, CPU 1 {sum(slow_b)}, "
          f"both at once {both} (independent vCPUs would give about "
          f"{sum(slow_a) * sum(slow_b) / max(n, 1):.1f})")
    print("   CPU 0: " + " ".join(f"{w / ma:.2f}" for w in wa[:n]))
    print("   CPU 1: " + " ".join(f"{w / mb:.2f}" for w in wb[:n]))

    # 2. Spread: fresh processes against windows of one long process, alternately.
    print(f"\n2. spread of {args.n} fresh processes of {args.seconds:g} s against {args.n} "
          f"windows of {args.seconds:g} s of one process (sd of the logs, min-max, ms):\n")
    print("| configuration | fresh processes | windows of one process |")
    print("|---|---|---|")
    for text in args.configs.split(","):
        model, batch, threads, dtype = parse_config(text)
        cpus = "0" if threads == 1 else f"0-{threads - 1}"
        processes = []
        long_job = job(model, batch, threads, args.seconds * args.n * 1.2, dtype)
        for i in range(args.n):
            processes.append(result(*start(args.worker, job(model, batch, threads, args.seconds,
                                                            dtype), cpus, tmp, "p"))["stats"]["median_ms"])
            if i == args.n // 2:
                # The long process in the middle of the fresh ones.
                ws = windows(result(*start(args.worker, long_job, cpus, tmp, "w")), args.seconds)
        sp, wp = spread(processes), spread(ws[:args.n])
        print(f"| {model} {dtype} b{batch} t{threads} | {sp[0] * 100:.1f}% ({sp[1]:.4f}-{sp[2]:.4f}) "
              f"| {wp[0] * 100:.1f}% ({wp[1]:.4f}-{wp[2]:.4f}) |", flush=True)

    if args.flip:
        flip(args, tmp)


LOOP = """
import sys, time
share, until = float(sys.argv[1]), time.time() + float(sys.argv[2])
while time.time() < until:
    start = time.perf_counter()
    while time.perf_counter() - start < share * 1e-3:
        pass
    time.sleep((1 - share) * 1e-3)
"""


def flip(args, tmp):
    seconds = 9.0
    long_job = job("mlp", 16, 1, seconds)
    proc, out = start(args.worker, long_job, "0", tmp, "flip")
    time.sleep(0.5 + seconds / 3)  # start-up, then the first third
    subprocess.run(["taskset", "-c", "0", "chrt", "-f", "50", sys.executable, "-c", LOOP,
                    str(args.flip_share), str(seconds / 3)], check=True)
    ws = windows(result(proc, out), 0.25)
    third = len(ws) // 3
    parts = [ws[:third], ws[third:2 * third], ws[2 * third:]]
    print(f"\n3. flip: mlp b16 1 thread on CPU 0 for {seconds:g} s, a SCHED_FIFO loop taking "
          f"{args.flip_share:g} of every 1 ms of CPU 0 in the middle third (windows of 0.25 s, ms):")
    base = statistics.median(parts[0])
    print("   each window over the first third's median: " + " ".join(f"{w / base:.2f}" for w in ws))
    for name, part in zip(("before", "during", "after"), parts):
        print(f"   {name}: median {statistics.median(part):.4f} "
              f"({min(part):.4f}-{max(part):.4f}, {len(part)} windows)")


if __name__ == "__main__":
    main()
