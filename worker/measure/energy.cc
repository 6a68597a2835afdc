#include "worker/measure/energy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "worker/measure/gpu_telemetry.h"

namespace benchfleet::worker {

namespace {

constexpr double kMicrojoulesPerJoule = 1e6;

// One unsigned integer from a sysfs file; nullopt with the reason.
std::optional<std::uint64_t> ReadCounter(const std::string& path, std::string* why_not) {
  std::ifstream in(path);
  if (!in) {
    *why_not =
        "cannot read " + path + ": " + std::strerror(errno) +
        (errno == EACCES ? " (RAPL counters are readable by root only on most kernels)" : "");
    return std::nullopt;
  }
  std::uint64_t value = 0;
  if (!(in >> value)) {
    *why_not = path + " does not hold a counter";
    return std::nullopt;
  }
  return value;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "intel-rapl:0" is a top-level zone (the powercap driver's name on AMD hosts too);
// "intel-rapl:0:1" is one of its sub-zones, and "intel-rapl-mmio:0" the same package
// again through another interface: counting either would count energy twice.
bool IsTopLevelZone(const std::string& name) {
  return name.rfind("intel-rapl:", 0) == 0 && std::count(name.begin(), name.end(), ':') == 1;
}

}  // namespace

std::uint64_t CounterDelta(std::uint64_t before, std::uint64_t after, std::uint64_t range) {
  if (after >= before) return after - before;
  return range >= before ? range - before + after : after;  // a range below `before` is bogus
}

std::optional<RaplCounters> RaplCounters::Open(const std::string& root, std::string* why_not) {
  std::error_code error;
  if (!std::filesystem::is_directory(root, error)) {
    *why_not = "no RAPL energy counters: " + root +
               " does not exist (no powercap on this host; "
               "most virtual machines have none)";
    return std::nullopt;
  }
  std::vector<std::string> zones;
  for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
    const std::string name = entry.path().filename().string();
    if (!IsTopLevelZone(name)) continue;
    if (FirstLine((entry.path() / "name").string()).rfind("package", 0) != 0) continue;
    zones.push_back(entry.path().string());
  }
  if (zones.empty()) {
    *why_not = "no RAPL package zone under " + root;
    return std::nullopt;
  }
  std::sort(zones.begin(), zones.end());
  RaplCounters counters;
  for (const std::string& zone : zones) {
    const std::optional<std::uint64_t> range = ReadCounter(zone + "/max_energy_range_uj", why_not);
    if (!range) return std::nullopt;
    counters.zones_.push_back(zone);
    counters.ranges_uj_.push_back(*range);
  }
  if (!counters.Read(why_not)) return std::nullopt;  // readable at all?
  return counters;
}

std::optional<std::vector<std::uint64_t>> RaplCounters::Read(std::string* why_not) const {
  std::vector<std::uint64_t> values;
  for (const std::string& zone : zones_) {
    const std::optional<std::uint64_t> value = ReadCounter(zone + "/energy_uj", why_not);
    if (!value) return std::nullopt;
    values.push_back(*value);
  }
  return values;
}

double RaplCounters::JoulesBetween(const std::vector<std::uint64_t>& before,
                                   const std::vector<std::uint64_t>& after) const {
  double microjoules = 0;
  for (size_t i = 0; i < zones_.size() && i < before.size() && i < after.size(); ++i) {
    microjoules += static_cast<double>(CounterDelta(before[i], after[i], ranges_uj_[i]));
  }
  return microjoules / kMicrojoulesPerJoule;
}

EnergyMeter::EnergyMeter(const std::string& powercap_root, GpuTelemetry* gpu, std::string gpu_note)
    : rapl_(RaplCounters::Open(powercap_root, &cpu_note_)),
      gpu_(gpu),
      gpu_note_(std::move(gpu_note)) {}

void EnergyMeter::RegionStart() {
  if (rapl_) cpu_start_ = rapl_->Read(&cpu_note_);
  if (gpu_) gpu_start_ = gpu_->EnergyJoules(&gpu_note_);
}

void EnergyMeter::RegionEnd() {
  if (rapl_ && cpu_start_) cpu_end_ = rapl_->Read(&cpu_note_);
  if (gpu_ && gpu_start_) gpu_end_ = gpu_->EnergyJoules(&gpu_note_);
}

nlohmann::json EnergyMeter::Report(double samples, double seconds) const {
  nlohmann::json cpu_j = nullptr, gpu_j = nullptr;
  if (cpu_start_ && cpu_end_) cpu_j = rapl_->JoulesBetween(*cpu_start_, *cpu_end_);
  if (gpu_start_ && gpu_end_) gpu_j = std::max(0.0, *gpu_end_ - *gpu_start_);
  nlohmann::json per_sample = nullptr, watts = nullptr;
  if (!cpu_j.is_null() || !gpu_j.is_null()) {
    const double joules = (cpu_j.is_null() ? 0.0 : cpu_j.get<double>()) +
                          (gpu_j.is_null() ? 0.0 : gpu_j.get<double>());
    if (samples > 0) per_sample = joules / samples;
    if (seconds > 0) watts = joules / seconds;
  }
  std::string note;
  if (cpu_j.is_null()) note = "cpu: " + cpu_note_;
  if (gpu_j.is_null() && !gpu_note_.empty())
    note += (note.empty() ? "" : "; ") + ("gpu: " + gpu_note_);
  return {{"cpu_j", cpu_j},
          {"gpu_j", gpu_j},
          {"j_per_sample", per_sample},
          {"avg_w", watts},
          {"note", note.empty() ? nlohmann::json(nullptr) : nlohmann::json(note)}};
}

}  // namespace benchfleet::worker
