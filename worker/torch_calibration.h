#ifndef BENCHFLEET_WORKER_TORCH_CALIBRATION_H_
#define BENCHFLEET_WORKER_TORCH_CALIBRATION_H_

#include <cstdint>

#include "worker/calibration.h"
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
inline constexpr double kGemmTargetIqr = 0.02;

// A dtype without a native kernel on this CPU (bf16 before AVX-512 BF16 /
// AMX) can run 100x slower than fp32; its N is halved, down to
// kGemmMinReducedN, until one product is expected to take at most this
// long, judged from a timed product at kGemmMinReducedN.
inline constexpr double kGemmMaxProductSeconds = 0.25;
inline constexpr std::int64_t kGemmMinReducedN = 256;

// torch::mm_out of two N x N randn matrices of `dtype` (seed 0, drawn in
// fp32 and converted) with `threads` set for every pool through
// ApplyThreadSettings; measurements repeated by RepeatUntilAgreement.
// GFLOP/s = 2 N^3 / median seconds / 1e9. fp32 always uses `n`; bf16 may
// use a smaller N (above).
GemmPeak MeasureTorchGemm(GemmDtype dtype, std::int64_t n, int threads);

// Runs RunCalibration with MeasureTorchGemm and the GPU tool next to this
// executable, adds {"runtime": {torch_version, blas, blas_config,
// omp_wait_policy}} and prints the JSON (one line) to stdout. Returns
// kExitRejected when the calibration was refused as noisy (it has "error").
ExitCode PrintCalibration(std::int64_t gemm_n);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_TORCH_CALIBRATION_H_
