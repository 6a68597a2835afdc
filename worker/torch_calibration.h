#ifndef BENCHFLEET_WORKER_TORCH_CALIBRATION_H_
#define BENCHFLEET_WORKER_TORCH_CALIBRATION_H_

#include <cstdint>

#include "worker/host/calibration.h"
#include "worker/job_runner.h"

namespace benchfleet::worker {

// Each GEMM measurement is a MeasureWorkload run of one product per
// iteration with these settings: the warm-up lets BLAS buffers, thread
// pools and clocks settle, and the sampler drops any earlier regime it
// still sees (one core of the development host runs fp32 2048 at ~212 ms
// for ~1.5 s after the buffers are allocated, then at ~163 ms).
inline constexpr double kGemmWarmupSeconds = 0.5;
inline constexpr double kGemmMinSeconds = 0.5;
inline constexpr double kGemmMaxSeconds = 5;
// Sampling stops once the median product time is known to within 1%.
inline constexpr double kGemmTargetCi = 0.01;

// Each GEMM is measured at the largest N whose one product takes at most this long
// (13 samples must fit in kGemmMaxSeconds), doubling from gemm_n for fp32 and from
// kGemmMinReducedN for bf16 (which without a native kernel, before AVX-512 BF16 or
// AMX, runs 100x slower than fp32), up to kGemmMaxN (three 8192^2 fp32 matrices are
// 768 MiB): a size at which every CPU it runs on is busy. A product that is slow at the
// first N is measured there.
inline constexpr double kGemmMaxProductSeconds = 0.25;
inline constexpr std::int64_t kGemmMinReducedN = 256;
inline constexpr std::int64_t kGemmMaxN = 8192;

// torch::mm_out of two N x N randn matrices of `dtype` (seed 0, drawn in
// fp32 and converted) with `threads` set for every pool through
// ApplyThreadSettings; measurements repeated by RepeatUntilAgreement.
// GFLOP/s = 2 N^3 / median seconds / 1e9, at the N chosen above (GemmPeak::n).
GemmPeak MeasureTorchGemm(GemmDtype dtype, std::int64_t n, int threads);

// Runs RunCalibration with MeasureTorchGemm and the GPU tool next to this
// executable, adds {"runtime": {torch_version, blas, blas_config,
// omp_wait_policy}} and prints the JSON (one line) to stdout. Returns
// kExitRejected when the calibration was refused as noisy (it has "error").
ExitCode PrintCalibration(std::int64_t gemm_n);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_TORCH_CALIBRATION_H_
