#!/usr/bin/env python3
"""What a comparison finds on this host (docs/performance.md, Paired comparisons).

Starts a fresh local fleet (a coordinator and one agent), then for each configuration
asks, over and over, whether a dialled slowdown (schemas/worker.md, Slowdown) made it
slower:

  * paired: one sweep per decision with "versus": {"slowdown": [0, X]} (and an A/A run,
    [0, 0]); the answer is versus_comparison's change, with the pairs it took and how long
    the decision took (sweep submitted -> answer written);
  * unpaired (--unpaired N): N times two sweeps of the same configuration, plain and with
    "slowdown": X, each job in the coordinator's default processes, then `benchfleet compare
    A B`'s change for the cell.

Prints one table: per configuration and slowdown, how often each mode said slower, the
ratios it saw, and the time per decision.

With --compare-pairings in_process,interleaved,duet it measures instead which way of
pairing gives the narrowest interval for the time: A/A runs of --max-pairs pairs in each
pairing in turn, --aa-repeats times (schemas/sweep.md, Versus, pairing).

  bench/versus_sensitivity.py [--build build] [--configs mlp:16:1,mlp:16:2,cnn:1:2]
      [--slowdowns 0.05,0.02] [--repeats 10] [--aa-repeats 20] [--unpaired 5]
      [--pairing auto] [--timing 0.2,0.3,1] [--db /tmp/versus.db]
  bench/versus_sensitivity.py --configs mlp:16:1 --compare-pairings in_process,interleaved,duet
      --aa-repeats 3 --max-pairs 12

A configuration is MODEL:BATCH:THREADS (the zoo's defaults for the model's size: mlp
1024-1024-10, cnn width 64 at 224^2 unless --cnn-small: width 32 at 112^2).
"""
import argparse
import json
import math
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--configs", default="mlp:16:1,mlp:16:2,cnn:1:2")
    p.add_argument("--slowdowns", default="0.05,0.02")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--aa-repeats", type=int, default=20)
    p.add_argument("--unpaired", type=int, default=0, help="unpaired A/B decisions per cell")
    p.add_argument("--pairing", default="auto")
    p.add_argument("--max-pairs", type=int, default=20)
    p.add_argument("--min-change", type=float, default=0.01)
    p.add_argument("--precision", type=float, default=0.01)
    p.add_argument("--timing", default="0.2,0.3,1", help="warmup_s,min_time_s,max_time_s")
    p.add_argument("--cnn-small", action="store_true")
    p.add_argument("--db", default="")
    p.add_argument("--json", default="", help="also write every decision here")
    p.add_argument("--compare-pairings", default="",
                   help="instead: A/A runs of --max-pairs pairs each (no early stop) in each of "
                        "these pairings in turn, --aa-repeats times, and per pairing the interval's "
                        "half-width against the time it took")
    return p.parse_args()


class Fleet:
    def __init__(self, build, db):
        self.build = build
        self.db = db
        self.dir = tempfile.mkdtemp(prefix="benchfleet-versus-")
        self.procs = []
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        ready = os.path.join(self.dir, "ready.json")
        self.procs.append(subprocess.Popen(
            [f"{build}/coordinator/benchfleet-coordinator", "--db", db, "--agents",
             "tcp://127.0.0.1:*", "--clients", "tcp://127.0.0.1:*", "--ready-file", ready],
            stderr=open(os.path.join(self.dir, "coordinator.log"), "w")))
        for _ in range(300):
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                break
            time.sleep(0.1)
        endpoints = json.load(open(ready))
        os.environ["BENCHFLEET_COORDINATOR"] = endpoints["clients"]
        self.procs.append(subprocess.Popen(
            [f"{build}/agent/benchfleet-agent", "--coordinator", endpoints["agents"], "--name",
             "node", "--worker", f"{build}/worker/benchfleet-worker", "--state-dir",
             os.path.join(self.dir, "agent"), "--no-calibrate"],
            stderr=open(os.path.join(self.dir, "agent.log"), "w")))
        for _ in range(600):
            status = self.cli(["status", "--format", "json"], check=False)
            if '"agent":' in status:
                return
            time.sleep(0.1)
        raise SystemExit("versus_sensitivity: the agent did not register")

    def cli(self, args, check=True):
        out = subprocess.run([f"{self.build}/cli/benchfleet"] + args, capture_output=True,
                             text=True)
        if check and out.returncode not in (0, 1):
            raise SystemExit(f"benchfleet {' '.join(args)}: {out.stderr}")
        return out.stdout

    def submit(self, sweep):
        path = os.path.join(self.dir, "sweep.json")
        json.dump(sweep, open(path, "w"))
        out = self.cli(["submit", path, "--wait"])
        # "sweep 12 "name": 2 jobs"
        words = out.split()
        for i, word in enumerate(words[:-1]):
            if word == "sweep" and words[i + 1].isdigit():
                return int(words[i + 1])
        raise SystemExit(f"versus_sensitivity: no sweep id in {out!r}")

    def query(self, sql):
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in con.execute(sql)]
        finally:
            con.close()

    def stop(self):
        for p in reversed(self.procs):
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def base_sweep(config, args, name):
    model, batch, threads = config.split(":")
    warmup, min_time, max_time = (float(v) for v in args.timing.split(","))
    sweep = {"name": name, "placement": "any",
             "matrix": {"model": model, "batch_size": int(batch), "threads": int(threads)},
             "timing": {"warmup_s": warmup, "min_time_s": min_time, "max_time_s": max_time}}
    if model == "cnn" and args.cnn_small:
        sweep["models"] = {"cnn": {"width": 32, "image_size": 112}}
    return sweep


def paired(fleet, config, slowdown, args, pairing=None, precision=None):
    sweep = base_sweep(config, args, f"versus {config} {slowdown}")
    sweep["versus"] = {"slowdown": [0, slowdown], "pairing": pairing or args.pairing,
                       "max_pairs": args.max_pairs, "min_change": args.min_change}
    sweep["precision"] = args.precision if precision is None else precision
    start = time.time()
    sweep_id = fleet.submit(sweep)
    row = fleet.query("SELECT v.*, s.created_at FROM versus_comparison v JOIN sweeps s "
                      f"ON s.sweep_id = v.sweep_id WHERE v.sweep_id = {sweep_id}")[0]
    return {"mode": "paired", "config": config, "slowdown": slowdown, "change": row["change"],
            "ratio": row["ratio"], "low": row["ratio_ci_low"], "high": row["ratio_ci_high"],
            "pairs": row["pairs"], "pairing": row["pairing"], "stopped": row["stopped"],
            "seconds": time.time() - start, "sweep_id": sweep_id}


def unpaired(fleet, config, slowdown, args):
    start = time.time()
    plain = fleet.submit(base_sweep(config, args, f"plain {config}"))
    slowed_sweep = base_sweep(config, args, f"slowed {config} {slowdown}")
    slowed_sweep["slowdown"] = slowdown
    slowed = fleet.submit(slowed_sweep)
    rows = json.loads(fleet.cli(["compare", str(plain), str(slowed), "--format", "json"]))
    row = rows[0]
    return {"mode": "unpaired", "config": config, "slowdown": slowdown, "change": row["change"],
            "ratio": row["ratio"], "low": row["ratio_ci_low"], "high": row["ratio_ci_high"],
            "pairs": None, "detectable": row.get("detectable"),
            "host_pace_ratio": row.get("host_pace_ratio"), "seconds": time.time() - start}


def compare_pairings(fleet, args):
    """A/A runs of a fixed number of pairs in each pairing in turn: which gives the narrowest
    interval for the time (the half-width shrinks as one over the square root of the pairs,
    so half-width x sqrt(seconds) compares pairings of different lengths)."""
    pairings = args.compare_pairings.split(",")
    runs = {p: [] for p in pairings}
    for config in args.configs.split(","):
        for i in range(args.aa_repeats):
            for pairing in pairings:
                # precision 1e-9: never reached, so every run takes --max-pairs pairs (an A/A
                # run is not "decided" but by chance).
                d = paired(fleet, config, 0.0, args, pairing=pairing, precision=1e-9)
                half = (math.log(d["high"]) - math.log(d["low"])) / 2 * 100
                runs[pairing].append((config, half, d["seconds"], d["pairs"], d["change"]))
                print(f"  {config} {pairing} A/A #{i + 1}: {d['ratio']:.4f} +-{half:.2f}% "
                      f"{d['pairs']} pairs {d['seconds']:.0f} s ({d['change']})", flush=True)
    print()
    print("| configuration | pairing | runs | half-width of the 95% interval, median (range) | "
          "s per run, median | half-width x sqrt(s), median |")
    print("|---|---|---|---|---|---|")
    for config in args.configs.split(","):
        for pairing in pairings:
            rows = [r for r in runs[pairing] if r[0] == config]
            halves = [r[1] for r in rows]
            secs = [r[2] for r in rows]
            eff = [r[1] * math.sqrt(r[2]) for r in rows]
            print(f"| {config} | {pairing} | {len(rows)} | {statistics.median(halves):.2f}% "
                  f"({min(halves):.2f}-{max(halves):.2f}%) | {statistics.median(secs):.0f} | "
                  f"{statistics.median(eff):.1f} |")


def main():
    args = parse_args()
    db = args.db or os.path.join(tempfile.gettempdir(), "benchfleet-versus.db")
    load = open("/proc/loadavg").read().split()[:3]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    env = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")}
    print(f"host: {cpu}, {os.cpu_count()} CPUs; load {' '.join(load)}; {env or 'OPENBLAS_* unset'}")
    fleet = Fleet(args.build, db)
    if args.compare_pairings:
        try:
            compare_pairings(fleet, args)
        finally:
            fleet.stop()
        return
    decisions = []
    try:
        slowdowns = [float(s) for s in args.slowdowns.split(",") if s]
        for config in args.configs.split(","):
            plan = [(s, args.repeats) for s in slowdowns] + [(0.0, args.aa_repeats)]
            for slowdown, repeats in plan:
                for i in range(repeats):
                    d = paired(fleet, config, slowdown, args)
                    decisions.append(d)
                    print(f"  {config} x{1 + slowdown:.2f} paired #{i + 1}: {d['change']} "
                          f"{d['ratio']:.4f} [{d['low']:.4f}, {d['high']:.4f}] {d['pairs']} pairs "
                          f"({d['pairing']}, {d['stopped']}) {d['seconds']:.0f} s", flush=True)
            for slowdown in slowdowns:
                for i in range(args.unpaired):
                    d = unpaired(fleet, config, slowdown, args)
                    decisions.append(d)
                    print(f"  {config} x{1 + slowdown:.2f} unpaired #{i + 1}: {d['change']} "
                          f"{d['ratio']:.4f} detectable {d['detectable']} {d['seconds']:.0f} s",
                          flush=True)
    finally:
        fleet.stop()
    if args.json:
        json.dump(decisions, open(args.json, "w"), indent=1)
    print()
    print("| configuration | true change | mode | called slower | ratio, median (range) | "
          "pairs, median (max) | s per decision, median (max) |")
    print("|---|---|---|---|---|---|---|")
    keys = []
    for d in decisions:
        key = (d["config"], d["slowdown"], d["mode"])
        if key not in keys:
            keys.append(key)
    for config, slowdown, mode in keys:
        ds = [d for d in decisions if (d["config"], d["slowdown"], d["mode"]) == (config, slowdown, mode)]
        slower = sum(d["change"] == "slower" for d in ds)
        ratios = [d["ratio"] for d in ds if d["ratio"]]
        pairs = [d["pairs"] for d in ds if d["pairs"]]
        secs = [d["seconds"] for d in ds]
        pair_text = f"{statistics.median(pairs):.0f} ({max(pairs)})" if pairs else "5 processes a side"
        print(f"| {config} | {'A/A' if slowdown == 0 else f'+{slowdown:.0%}'} | {mode} | "
              f"{slower} of {len(ds)} | {statistics.median(ratios):.3f} ({min(ratios):.3f}-"
              f"{max(ratios):.3f}) | {pair_text} | {statistics.median(secs):.0f} ({max(secs):.0f}) |")


if __name__ == "__main__":
    sys.exit(main())
