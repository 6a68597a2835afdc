"""Compiles one of the worker's zoo models, with the worker's own weights, for the
`technique` axis (schemas/worker.md, Technique): a TorchScript file (torch.jit.trace) or
an AOTInductor package (torch.export, then torch._inductor.aoti_compile_and_package).
The worker runs it with the python of the torch it links, on the host that will run the
result: Inductor compiles for this CPU (-march=native), so a package is made where it runs.

    compile_model.py --job JOB.json --weights STATE.json --technique aoti --out OUT.pt2

JOB is the worker's job (model, model_args, batch_size, dtype, device, seed); STATE the
manifest of the model's parameters and buffers as the worker saved them (a JSON list of
{name, dtype, shape, offset, bytes} beside their raw bytes in the .bin of the same name),
loaded with strict=True, so the compiled model computes what the worker's eager one does. Prints one JSON line: what was made and how long each step took, or exits 1
with the reason on stderr.

dtype int8 goes through PT2E (torchao's prepare_pt2e/convert_pt2e with the X86 Inductor
quantizer, dynamic activation quantization as the eager path's quantized::linear_dynamic),
then into an AOTI package with Inductor's freezing on (its int8 lowering needs it). The
package's metadata carries `torch_version` (the worker checks it before loading).
"""
import argparse
import hashlib
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchfleet_zoo as zoo  # noqa: E402

# The int8 path of an AOTI package, recorded with each result it gives.
PT2E_INT8 = "pt2e_x86_inductor_dynamic"


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "int64": torch.int64}


def read_state(manifest_path):
    """The worker's tensors: raw bytes in <manifest>.bin, described by the manifest."""
    with open(manifest_path) as f:
        manifest = json.load(f)
    with open(os.path.splitext(manifest_path)[0] + ".bin", "rb") as f:
        data = bytearray(f.read())
    state = {}
    for t in manifest:
        dtype = DTYPES[t["dtype"]]
        count = t["bytes"] // torch.tensor([], dtype=dtype).element_size()
        flat = torch.frombuffer(data, dtype=dtype, count=count, offset=t["offset"]) if count else torch.empty(0, dtype=dtype)
        state[t["name"]] = flat.reshape(t["shape"]).clone()
    return state


def load_model(job, weights):
    torch.manual_seed(int(job.get("seed", 0)))
    model, x = zoo.build(job)
    model.load_state_dict(read_state(weights), strict=True)
    model.eval()
    device = torch.device(job["device"])
    model, x = model.to(device), x.to(device)
    dtype = job["dtype"]
    if dtype == "bf16":
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
    if dtype == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if job["model"] == "cnn" and zoo.model_args(job).get("memory_format") == "channels_last":
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    return model, x


def has_int32_dot_products():
    """Whether this CPU multiplies u8 by s8 and accumulates in int32 in one instruction
    (AVX512-VNNI, or AMX). Without it the x86 int8 GEMMs sum pairs of products in int16
    (vpmaddubsw), which saturates on activations quantized to the full 0..255: on an AVX2
    host the compiled mlp's error against fp32 was 9% instead of 1-2%."""
    def supported(name):
        probe = getattr(torch.cpu, name, None)
        return bool(probe()) if probe is not None else False
    return supported("_is_vnni_supported") or supported("_is_amx_tile_supported")


def quantize_pt2e(model, x):
    """Dynamic int8 Linear layers through PT2E (the path torch.ao.quantization gave way to).
    Returns the quantized model and the quantization settings it was made with."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as xiq

    # 7-bit activations where the CPU has no int32 dot product, as torchao's quantizer
    # asks ("Set it to True on earlier CPUs without VNNI to avoid accuracy issue"), and as
    # FBGEMM's own dynamic quantization does there.
    settings = {"is_dynamic": True, "reduce_range": not has_int32_dot_products()}
    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config(**settings))
    prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
    prepared(x)  # dynamic: nothing to calibrate, but the observers must see one batch
    return convert_pt2e(prepared), settings


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", required=True)
    parser.add_argument("--weights", required=True)
    parser.add_argument("--technique", required=True, choices=["torchscript", "aoti"])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with open(args.job) as f:
        job = json.load(f)
    report = {"technique": args.technique, "torch_version": torch.__version__, "quantization": None,
              "quantization_config": None, "inductor_configs": None}
    # Inductor writes its CPU kernels for the threads it compiles under: serial for one,
    # OpenMP regions for more. The job's count, as the worker runs it.
    torch.set_num_threads(int(job.get("threads", 1)))
    started = time.perf_counter()
    model, x = load_model(job, args.weights)
    int8 = job["dtype"] == "int8"
    with torch.no_grad():
        if args.technique == "torchscript":
            if int8:
                raise SystemExit("technique torchscript takes dtype fp32, tf32 or bf16; int8 is aoti's (PT2E)")
            traced = torch.jit.trace(model, (x,))
            report["export_s"] = time.perf_counter() - started
            traced.save(args.out)
            report["compile_s"] = 0.0
        else:
            if int8:
                model, report["quantization_config"] = quantize_pt2e(model, x)
                report["quantization"] = PT2E_INT8
            exported = torch.export.export(model, (x,))
            report["export_s"] = time.perf_counter() - started
            configs = {"aot_inductor.metadata": {"torch_version": torch.__version__}}
            if int8:
                configs["freezing"] = True
            report["inductor_configs"] = {k: v for k, v in configs.items() if k != "aot_inductor.metadata"}
            compile_started = time.perf_counter()
            torch._inductor.aoti_compile_and_package(exported, package_path=args.out, inductor_configs=configs)
            report["compile_s"] = time.perf_counter() - compile_started
    digest = hashlib.sha256()
    with open(args.out, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    report["package_sha256"] = digest.hexdigest()
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except SystemExit:
        raise
    except Exception as e:  # the worker reports the last line of stderr as the reason
        print("compile_model: %s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1] if str(e).strip() else ""),
              file=sys.stderr)
        sys.exit(1)
