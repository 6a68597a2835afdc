#include "worker/calibration.h"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "worker/cpu_info.h"
#include "worker/stream_triad.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

json OptionalJson(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

// Quotes `text` for /bin/sh.
std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// The CPU part that needs no measurement: what the ISA, clock and cores
// allow in theory, and the cache the triad must outgrow.
struct CpuFacts {
  std::string model_name;
  std::optional<SimdPeak> simd;
  std::optional<ClockReading> clock;
  std::optional<int> cores_all;
  std::optional<std::int64_t> llc_bytes;
};

CpuFacts ReadCpuFacts(const CalibrationOptions& options, const std::vector<int>& cpus) {
  CpuFacts facts;
  const std::vector<CpuInfoProcessor> processors =
      ParseCpuInfo(ReadTextFile(options.proc_cpuinfo_path).value_or(""));
  if (!processors.empty()) {
    const CpuInfoProcessor& first = processors.front();
    facts.model_name = first.model_name;
    facts.simd = Fp32PeakPerCycle(first);
    const int cpu = cpus.empty() ? 0 : cpus.front();
    facts.clock = ChooseClock(ReadTextFile(options.sysfs_cpu_root + "/cpu" + std::to_string(cpu) +
                                           "/cpufreq/cpuinfo_max_freq"),
                              first);
    facts.cores_all = PhysicalCores(processors, cpus);
  }
  facts.llc_bytes = LastLevelCacheBytes(ReadCacheIndexes(options.sysfs_cpu_root, cpus));
  return facts;
}

json GemmFigure(const GemmPeak& peak, const std::string& label, json& errors) {
  if (!peak.error.empty()) {
    errors.push_back("gemm (" + label + "): " + peak.error);
    return nullptr;
  }
  return peak.best_gflops;
}

json TriadFigure(const TriadResult& triad, const std::string& label, json& errors) {
  if (!triad.error.empty()) {
    errors.push_back("stream triad (" + label + "): " + triad.error);
    return nullptr;
  }
  if (!triad.verified) {
    errors.push_back("stream triad (" + label + "): wrong results; figure withheld");
    return nullptr;
  }
  if (!triad.pinned) errors.push_back("stream triad (" + label + "): a thread could not be pinned");
  return triad.best_gbps;
}

}  // namespace

std::int64_t TriadArrayBytes(std::optional<std::int64_t> llc_bytes) {
  const std::int64_t wanted =
      llc_bytes ? std::max(kTriadArrayToCacheRatio * *llc_bytes, kMinTriadArrayBytes)
                : kTriadArrayBytesWhenCacheUnknown;
  return std::min(wanted, kMaxTriadArrayBytes);
}

bool PinAllThreads(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return sched_setaffinity(0, sizeof(set), &set) == 0;
  bool ok = true;
  while (const dirent* entry = readdir(tasks)) {
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;  // "." and ".."
    // A thread that exits meanwhile (ESRCH) needs no pinning.
    if (sched_setaffinity(static_cast<pid_t>(tid), sizeof(set), &set) != 0 && errno != ESRCH) {
      ok = false;
    }
  }
  closedir(tasks);
  return ok;
}

GpuCalibration ParseGpuCalibrationOutput(int wait_status, const std::string& output) {
  GpuCalibration gpu;
  const std::string program = kGpuCalibrateProgram;
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    gpu.note = program + " failed (" +
               (WIFEXITED(wait_status) ? "exit status " + std::to_string(WEXITSTATUS(wait_status))
                                       : std::string("killed by a signal")) +
               ")";
    return gpu;
  }
  const json parsed = json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("gpus") ||
      !parsed.at("gpus").is_array()) {
    gpu.note = program + " printed no JSON object with a \"gpus\" array";
    return gpu;
  }
  gpu.gpus = parsed.at("gpus");
  if (parsed.contains("note") && parsed.at("note").is_string()) gpu.note = parsed.at("note");
  return gpu;
}

GpuCalibration RunGpuCalibrationTool(const std::string& tool_path) {
  GpuCalibration gpu;
  struct stat info {};
  if (tool_path.empty() || stat(tool_path.c_str(), &info) != 0) {
    gpu.note = std::string(kGpuCalibrateProgram) + " not found" +
               (tool_path.empty() ? std::string() : " at " + tool_path) +
               "; it is built only where the CUDA Toolkit is installed";
    return gpu;
  }
  // Its diagnostics go to our stderr; only stdout carries the JSON.
  FILE* pipe = popen((ShellQuote(tool_path) + " </dev/null").c_str(), "r");
  if (pipe == nullptr) {
    gpu.note = "cannot run " + tool_path + ": " + std::strerror(errno);
    return gpu;
  }
  std::string output;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    output.append(buffer.data(), n);
  return ParseGpuCalibrationOutput(pclose(pipe), output);
}

std::string PathNextToExecutable(const std::string& program) {
  std::array<char, 4096> path{};
  const ssize_t length = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (length <= 0) return "";
  std::string self(path.data(), static_cast<std::size_t>(length));
  const std::size_t slash = self.rfind('/');
  if (slash == std::string::npos) return "";
  return self.substr(0, slash + 1) + program;
}

std::string Iso8601Utc(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::array<char, 32> text{};
  std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text.data();
}

json RunCalibration(const CalibrationOptions& options, const GemmMeasure& gemm) {
  const auto started_at = std::chrono::system_clock::now();
  const auto started = std::chrono::steady_clock::now();
  json errors = json::array();
  const std::vector<int>& all = options.cpus;
  if (all.empty()) errors.push_back("no CPUs to calibrate on (sched_getaffinity failed?)");
  const std::vector<int> one = all.empty() ? all : std::vector<int>{all.front()};
  const auto threads_all = static_cast<int>(all.size());

  const CpuFacts facts = ReadCpuFacts(options, all);
  const std::int64_t array_bytes =
      options.triad_array_bytes > 0 ? options.triad_array_bytes : TriadArrayBytes(facts.llc_bytes);

  auto pin = [&](const std::vector<int>& cpus, const char* label) {
    if (!cpus.empty() && !PinAllThreads(cpus)) {
      errors.push_back(std::string("could not pin every thread for ") + label);
    }
  };
  pin(all, "the all-CPU GEMM");
  const GemmPeak gemm_all = gemm(options.gemm_n, std::max(threads_all, 1));
  pin(one, "the one-CPU GEMM");
  const GemmPeak gemm_one = gemm(options.gemm_n, 1);
  pin(all, "the all-CPU triad");
  const TriadResult triad_all = RunStreamTriad({array_bytes, all, kTriadDefaultTimedPasses});
  const TriadResult triad_one = RunStreamTriad({array_bytes, one, kTriadDefaultTimedPasses});
  pin(all, "the rest of the process");

  const GpuCalibration gpu = RunGpuCalibrationTool(options.gpu_tool_path);

  const std::optional<double> mhz =
      facts.clock ? std::optional<double>(facts.clock->mhz) : std::nullopt;
  const std::optional<int> flops_per_cycle =
      facts.simd ? std::optional<int>(facts.simd->flops_per_cycle_fp32) : std::nullopt;
  json cpu = {
      {"model_name", facts.model_name},
      {"cpus", all},
      {"gemm_n", options.gemm_n},
      {"gemm_gflops_all", GemmFigure(gemm_all, "all CPUs", errors)},
      {"gemm_threads_all", threads_all},
      {"gemm_gflops_1", GemmFigure(gemm_one, "one CPU", errors)},
      {"stream_triad_gbps_all", TriadFigure(triad_all, "all CPUs", errors)},
      {"stream_triad_gbps_1", TriadFigure(triad_one, "one CPU", errors)},
      {"stream_array_mb", static_cast<double>(array_bytes) / kBytesPerMiB},
      {"llc_mb", facts.llc_bytes ? json(static_cast<double>(*facts.llc_bytes) / kBytesPerMiB)
                                 : json(nullptr)},
      {"cores_all", facts.cores_all ? json(*facts.cores_all) : json(nullptr)},
      {"theoretical_gflops_all",
       OptionalJson(TheoreticalGflops(facts.cores_all, mhz, flops_per_cycle))},
      {"theoretical_gflops_1",
       OptionalJson(TheoreticalGflops(all.empty() ? std::nullopt : std::optional<int>(1), mhz,
                                      flops_per_cycle))},
      {"clock_mhz", OptionalJson(mhz)},
      {"clock_source", facts.clock ? json(facts.clock->source) : json(nullptr)},
      {"flops_per_cycle_fp32", flops_per_cycle ? json(*flops_per_cycle) : json(nullptr)},
      {"isa", facts.simd ? json(facts.simd->isa) : json(nullptr)}};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return {{"cpu", cpu},
          {"gpus", gpu.gpus},
          {"gpu_note", gpu.note},
          {"errors", errors},
          {"measured_at", Iso8601Utc(started_at)},
          {"seconds", seconds}};
}

}  // namespace benchfleet::worker
