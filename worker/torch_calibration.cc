#include "worker/torch_calibration.h"

#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>

#include "worker/omp_wait_policy.h"
#include "worker/process_info.h"
#include "worker/torch_runtime.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

GemmPeak MeasureTorchGemm(std::int64_t n, int threads) {
  GemmPeak peak;
  if (n < 1) {
    peak.error = "GEMM size must be >= 1, got " + std::to_string(n);
    return peak;
  }
  if (std::string error = ApplyThreadSettings(threads, 1); !error.empty()) {
    peak.error = error;
    return peak;
  }
  try {
    c10::InferenceMode guard;
    torch::manual_seed(0);
    const torch::Tensor a = torch::randn({n, n});
    const torch::Tensor b = torch::randn({n, n});
    torch::Tensor c = torch::empty({n, n});

    const double warmup_start = Now();
    std::int64_t warmup_calls = 0;
    do {
      torch::mm_out(c, a, b);
      ++warmup_calls;
    } while (Now() - warmup_start < kGemmWarmupSeconds);
    const double per_call = (Now() - warmup_start) / static_cast<double>(warmup_calls);
    const auto calls_per_sample = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(kGemmMinSampleSeconds / per_call)));
    peak.best_seconds = 0;
    for (int run = 0; run < kGemmTimedRuns; ++run) {
      const double start = Now();
      for (std::int64_t i = 0; i < calls_per_sample; ++i) torch::mm_out(c, a, b);
      const double seconds = (Now() - start) / static_cast<double>(calls_per_sample);
      if (run == 0 || seconds < peak.best_seconds) peak.best_seconds = seconds;
    }
    peak.timed_runs = kGemmTimedRuns;
    const double flop =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    peak.best_gflops = flop / peak.best_seconds / 1e9;
  } catch (const c10::Error& e) {
    peak.error = std::string("LibTorch failed: ") + e.what_without_backtrace();
  } catch (const std::bad_alloc&) {
    peak.error = "out of memory for three " + std::to_string(n) + " x " + std::to_string(n) +
                 " fp32 matrices; lower --calibrate-gemm-n";
  }
  return peak;
}

ExitCode PrintCalibration(std::int64_t gemm_n) {
  try {
    CalibrationOptions options;
    options.cpus = AllowedCpus();
    options.gemm_n = gemm_n;
    options.gpu_tool_path = PathNextToExecutable(kGpuCalibrateProgram);
    json calibration = RunCalibration(options, MeasureTorchGemm);
    const json probe = ProbeInfo();
    const std::optional<std::string> policy = OmpWaitPolicy();
    calibration["runtime"] = {{"torch_version", probe.at("torch_version")},
                              {"blas", probe.at("blas")},
                              {"blas_config", probe.at("blas_config")},
                              {"omp_wait_policy", policy ? json(*policy) : json(nullptr)}};
    std::cout << calibration.dump() << std::endl;
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "benchfleet-worker: calibration failed: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace benchfleet::worker
