"""Makes examples/mlp-1024.pt2, the user's package of examples/cpu-techniques.json: an MLP
1024-1024-10 (ReLU between) exported with a dynamic batch (2..4096) and compiled by
torch._inductor.aoti_compile_and_package, as a user makes one for C++ inference. Its
metadata names the torch that made it, which benchfleet reads to run it only on a worker of
that torch or newer (schemas/worker.md, AOTInductor packages). torch.export's dynamic
dimensions start at 2: the sweep leaves batch 1 of the package out (the package would
refuse it, by name).

    /opt/benchfleet/torch-2.15.0/bin/python examples/make-aoti-package.py [OUT.pt2]

Run it on (a host of the same CPU as) the hosts that run the sweep: Inductor compiles for
the CPU it runs on.
"""
import os
import sys

import torch
import torch.nn as nn


def main(out):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).eval()
    batch = torch.export.Dim("batch", min=2, max=4096)
    exported = torch.export.export(model, (torch.randn(16, 1024),), dynamic_shapes=({0: batch},))
    torch._inductor.aoti_compile_and_package(
        exported, package_path=out,
        inductor_configs={"aot_inductor.metadata": {"torch_version": torch.__version__}})
    print(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp-1024.pt2"))
