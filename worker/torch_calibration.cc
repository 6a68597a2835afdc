#include "worker/torch_calibration.h"

#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>

#include "worker/host/omp_wait_policy.h"
#include "worker/host/process_info.h"
#include "worker/host/torch_runtime.h"
#include "worker/measure/clock.h"
#include "worker/measure/sampler.h"
#include "worker/measure/stats.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double GemmFlop(std::int64_t n) {
  const auto size = static_cast<double>(n);
  return 2.0 * size * size * size;
}

torch::Tensor RandomMatrix(std::int64_t n, torch::ScalarType type) {
  return torch::randn({n, n}).to(type);
}

// One product's seconds at N, after an untimed one (first-call set-up: buffers,
// oneDNN's primitive for the shape).
double ProductSeconds(std::int64_t n, torch::ScalarType type) {
  const torch::Tensor a = RandomMatrix(n, type);
  const torch::Tensor b = RandomMatrix(n, type);
  torch::Tensor c = torch::empty({n, n}, torch::TensorOptions().dtype(type));
  torch::mm_out(c, a, b);
  const double start = Now();
  torch::mm_out(c, a, b);
  return Now() - start;
}

// The size to measure at: from `first` (fp32: gemm_n; bf16: kGemmMinReducedN), doubled
// while the next product, 8 times this one, is expected within kGemmMaxProductSeconds,
// each size timed for itself (a guess from one small product overstates what a larger
// one costs wherever a call has overheads of its own, and a bf16 GEMM of N = 512 does
// not keep two AMX cores busy), and halved back when the larger one took too long.
std::int64_t ChooseGemmN(std::int64_t first, torch::ScalarType type) {
  std::int64_t n = first;
  double seconds = ProductSeconds(n, type);
  while (n * 2 <= kGemmMaxN && 8 * seconds <= kGemmMaxProductSeconds) {
    const double larger = ProductSeconds(n * 2, type);
    if (larger > kGemmMaxProductSeconds) break;
    n *= 2;
    seconds = larger;
  }
  return n;
}

}  // namespace

GemmPeak MeasureTorchGemm(GemmDtype dtype, std::int64_t n, int threads) {
  GemmPeak peak;
  peak.n = n;
  if (n < 1) {
    peak.error = "GEMM size must be >= 1, got " + std::to_string(n);
    return peak;
  }
  if (std::string error = ApplyThreadSettings(threads, 1); !error.empty()) {
    peak.error = error;
    return peak;
  }
  const torch::ScalarType type = dtype == GemmDtype::kBf16 ? torch::kBFloat16 : torch::kFloat32;
  try {
    c10::InferenceMode guard;
    torch::manual_seed(0);
    n = ChooseGemmN(dtype == GemmDtype::kFp32 ? n : std::min(n, kGemmMinReducedN), type);
    torch::manual_seed(0);
    const torch::Tensor a = RandomMatrix(n, type);
    const torch::Tensor b = RandomMatrix(n, type);
    torch::Tensor c = torch::empty({n, n}, torch::TensorOptions().dtype(type));
    const TimingOptions timing{kGemmWarmupSeconds, kGemmMinSeconds, kGemmMaxSeconds, kGemmTargetCi};
    peak = RepeatUntilAgreement([&] {
      const Measurement m = MeasureWorkload([&] { torch::mm_out(c, a, b); }, timing, SystemClock());
      const SampleStats stats = Summarize(m.samples_ms, kGemmTargetCi);
      GemmMeasurement measurement;
      measurement.unsteady = m.unsteady;
      measurement.median_seconds = stats.median_ms / 1e3;
      if (stats.n == 0 || stats.median_ms <= 0) {
        measurement.error = "no GEMM sample was taken";
      } else {
        measurement.gflops = GemmFlop(n) / measurement.median_seconds / 1e9;
      }
      return measurement;
    });
    peak.n = n;
  } catch (const c10::Error& e) {
    peak.error = std::string("LibTorch failed: ") + e.what_without_backtrace();
  } catch (const std::bad_alloc&) {
    peak.error = "out of memory for three " + std::to_string(n) + " x " + std::to_string(n) +
                 " matrices; lower --calibrate-gemm-n";
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
    calibration["runtime"] = {{"torch_version", probe.at("torch_version")},
                              {"blas", probe.at("blas")},
                              {"blas_config", probe.at("blas_config")},
                              {"blas_threading", probe.at("blas_threading")},
                              {"omp_wait_policy", OmpWaitPolicyInEffect()},
                              {"env", PerformanceEnvironment(environ)}};
    // Report only: a BLAS whose kernels use a narrower vector ISA than the
    // CPU offers caps every GEMM figure, and with it every fraction of peak.
    const json& config = probe.at("blas_config");
    const std::optional<BlasKernel> kernel =
        config.is_string() ? OpenBlasKernel(config.get<std::string>()) : std::nullopt;
    const json& flags_isa = calibration.at("cpu").at("flags_isa");
    const std::optional<bool> narrower =
        kernel && flags_isa.is_string()
            ? BlasIsaNarrowerThanCpu(kernel->isa, flags_isa.get<std::string>())
            : std::nullopt;
    calibration["runtime"]["blas_kernel"] = kernel ? json(kernel->name) : json(nullptr);
    calibration["runtime"]["blas_kernel_isa"] = kernel ? json(kernel->isa) : json(nullptr);
    calibration["runtime"]["blas_isa_narrower_than_cpu"] =
        narrower ? json(*narrower) : json(nullptr);
    std::cout << calibration.dump() << std::endl;
    // Refused as noisy: printed for the reader, but not a calibration to store.
    return calibration.contains("error") ? kExitRejected : kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "benchfleet-worker: calibration failed: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace benchfleet::worker
