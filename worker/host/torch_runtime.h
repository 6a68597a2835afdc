#ifndef BENCHFLEET_WORKER_HOST_TORCH_RUNTIME_H_
#define BENCHFLEET_WORKER_HOST_TORCH_RUNTIME_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace benchfleet::worker {

// Sets every pool that can run this process's work to the requested size:
// ATen/OpenMP intra-op threads, ATen inter-op threads, and OpenBLAS's own
// pthread pool (which ignores torch::set_num_threads). Call before any work.
// Returns an empty string on success, else what went wrong and how to fix it.
std::string ApplyThreadSettings(std::int64_t threads, std::int64_t interop_threads);

// Allows or forbids ATen's oneDNN (mkldnn) kernels, and for a job that runs
// quantized ops (`quantized`) selects the onednn quantized engine, else qnnpack.
// Returns an empty string on success, else why the job cannot run here.
std::string ApplyBackendSettings(bool onednn, bool quantized);

// The math of CUDA kernels, set for every job so that no default decides it: TF32
// tensor-core math in cuBLAS matmuls and cuDNN convolutions only when `allow_tf32` (dtype
// "tf32"; "fp32" is true fp32, although PyTorch's own default lets cuDNN use TF32), and
// cuDNN autotuning (benchmark mode) on, so convolutions run the fastest algorithm for
// their shapes, as a tuned training loop does (it is picked during the warm-up).
void ApplyCudaMath(bool allow_tf32);

// The CUDA math in effect: {allow_tf32_cublas, allow_tf32_cudnn, cudnn_benchmark}.
nlohmann::json CudaMathInfo();

// Empty when `device` ("cpu", "cuda", "cuda:N") can run jobs in this process;
// otherwise why not: this LibTorch build has no CUDA support, or there is no
// such GPU on this host.
std::string CheckDevice(const std::string& device);

// What this process is actually running with: {torch_version, onednn, qengine,
// blas, blas_version, onednn_version, openblas_threads, intraop_threads, interop_threads,
// omp_wait_policy, affinity}, and for a job on a GPU (`gpu`) CudaMathInfo's fields. qengine is null
// unless `quantized`. Fields that cannot be known are null.
nlohmann::json RuntimeInfo(bool quantized, bool gpu = false);

// Capabilities of this LibTorch build and host, printed by --probe:
// {torch_version, blas, blas_config, onednn, openmp, parallel_info,
//  cuda_available, cuda_device_count, cuda_version, cudnn_version, gpus,
//  quantized_engines, blas_version, mkl_version, onednn_version}; the job runner adds
//  the techniques it runs. cuda_version ("13.0", the CUDA runtime LibTorch was built
// with) and cudnn_version ("9.10.2") are null in a LibTorch without them.
nlohmann::json ProbeInfo();

// Empty when this worker's LibTorch matches a job's `torch` (a version prefix; empty
// matches); otherwise why the job is not for this worker.
std::string CheckTorch(const std::string& prefix);
// This worker's LibTorch version, "2.15.0".
std::string TorchVersion();

// True when LibTorch can use a CUDA device in this process.
bool CudaAvailable();
// GPUs this worker sees (0 without CUDA).
std::int64_t CudaDeviceCount();

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_HOST_TORCH_RUNTIME_H_
