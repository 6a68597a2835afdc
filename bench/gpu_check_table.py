#!/usr/bin/env python3
"""The tables of a deploy/gpu-check.sh run, in Markdown (docs/gpu.md takes them as they
are): the probe, the GPU peaks per dtype, the sweep with CPU-vs-GPU speedups, GPU memory
and telemetry, every worker median against torch.utils.benchmark's (within 5% or not),
and the jobs that were refused with their reasons.

    gpu_check_table.py OUT_DIR
"""
import glob
import json
import os
import sys

TOLERANCE = 0.05  # a worker median within 5% of torch.utils.benchmark's


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(value, digits=3):
    if value is None:
        return "-"
    if isinstance(value, float):
        return "%.*g" % (digits, value)
    return str(value)


def main(out):
    print("# deploy/gpu-check.sh: %s\n" % out)
    probe = load(os.path.join(out, "probe.json")) or {}
    print("## Probe\n")
    for key in ("torch_version", "cuda_available", "cuda_version", "cudnn_version", "cuda_device_count", "gpus"):
        print("- `%s`: %s" % (key, json.dumps(probe.get(key))))
    calibration = load(os.path.join(out, "gpu_calibrate.log"))
    print("\n## GPU peaks (benchfleet-gpu-calibrate)\n")
    if calibration is None:
        print("no calibration output (see gpu_calibrate.log)")
    else:
        gpus = calibration.get("gpus", [])
        if not gpus:
            print("no GPU: %s" % calibration.get("note", calibration))
        keys = ["sgemm_gflops", "tf32_gflops", "bf16_gflops", "copy_gbps", "bandwidth_gbps", "theoretical_gflops"]
        if gpus:
            print("| GPU | " + " | ".join(keys) + " |")
            print("|---" * (len(keys) + 1) + "|")
            for g in gpus:
                print("| %s | %s |" % (g.get("name"), " | ".join(fmt(g.get(k), 4) for k in keys)))

    reference = {}
    for line in open(os.path.join(out, "reference.jsonl")) if os.path.exists(os.path.join(out, "reference.jsonl")) else []:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        reference[os.path.basename(row.get("job", "")).replace(".json", "")] = row

    results, refused = {}, []
    for path in sorted(glob.glob(os.path.join(out, "results", "*.json"))):
        name = os.path.basename(path)[:-5]
        r = load(path)
        if r is None:
            refused.append((name, "no result file"))
        elif not r.get("ok"):
            refused.append((name, r.get("error")))
        else:
            results[name] = r
    names = sorted({n.split("-", 1)[1] for n in results})
    print("\n## Sweep: GPU against its CPU twin\n")
    print("| job | GPU median ms | GPU noisy | CPU median ms (threads) | CPU/GPU speedup | "
          "gpu_peak_mem_mb | gpu_peak_reserved_mb | step_peak_alloc_mb | GPU util % | GPU W | GPU max °C | runtime TF32 cuBLAS/cuDNN, cudnn.benchmark |")
    print("|---" * 12 + "|")
    for name in names:
        g, c = results.get("gpu-" + name), results.get("cpu-" + name)
        gm = g["stats"]["median_ms"] if g else None
        cm = c["stats"]["median_ms"] if c else None
        tele = (g or {}).get("gpu_telemetry") or {}
        rt = (g or {}).get("runtime") or {}
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, fmt(gm, 4), fmt(g["stats"].get("noisy")) if g else "-",
            "%s (%s)" % (fmt(cm, 4), c.get("threads")) if c else "-",
            fmt(cm / gm if gm and cm else None, 3),
            fmt((g or {}).get("gpu_peak_mem_mb"), 5), fmt((g or {}).get("gpu_peak_reserved_mb"), 5),
            fmt((g or {}).get("step_peak_alloc_mb"), 5),
            fmt(tele.get("util_pct_mean")), fmt(tele.get("power_w_mean")), fmt(tele.get("temp_c_max")),
            "%s/%s, %s" % (rt.get("allow_tf32_cublas"), rt.get("allow_tf32_cudnn"), rt.get("cudnn_benchmark")) if g else "-"))
    plain, ckpt = results.get("gpu-cnn-train-fp32"), results.get("gpu-cnn-train-ckpt-fp32")
    if plain and ckpt and plain.get("step_peak_alloc_mb") and ckpt.get("step_peak_alloc_mb") is not None:
        print("\ncnn train step memory with checkpointing / without (GPU): %s" %
              fmt(ckpt["step_peak_alloc_mb"] / plain["step_peak_alloc_mb"], 3))

    print("\n## Worker against torch.utils.benchmark (same jobs, same host)\n")
    print("| job | worker median ms | torch.utils.benchmark median ms | worker / reference | within 5% | "
          "reference issue ms (Python, per step) |")
    print("|---|---|---|---|---|---|")
    within = {"gpu": 0, "cpu": 0}
    total = {"gpu": 0, "cpu": 0}
    for name, r in sorted(results.items()):
        ref = reference.get(name)
        if ref is None:
            print("| %s | %s | (not run) | - | - | - |" % (name, fmt(r["stats"]["median_ms"], 4)))
            continue
        if "error" in ref:
            print("| %s | %s | error: %s | - | - | - |" % (name, fmt(r["stats"]["median_ms"], 4), ref["error"]))
            continue
        ratio = r["stats"]["median_ms"] / ref["median_ms"]
        ok = abs(ratio - 1) <= TOLERANCE
        side = "gpu" if name.startswith("gpu-") else "cpu"
        total[side] += 1
        within[side] += ok
        print("| %s | %s | %s | %s | %s | %s |" % (name, fmt(r["stats"]["median_ms"], 4), fmt(ref["median_ms"], 4),
                                                fmt(ratio, 4), "yes" if ok else "**no**", fmt(ref.get("issue_ms"), 3)))
    print("\nGPU jobs: %d of %d medians within 5%% of torch.utils.benchmark's (the check); "
          "CPU twins: %d of %d (for information: many cores, long iterations, few samples)."
          % (within["gpu"], total["gpu"], within["cpu"], total["cpu"]))

    print("\n## Refused or failed\n")
    for name, error in refused:
        print("- `%s`: %s" % (name, error))
    if not refused:
        print("none")


if __name__ == "__main__":
    main(sys.argv[1])
