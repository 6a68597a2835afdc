#ifndef BENCHFLEET_WORKER_MEASURE_ENERGY_H_
#define BENCHFLEET_WORKER_MEASURE_ENERGY_H_

// Energy used while a job is timed (docs/results.md, Energy): the CPU packages' RAPL
// counters (Linux powercap) and, for a GPU job, the GPU's NVML energy counter, each
// read at the two edges of the sampling region. Where a counter cannot be read the
// figure is null and the reason says why: never an estimate.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace benchfleet::worker {

class GpuTelemetry;

inline constexpr const char* kPowercapRoot = "/sys/class/powercap";

// The increase of a counter that wraps to 0 after `range` (its max_energy_range_uj):
// an `after` below `before` means it wrapped once (a region shorter than one wrap, which
// for RAPL is minutes at the least).
std::uint64_t CounterDelta(std::uint64_t before, std::uint64_t after, std::uint64_t range);

// The package domains of RAPL under a powercap root: each top-level zone (`intel-rapl:N`,
// not its sub-zones nor `intel-rapl-mmio:N`, which count the same energy again) whose
// `name` starts with "package".
class RaplCounters {
 public:
  // nullopt with the reason when the root has no package zone or a counter cannot be
  // read (the counters are readable by root only on most kernels).
  static std::optional<RaplCounters> Open(const std::string& root, std::string* why_not);

  // Every package's energy_uj, in zone order; nullopt with the reason on a failed read.
  std::optional<std::vector<std::uint64_t>> Read(std::string* why_not) const;

  // Joules between two readings of Read(), each counter's wrap-around undone.
  double JoulesBetween(const std::vector<std::uint64_t>& before,
                       const std::vector<std::uint64_t>& after) const;

  const std::vector<std::string>& zones() const { return zones_; }

 private:
  std::vector<std::string> zones_;        // zone directories
  std::vector<std::uint64_t> ranges_uj_;  // max_energy_range_uj of each
};

// Reads the counters a job has at the edges of its sampling region and reports
// {cpu_j, gpu_j, j_per_sample, avg_w, note}: CPU package joules (the whole host's
// packages: other processes count too, which host_busy_cpus shows), GPU joules, joules
// per sample processed and average watts (CPU and GPU together, over what was read).
class EnergyMeter {
 public:
  // `gpu` may be null (a CPU job, or no NVML); it must outlive the meter.
  EnergyMeter(const std::string& powercap_root, GpuTelemetry* gpu, std::string gpu_note);

  void RegionStart();
  void RegionEnd();
  // `samples` processed in the region (iterations × batch), `seconds` its length.
  nlohmann::json Report(double samples, double seconds) const;

 private:
  std::string cpu_note_;  // before rapl_: opening the counters writes the reason into it
  std::optional<RaplCounters> rapl_;
  GpuTelemetry* gpu_;
  std::string gpu_note_;
  std::optional<std::vector<std::uint64_t>> cpu_start_, cpu_end_;
  std::optional<double> gpu_start_, gpu_end_;
};

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_ENERGY_H_
