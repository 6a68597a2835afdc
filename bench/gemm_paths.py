"""fp32 GEMM 2048^3 on this CPU: MKL's sgemm (torch.mm, what the worker's matmul and its
calibration run) against oneDNN's (an mkldnn Linear: oneDNN's inner product), in the torch
venv's python, pinned as a job with THREADS threads would be; MKL's own account of the code
path it takes on this CPU beside them (what the worker records as runtime.mkl_path).

    taskset -c 0 /opt/benchfleet/torch-2.15.0/bin/python bench/gemm_paths.py 1
    taskset -c 0,1 /opt/benchfleet/torch-2.15.0/bin/python bench/gemm_paths.py 2
"""
import ctypes, json, os, sys
import torch
import torch.utils.mkldnn
import torch.utils.benchmark as benchmark
threads = int(sys.argv[1])
torch.set_num_threads(threads)
n = 2048
a, b = torch.randn(n, n), torch.randn(n, n)
flop = 2 * n ** 3
mkl = benchmark.Timer("torch.mm(a, b)", globals={"a": a, "b": b}, num_threads=threads).blocked_autorange(min_run_time=3).median
lin = torch.nn.Linear(n, n, bias=False).eval()
with torch.no_grad():
    lin.weight.copy_(b.t())
    dnn_lin = torch.utils.mkldnn.to_mkldnn(lin)
    xa = a.to_mkldnn()
    dnn = benchmark.Timer("l(x)", globals={"l": dnn_lin, "x": xa}, num_threads=threads).blocked_autorange(min_run_time=3).median

class MklVersion(ctypes.Structure):  # oneMKL 2024's MKLVersion (mkl_types.h)
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("update", ctypes.c_int), ("patch", ctypes.c_int),
                ("status", ctypes.c_char_p), ("build", ctypes.c_char_p), ("processor", ctypes.c_char_p),
                ("platform", ctypes.c_char_p)]


path = None
try:
    lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    version = MklVersion()
    lib.mkl_serv_get_version(ctypes.byref(version))
    if version.major >= 2024:
        path = version.processor.decode()
except (OSError, AttributeError):
    pass
print(json.dumps({"threads": threads, "mkl_sgemm_gflops": flop / mkl / 1e9, "onednn_inner_product_gflops": flop / dnn / 1e9,
                  "mkl_ms": mkl * 1e3, "onednn_ms": dnn * 1e3, "mkl_path": path}))
