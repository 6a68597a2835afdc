#include "worker/host/calibration.h"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <sstream>
#include <tuple>
#include <utility>

#include "worker/host/cpu_info.h"
#include "worker/host/stream_triad.h"

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
  std::optional<std::string> cpufreq_max_text;  // cpuinfo_max_freq of the first CPU
  std::optional<double> cpuinfo_mhz;            // reported, never used
  std::string flags_isa;                        // WidestFlagsIsa of the first CPU
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
    facts.cpuinfo_mhz = first.mhz;
    facts.flags_isa = WidestFlagsIsa(first.flags);
    facts.cores_all = PhysicalCores(processors, cpus);
  }
  const int cpu = cpus.empty() ? 0 : cpus.front();
  facts.cpufreq_max_text = ReadTextFile(options.sysfs_cpu_root + "/cpu" + std::to_string(cpu) +
                                        "/cpufreq/cpuinfo_max_freq");
  facts.llc_bytes = LastLevelCacheBytes(ReadCacheIndexes(options.sysfs_cpu_root, cpus));
  return facts;
}

json GemmFigure(const GemmPeak& peak, const std::string& label, json& errors) {
  if (!peak.error.empty()) {
    errors.push_back("gemm (" + label + "): " + peak.error);
    return nullptr;
  }
  if (!peak.agreed) {
    errors.push_back("gemm (" + label + "): no two consecutive of " +
                     std::to_string(peak.timed_runs) + " measurements agreed within " +
                     std::to_string(static_cast<int>(kGemmAgreement * 100)) +
                     "%; the host is noisy");
  }
  return peak.best_gflops;
}

// How a GEMM figure was reached, for the reader who doubts it.
json GemmDetail(const GemmPeak& peak) {
  if (!peak.error.empty()) return nullptr;
  return {{"n", peak.n},
          {"runs_gflops", peak.runs_gflops},
          {"agreed", peak.agreed},
          {"best_seconds", peak.best_seconds}};
}

// Why the fp32 figures, which results are divided by, cannot be trusted;
// empty when they can. More threads never make the best GEMM slower on a
// quiet host, so all CPUs below one CPU means something else ran meanwhile.
// Measurements that never agreed are not a reason: the best of them is kept (a VM whose
// GEMM varies by 10% from run to run would otherwise never be calibrated), and the
// disagreement is listed in `errors` and gemm_detail.
std::string RefusalReason(const GemmPeak& all, const GemmPeak& one, int threads_all) {
  if (!all.error.empty() || !one.error.empty()) return "";  // null figures, nothing to store
  if (threads_all > 1 && all.best_gflops < one.best_gflops) {
    return "noisy host: the fp32 GEMM on all " + std::to_string(threads_all) + " CPUs (" +
           std::to_string(all.best_gflops) + " GFLOP/s) was slower than on one (" +
           std::to_string(one.best_gflops) + " GFLOP/s); calibrate again on a quiet host";
  }
  return "";
}

// The theoretical peak of one dtype on one CPU and on all, and whether a measurement
// contradicts it.
struct TheoreticalPeak {
  std::optional<double> one, all;
  std::string contradiction;  // empty unless a measured GEMM beat it
};

// cores x clock x FLOP/cycle, as an upper bound: a GEMM of the dtype measured faster
// on the same CPUs says the FLOP/cycle (its table row or flags) is wrong for this core,
// and the peak is then unknown rather than below what the host did.
TheoreticalPeak Theoretical(std::optional<int> cores_all, std::optional<double> mhz,
                            std::optional<int> flops_per_cycle, bool have_one_cpu,
                            const GemmPeak& measured_one, const GemmPeak& measured_all,
                            const std::string& dtype, const std::string& source) {
  TheoreticalPeak peak;
  peak.all = TheoreticalGflops(cores_all, mhz, flops_per_cycle);
  peak.one =
      TheoreticalGflops(have_one_cpu ? std::optional<int>(1) : std::nullopt, mhz, flops_per_cycle);
  for (const auto& [bound, measured, where] :
       {std::make_tuple(peak.one, &measured_one, "one CPU"),
        std::make_tuple(peak.all, &measured_all, "all CPUs")}) {
    if (!bound || !measured->error.empty() || measured->best_gflops <= *bound) continue;
    peak.contradiction = dtype + " theoretical peak unknown: " + std::to_string(*flops_per_cycle) +
                         " FLOP/cycle (" + source + ") at " +
                         std::to_string(static_cast<int>(std::lround(*mhz))) + " MHz give " +
                         std::to_string(*bound) + " GFLOP/s on " + where + ", below the " +
                         std::to_string(measured->best_gflops) +
                         " GFLOP/s measured there: that entry is wrong for this core";
    break;
  }
  if (!peak.contradiction.empty()) peak.one = peak.all = std::nullopt;
  return peak;
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

json PerformanceEnvironment(const char* const* envp) {
  static constexpr const char* kPrefixes[] = {"OPENBLAS_", "OMP_", "MKL_", "KMP_", "GOMP_"};
  json variables = json::object();
  for (; envp != nullptr && *envp != nullptr; ++envp) {
    const std::string entry = *envp;
    const std::size_t equals = entry.find('=');
    if (equals == std::string::npos) continue;
    const std::string name = entry.substr(0, equals);
    for (const char* prefix : kPrefixes) {
      if (name.rfind(prefix, 0) == 0) variables[name] = entry.substr(equals + 1);
    }
  }
  return variables;
}

namespace {

// Vector ISAs from narrowest to widest.
constexpr const char* kIsaOrder[] = {"sse2", "avx", "avx2", "avx512f"};

int IsaRank(const std::string& isa) {
  for (int i = 0; i < static_cast<int>(std::size(kIsaOrder)); ++i) {
    if (isa == kIsaOrder[i]) return i;
  }
  return -1;
}

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

std::string WidestFlagsIsa(const std::set<std::string>& flags) {
  for (int i = static_cast<int>(std::size(kIsaOrder)) - 1; i >= 0; --i) {
    if (flags.count(kIsaOrder[i]) > 0) return kIsaOrder[i];
  }
  return "";
}

std::optional<BlasKernel> OpenBlasKernel(const std::string& blas_config) {
  // OpenBLAS's x86-64 kernel families (its TARGET / OPENBLAS_CORETYPE names).
  static constexpr std::pair<const char*, const char*> kKernels[] = {{"sapphirerapids", "avx512f"},
                                                                     {"cooperlake", "avx512f"},
                                                                     {"skylakex", "avx512f"},
                                                                     {"haswell", "avx2"},
                                                                     {"zen", "avx2"},
                                                                     {"excavator", "avx"},
                                                                     {"steamroller", "avx"},
                                                                     {"piledriver", "avx"},
                                                                     {"bulldozer", "avx"},
                                                                     {"sandybridge", "avx"},
                                                                     {"nehalem", "sse2"},
                                                                     {"dunnington", "sse2"},
                                                                     {"penryn", "sse2"},
                                                                     {"core2", "sse2"},
                                                                     {"atom", "sse2"},
                                                                     {"barcelona", "sse2"},
                                                                     {"opteron", "sse2"},
                                                                     {"prescott", "sse2"}};
  std::istringstream words(blas_config);
  std::string first;
  words >> first;
  if (Lower(first) != "openblas") return std::nullopt;
  for (std::string word; words >> word;) {
    for (const auto& [name, isa] : kKernels) {
      if (Lower(word) == name) return BlasKernel{word, isa};
    }
  }
  return std::nullopt;
}

std::optional<bool> BlasIsaNarrowerThanCpu(const std::string& blas_isa,
                                           const std::string& cpu_isa) {
  const int blas = IsaRank(blas_isa);
  const int cpu = IsaRank(cpu_isa);
  if (blas < 0 || cpu < 0) return std::nullopt;
  return blas < cpu;
}

GemmPeak RepeatUntilAgreement(const std::function<GemmMeasurement()>& measure) {
  GemmPeak peak;
  double previous = 0;  // last steady measurement's GFLOP/s; 0: none
  while (peak.timed_runs < kGemmMaxMeasurements) {
    const GemmMeasurement m = measure();
    if (!m.error.empty()) {
      peak.error = m.error;
      return peak;
    }
    ++peak.timed_runs;
    if (m.unsteady) {
      peak.runs_gflops.push_back(0);
      previous = 0;
      continue;
    }
    peak.runs_gflops.push_back(m.gflops);
    if (m.gflops > peak.best_gflops) {
      peak.best_gflops = m.gflops;
      peak.best_seconds = m.median_seconds;
    }
    if (previous > 0 &&
        std::abs(m.gflops - previous) <= kGemmAgreement * std::max(m.gflops, previous)) {
      peak.agreed = true;
      break;
    }
    previous = m.gflops;
  }
  if (peak.best_gflops <= 0) peak.error = "no measurement reached a steady regime";
  return peak;
}

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
  const GemmPeak gemm_all = gemm(GemmDtype::kFp32, options.gemm_n, std::max(threads_all, 1));
  const GemmPeak bf16_all = gemm(GemmDtype::kBf16, options.gemm_n, std::max(threads_all, 1));
  pin(one, "the one-CPU GEMM");
  // The clock one busy core sustains, measured before the GEMMs heat it.
  const std::optional<double> measured_mhz =
      options.measure_clock ? options.measure_clock() : std::nullopt;
  const std::optional<ClockReading> clock = ChooseClock(facts.cpufreq_max_text, measured_mhz);
  // Each at a size of its own: one that keeps one CPU busy, not necessarily all of them.
  const GemmPeak gemm_one = gemm(GemmDtype::kFp32, options.gemm_n, 1);
  const GemmPeak bf16_one = gemm(GemmDtype::kBf16, options.gemm_n, 1);
  pin(all, "the all-CPU triad");
  const TriadResult triad_all = RunStreamTriad({array_bytes, all, kTriadDefaultTimedPasses});
  const TriadResult triad_one = RunStreamTriad({array_bytes, one, kTriadDefaultTimedPasses});
  pin(all, "the rest of the process");

  const GpuCalibration gpu = RunGpuCalibrationTool(options.gpu_tool_path);

  const std::optional<double> mhz = clock ? std::optional<double>(clock->mhz) : std::nullopt;
  const std::optional<int> flops_per_cycle =
      facts.simd ? std::optional<int>(facts.simd->flops_per_cycle_fp32) : std::nullopt;
  const std::optional<int> bf16_flops_per_cycle =
      facts.simd ? std::optional<int>(facts.simd->flops_per_cycle_bf16) : std::nullopt;
  const TheoreticalPeak fp32_peak =
      Theoretical(facts.cores_all, mhz, flops_per_cycle, !all.empty(), gemm_one, gemm_all, "fp32",
                  facts.simd ? facts.simd->source : "");
  const TheoreticalPeak bf16_peak =
      Theoretical(facts.cores_all, mhz, bf16_flops_per_cycle, !all.empty(), bf16_one, bf16_all,
                  "bf16", facts.simd ? facts.simd->bf16_source : "");
  for (const TheoreticalPeak* peak : {&fp32_peak, &bf16_peak}) {
    if (!peak->contradiction.empty()) errors.push_back(peak->contradiction);
  }
  json cpu = {
      {"model_name", facts.model_name},
      {"cpus", all},
      {"gemm_n", gemm_all.error.empty() ? gemm_all.n : options.gemm_n},
      {"gemm_gflops_all", GemmFigure(gemm_all, "all CPUs", errors)},
      {"gemm_threads_all", threads_all},
      {"gemm_gflops_1", GemmFigure(gemm_one, "one CPU", errors)},
      {"gemm_bf16_n", bf16_all.error.empty() ? json(bf16_all.n) : json(nullptr)},
      {"gemm_bf16_gflops_all", GemmFigure(bf16_all, "bf16, all CPUs", errors)},
      {"gemm_bf16_gflops_1", GemmFigure(bf16_one, "bf16, one CPU", errors)},
      {"gemm_detail",
       {{"fp32_all", GemmDetail(gemm_all)},
        {"fp32_1", GemmDetail(gemm_one)},
        {"bf16_all", GemmDetail(bf16_all)},
        {"bf16_1", GemmDetail(bf16_one)}}},
      {"stream_triad_gbps_all", TriadFigure(triad_all, "all CPUs", errors)},
      {"stream_triad_gbps_1", TriadFigure(triad_one, "one CPU", errors)},
      {"stream_array_mb", static_cast<double>(array_bytes) / kBytesPerMiB},
      {"llc_mb", facts.llc_bytes ? json(static_cast<double>(*facts.llc_bytes) / kBytesPerMiB)
                                 : json(nullptr)},
      {"cores_all", facts.cores_all ? json(*facts.cores_all) : json(nullptr)},
      {"theoretical_gflops_all", OptionalJson(fp32_peak.all)},
      {"theoretical_gflops_1", OptionalJson(fp32_peak.one)},
      {"theoretical_bf16_gflops_all", OptionalJson(bf16_peak.all)},
      {"theoretical_bf16_gflops_1", OptionalJson(bf16_peak.one)},
      {"theoretical_contradicted",
       {{"fp32", fp32_peak.contradiction.empty() ? json(nullptr) : json(fp32_peak.contradiction)},
        {"bf16", bf16_peak.contradiction.empty() ? json(nullptr) : json(bf16_peak.contradiction)}}},
      {"clock_mhz", OptionalJson(mhz)},
      {"clock_source", clock ? json(clock->source) : json(nullptr)},
      {"clock_measured_mhz", OptionalJson(measured_mhz)},
      {"clock_cpufreq_max_mhz",
       OptionalJson(facts.cpufreq_max_text ? ParseCpufreqKhzAsMhz(*facts.cpufreq_max_text)
                                           : std::nullopt)},
      {"clock_cpuinfo_mhz", OptionalJson(facts.cpuinfo_mhz)},
      {"cores_source",
       facts.cores_all ? json("/proc/cpuinfo: distinct (physical id, core id)") : json(nullptr)},
      {"microarchitecture", facts.simd ? json(facts.simd->microarchitecture) : json(nullptr)},
      {"flops_per_cycle_source", facts.simd ? json(facts.simd->source) : json(nullptr)},
      {"flops_per_cycle_fp32", flops_per_cycle ? json(*flops_per_cycle) : json(nullptr)},
      {"flops_per_cycle_bf16", bf16_flops_per_cycle ? json(*bf16_flops_per_cycle) : json(nullptr)},
      {"flops_per_cycle_bf16_source", facts.simd ? json(facts.simd->bf16_source) : json(nullptr)},
      {"isa", facts.simd ? json(facts.simd->isa) : json(nullptr)},
      {"flags_isa", facts.flags_isa.empty() ? json(nullptr) : json(facts.flags_isa)}};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  json calibration = {{"cpu", cpu},
                      {"gpus", gpu.gpus},
                      {"gpu_note", gpu.note},
                      {"errors", errors},
                      {"measured_at", Iso8601Utc(started_at)},
                      {"seconds", seconds}};
  if (std::string refusal = RefusalReason(gemm_all, gemm_one, threads_all); !refusal.empty()) {
    calibration["ok"] = false;
    calibration["error"] = refusal;
  }
  return calibration;
}

}  // namespace benchfleet::worker
