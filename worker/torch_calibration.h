#ifndef BENCHFLEET_WORKER_TORCH_CALIBRATION_H_
#define BENCHFLEET_WORKER_TORCH_CALIBRATION_H_

#include <cstdint>

#include "worker/calibration.h"
#include "worker/job_runner.h"

namespace benchfleet::worker {

// Untimed products run for at least this long first, so that BLAS buffers,
// thread pools and clocks have settled.
inline constexpr double kGemmWarmupSeconds = 0.5;
// Timed samples; the fastest one is the peak.
inline constexpr int kGemmTimedRuns = 5;
// A sample repeats the product until it lasts this long, so that small N
// are not timed one microsecond-long call at a time.
inline constexpr double kGemmMinSampleSeconds = 0.05;

// torch::mm_out of two N x N fp32 randn matrices (seed 0) with `threads` set
// for every pool through ApplyThreadSettings; warm-up, then the best of
// kGemmTimedRuns samples. GFLOP/s = 2 N^3 / seconds / 1e9.
GemmPeak MeasureTorchGemm(std::int64_t n, int threads);

// Runs RunCalibration with MeasureTorchGemm and the GPU tool next to this
// executable, adds {"runtime": {torch_version, blas, blas_config,
// omp_wait_policy}} and prints the JSON (one line) to stdout.
ExitCode PrintCalibration(std::int64_t gemm_n);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_TORCH_CALIBRATION_H_
