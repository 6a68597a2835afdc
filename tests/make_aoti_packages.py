"""AOTInductor packages for the tests, made as a user makes one: a small MLP exported with
a dynamic batch and compiled by torch._inductor.aoti_compile_and_package, its metadata
naming the torch that made it. Beside it, copies that are bad in one way each (the
refusals of schemas/worker.md, AOTInductor packages), made by rewriting one entry of the
zip, as nothing else about them differs:

    make_aoti_packages.py OUT_DIR

  mlp.pt2         Linear 32 -> 32 -> 4, ReLU between, batch 2..64; input [batch, 32]
  no_version.pt2  the same without torch_version in its metadata
  newer.pt2       metadata: made by torch 99.0.0
  cuda.pt2        metadata: compiled for cuda
  arm.pt2         metadata: compiled for aarch64
  broken_so.pt2   its compiled library replaced by bytes that are no library
  not_zip.pt2     a text file

Reuses OUT_DIR/mlp.pt2 when it is there (one compile takes ~30 s on 2 cores).
"""
import json
import os
import sys
import zipfile

import torch
import torch.nn as nn


def compile_mlp(path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4)).eval()
    example = torch.randn(4, 32)
    batch = torch.export.Dim("batch", min=2, max=64)
    exported = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
    torch._inductor.aoti_compile_and_package(
        exported, package_path=path,
        inductor_configs={"aot_inductor.metadata": {"torch_version": torch.__version__}})


def rewrite(source, target, change):
    """Copies the zip `source` to `target`, each entry through change(name, data)."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = change(info.filename, src.read(info.filename))
            dst.writestr(info.filename, data, compress_type=zipfile.ZIP_STORED)


def with_metadata(edit):
    def change(name, data):
        if name.endswith("metadata.json"):
            metadata = json.loads(data)
            edit(metadata)
            return json.dumps(metadata).encode()
        return data
    return change


def main(out):
    os.makedirs(out, exist_ok=True)
    # Test processes run this at the same time (ctest -j2) into one directory: each file is
    # written under a name of this process's own and renamed into place, so no process
    # reads another's half-written file or writes into it.
    def atomically(name, write):
        partial = os.path.join(out, "%d.partial.%s" % (os.getpid(), name))
        write(partial)
        os.replace(partial, os.path.join(out, name))

    mlp = os.path.join(out, "mlp.pt2")
    if not os.path.exists(mlp):
        atomically("mlp.pt2", compile_mlp)

    def text(path):
        with open(path, "w") as f:
            f.write("this is not a package\n")

    atomically("no_version.pt2", lambda p: rewrite(mlp, p, with_metadata(lambda m: m.pop("torch_version", None))))
    atomically("newer.pt2", lambda p: rewrite(mlp, p, with_metadata(lambda m: m.update(torch_version="99.0.0"))))
    atomically("cuda.pt2", lambda p: rewrite(mlp, p, with_metadata(lambda m: m.update(AOTI_DEVICE_KEY="cuda"))))
    atomically("arm.pt2", lambda p: rewrite(mlp, p, with_metadata(lambda m: m.update(AOTI_MACHINE="aarch64"))))
    atomically("broken_so.pt2", lambda p: rewrite(
        mlp, p, lambda name, data: b"\0not a shared library\0" * 64 if name.endswith(".so") else data))
    atomically("not_zip.pt2", text)
    print(json.dumps({"dir": out, "torch": torch.__version__}))


if __name__ == "__main__":
    main(sys.argv[1])
