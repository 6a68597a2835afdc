#ifndef BENCHFLEET_WORKER_MEASURE_GPU_TELEMETRY_H_
#define BENCHFLEET_WORKER_MEASURE_GPU_TELEMETRY_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "worker/measure/clock.h"

namespace benchfleet::worker {

// NVML ships with the NVIDIA driver, not with the toolkit, and has no header on
// hosts without one; it is loaded at run time so the worker runs everywhere.
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// How often the sampler reads the GPU's counters while a job is timed. NVML's
// utilisation is itself an average over the driver's last sample period (1/6 s
// to 1 s depending on the GPU), so sampling faster adds no information.
inline constexpr std::chrono::milliseconds kGpuTelemetryPeriod{100};

// Finds an NVML function by name: dlsym on the loaded library, or a test's fake.
// Returns nullptr for a function the library lacks.
using NvmlLookup = std::function<void*(const char* name)>;

// Utilisation, memory, SM clock, temperature and power of one GPU, sampled by a
// background thread between Start() and Stop(). Utilisation, memory and clock are
// required; temperature, power and the energy counter are read where NVML has them
// (an older driver may lack one), null where it does not.
class GpuTelemetry {
 public:
  // Loads NVML from `library` and finds CUDA device `cuda_index` (matched by PCI bus
  // id through the CUDA driver, so CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER are
  // honoured; by NVML index when the driver API is absent). Returns nullptr and sets
  // *why_not when NVML or the device is unavailable.
  static std::unique_ptr<GpuTelemetry> Open(int cuda_index, std::string* why_not,
                                            const char* library = kNvmlLibrary);
  // As Open, with NVML's functions from `lookup` (matched by NVML index unless it has
  // nvmlDeviceGetHandleByPciBusId_v2) and the time from `clock`, which must outlive
  // the object.
  static std::unique_ptr<GpuTelemetry> OpenWith(const NvmlLookup& lookup, int cuda_index,
                                                std::string* why_not, Clock& clock = SystemClock());
  ~GpuTelemetry();
  GpuTelemetry(const GpuTelemetry&) = delete;
  GpuTelemetry& operator=(const GpuTelemetry&) = delete;

  // Starts sampling every `period` (one sample at once).
  void Start(std::chrono::milliseconds period = kGpuTelemetryPeriod);

  // Takes a last sample, stops the thread and returns {samples, util_pct_mean,
  // util_pct_max, mem_used_mb_max, sm_clock_mhz_mean, temp_c_max, power_w_mean,
  // power_source}; a counter the GPU does not report is null. power_w_mean is the
  // energy counter's difference over the time since Start() where the GPU has the
  // counter (power_source "energy_counter": exact, where Hopper's power reading is
  // itself a 1 s average), else the mean of the power samples ("power_usage_mean"),
  // else null (power_source null).
  nlohmann::json Stop();

  // The GPU's total energy counter (NVML, since the driver loaded), in joules; nullopt
  // with the reason where the GPU or driver has none.
  std::optional<double> EnergyJoules(std::string* why_not);

 private:
  struct Nvml;
  struct Series {
    int count = 0;
    double sum = 0;
    double max = 0;
    void Add(double v);
    nlohmann::json Mean() const;
    nlohmann::json Max() const;
  };
  GpuTelemetry(std::unique_ptr<Nvml> nvml, Clock& clock);
  void SampleOnce();
  void Run(std::chrono::milliseconds period);

  std::unique_ptr<Nvml> nvml_;
  Clock& clock_;
  // The energy counter and the clock at Start(); unset without a counter.
  std::optional<double> start_joules_;
  double start_seconds_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  // State below is protected by mutex_.
  bool stop_ = false;
  int samples_ = 0;
  Series util_, mem_mb_, clock_mhz_, temp_c_, power_w_;
};

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_GPU_TELEMETRY_H_
