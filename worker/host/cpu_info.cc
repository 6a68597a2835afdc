#include "worker/host/cpu_info.h"

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "common/files.h"

namespace benchfleet::worker {
namespace {

// A range of models of one vendor and family, and the fp32 FLOP per cycle
// per core of their vector FMA units (0: the core lacks that ISA).
struct MicroArchitecture {
  const char* vendor;
  int family;
  int model_first;
  int model_last;
  const char* name;
  int flops_avx512;  // with AVX-512
  int flops_avx2;    // with AVX2 + FMA
};

// Sources: Intel's optimization reference manual and AMD's software
// optimization guides (FMA pipes and their width per core), models from
// the kernel's arch/x86/include/asm/intel-family.h and AMD's revision guides.
// Skylake-SP/Cascade Lake lists the two-FMA SKUs (Gold 6xxx, Platinum); the
// Bronze, Silver and some Gold 5xxx parts have one 512-bit FMA unit and are
// overstated 2x: their model number cannot tell them apart.
constexpr MicroArchitecture kMicroArchitectures[] = {
    {"GenuineIntel", 6, 0x3c, 0x3c, "Haswell", 0, 32},
    {"GenuineIntel", 6, 0x3f, 0x3f, "Haswell", 0, 32},
    {"GenuineIntel", 6, 0x45, 0x46, "Haswell", 0, 32},
    {"GenuineIntel", 6, 0x3d, 0x3d, "Broadwell", 0, 32},
    {"GenuineIntel", 6, 0x47, 0x47, "Broadwell", 0, 32},
    {"GenuineIntel", 6, 0x4f, 0x4f, "Broadwell", 0, 32},
    {"GenuineIntel", 6, 0x56, 0x56, "Broadwell", 0, 32},
    {"GenuineIntel", 6, 0x4e, 0x4e, "Skylake", 0, 32},
    {"GenuineIntel", 6, 0x5e, 0x5e, "Skylake", 0, 32},
    {"GenuineIntel", 6, 0x8e, 0x8e, "Kaby/Coffee Lake", 0, 32},
    {"GenuineIntel", 6, 0x9e, 0x9e, "Kaby/Coffee Lake", 0, 32},
    {"GenuineIntel", 6, 0xa5, 0xa6, "Comet Lake", 0, 32},
    {"GenuineIntel", 6, 0x55, 0x55, "Skylake-SP/Cascade Lake", 64, 32},
    {"GenuineIntel", 6, 0x6a, 0x6a, "Ice Lake-SP", 64, 32},
    {"GenuineIntel", 6, 0x6c, 0x6c, "Ice Lake-SP", 64, 32},
    {"GenuineIntel", 6, 0x8f, 0x8f, "Sapphire Rapids", 64, 32},
    {"GenuineIntel", 6, 0xcf, 0xcf, "Emerald Rapids", 64, 32},
    {"GenuineIntel", 6, 0xad, 0xae, "Granite Rapids", 64, 32},
    {"GenuineIntel", 6, 0x7d, 0x7e, "Ice Lake (client)", 32, 32},
    {"GenuineIntel", 6, 0x8c, 0x8d, "Tiger Lake", 32, 32},
    {"GenuineIntel", 6, 0xa7, 0xa7, "Rocket Lake", 32, 32},
    {"AuthenticAMD", 0x17, 0x00, 0x2f, "Zen/Zen+", 0, 16},
    {"AuthenticAMD", 0x17, 0x30, 0xaf, "Zen 2", 0, 32},
    {"AuthenticAMD", 0x19, 0x00, 0x0f, "Zen 3", 0, 32},
    {"AuthenticAMD", 0x19, 0x10, 0x1f, "Zen 4", 32, 32},
    {"AuthenticAMD", 0x19, 0x20, 0x5f, "Zen 3", 0, 32},
    {"AuthenticAMD", 0x19, 0x60, 0x7f, "Zen 4", 32, 32},
    {"AuthenticAMD", 0x19, 0xa0, 0xaf, "Zen 4", 32, 32},
    {"AuthenticAMD", 0x1a, 0x00, 0x1f, "Zen 5", 64, 32},
    {"AuthenticAMD", 0x1a, 0x20, 0x2f, "Zen 5 (mobile, 256-bit datapath)", 32, 32},
    {"AuthenticAMD", 0x1a, 0x40, 0x4f, "Zen 5", 64, 32},
};

std::string Hex(int value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), kDigits[value % 16]);
    value /= 16;
  } while (value > 0);
  return "0x" + text;
}

std::string Trim(const std::string& text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

std::optional<long long> ParseInteger(const std::string& text) {
  const std::string t = Trim(text);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(t.c_str(), &end, 10);
  if (end == t.c_str() || *end != '\0') return std::nullopt;
  return value;
}

std::optional<double> ParseNumber(const std::string& text) {
  const std::string t = Trim(text);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end != '\0') return std::nullopt;
  return value;
}

std::optional<int> ParseInt(const std::string& text) {
  const auto value = ParseInteger(text);
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

void SetField(CpuInfoProcessor& cpu, const std::string& key, const std::string& value) {
  if (key == "processor") {
    cpu.processor = ParseInt(value).value_or(-1);
  } else if (key == "physical id") {
    cpu.physical_id = ParseInt(value);
  } else if (key == "core id") {
    cpu.core_id = ParseInt(value);
  } else if (key == "cpu family") {
    cpu.family = ParseInt(value);
  } else if (key == "model") {
    cpu.model = ParseInt(value);
  } else if (key == "cpu MHz") {
    cpu.mhz = ParseNumber(value);
  } else if (key == "vendor_id") {
    cpu.vendor_id = value;
  } else if (key == "model name") {
    cpu.model_name = value;
  } else if (key == "flags") {
    std::istringstream words(value);
    for (std::string flag; words >> flag;) cpu.flags.insert(flag);
  }
}

}  // namespace

std::vector<CpuInfoProcessor> ParseCpuInfo(const std::string& text) {
  std::vector<CpuInfoProcessor> processors;
  std::optional<CpuInfoProcessor> current;
  auto flush = [&] {
    if (current && current->processor >= 0) processors.push_back(std::move(*current));
    current.reset();
  };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t colon = line.find(':');
    if (Trim(line).empty() || colon == std::string::npos) {
      if (Trim(line).empty()) flush();
      continue;
    }
    const std::string key = Trim(line.substr(0, colon));
    const std::string value = Trim(line.substr(colon + 1));
    if (key == "processor") flush();
    if (!current) current.emplace();
    SetField(*current, key, value);
  }
  flush();
  return processors;
}

namespace {

// Flags only parts newer than most of the table have, and what they say of the core:
// AMX and AVX512-FP16 came with Sapphire Rapids (Golden Cove server cores, two 512-bit
// FMA units). Checked before the model number, which a hypervisor may not pass on as
// it is.
std::optional<SimdPeak> PeakFromNewerFlags(const CpuInfoProcessor& cpu) {
  const auto has = [&](const char* flag) { return cpu.flags.count(flag) > 0; };
  if (cpu.vendor_id != "GenuineIntel" || !has("avx512f")) return std::nullopt;
  for (const char* flag : {"amx_tile", "amx_bf16", "avx512_fp16"}) {
    if (has(flag)) {
      return SimdPeak{"avx512f",
                      64,
                      "Sapphire Rapids class",
                      std::string("flags: ") + flag +
                          " (Sapphire Rapids or later: two 512-bit FMA units), avx512f",
                      0,
                      ""};
    }
  }
  return std::nullopt;
}

void AddBf16Peak(const CpuInfoProcessor& cpu, SimdPeak& peak) {
  if (cpu.flags.count("amx_bf16") > 0) {
    peak.flops_per_cycle_bf16 = 2048;
    peak.bf16_source = "flags: amx_bf16 (TDPBF16PS: 1024 multiply-adds a cycle)";
  } else if (cpu.flags.count("avx512_bf16") > 0) {
    peak.flops_per_cycle_bf16 = 2 * peak.flops_per_cycle_fp32;
    peak.bf16_source = "flags: avx512_bf16 (VDPBF16PS: two products per fp32 lane), 2 x fp32";
  } else {
    peak.flops_per_cycle_bf16 = peak.flops_per_cycle_fp32;
    peak.bf16_source = "no native bf16 in the flags: at most the fp32 rate";
  }
}

std::optional<SimdPeak> PeakFromTable(const CpuInfoProcessor& cpu) {
  if (!cpu.family || !cpu.model) return std::nullopt;
  const auto has = [&](const char* flag) { return cpu.flags.count(flag) > 0; };
  for (const MicroArchitecture& arch : kMicroArchitectures) {
    if (cpu.vendor_id != arch.vendor || *cpu.family != arch.family ||
        *cpu.model < arch.model_first || *cpu.model > arch.model_last) {
      continue;
    }
    const std::string key = cpu.vendor_id + " family " + Hex(*cpu.family) + " model " +
                            Hex(*cpu.model) + " = " + arch.name;
    if (arch.flops_avx512 > 0 && has("avx512f")) {
      return SimdPeak{"avx512f", arch.flops_avx512, arch.name, "table: " + key + ", avx512f", 0,
                      ""};
    }
    if (has("avx2") && has("fma")) {
      return SimdPeak{"avx2+fma", arch.flops_avx2, arch.name, "table: " + key + ", avx2+fma", 0,
                      ""};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<SimdPeak> Fp32PeakPerCycle(const CpuInfoProcessor& cpu) {
  std::optional<SimdPeak> peak = PeakFromTable(cpu);
  if (std::optional<SimdPeak> newer = PeakFromNewerFlags(cpu);
      newer && (!peak || newer->flops_per_cycle_fp32 > peak->flops_per_cycle_fp32)) {
    if (peak) {
      newer->source += "; they outrank the " + peak->source.substr(std::string("table: ").size()) +
                       " of the model number (" + std::to_string(peak->flops_per_cycle_fp32) + ")";
    }
    peak = std::move(newer);
  }
  if (peak) AddBf16Peak(cpu, *peak);
  return peak;
}

std::optional<double> ParseCpufreqKhzAsMhz(const std::string& text) {
  const auto khz = ParseInteger(text);
  if (!khz || *khz <= 0) return std::nullopt;
  return static_cast<double>(*khz) / 1000.0;
}

std::optional<ClockReading> ChooseClock(const std::optional<std::string>& cpufreq_max_freq_text,
                                        std::optional<double> measured_mhz) {
  if (cpufreq_max_freq_text) {
    if (auto mhz = ParseCpufreqKhzAsMhz(*cpufreq_max_freq_text)) {
      return ClockReading{*mhz, kClockSourceCpufreq};
    }
  }
  if (measured_mhz && *measured_mhz > 0) return ClockReading{*measured_mhz, kClockSourceMeasured};
  return std::nullopt;
}

std::optional<double> MeasureCoreClockMhz() {
#if defined(__x86_64__)
  // 64 dependent adds per loop iteration: 64 cycles, the loop's own
  // increment and branch run beside them. Register operands, because some
  // cores (Golden Cove) execute small immediate adds at rename, in no time.
  constexpr int kAddsPerIteration = 64;
  constexpr std::uint64_t kIterations = 50'000;  // ~1 ms at 3 GHz
  constexpr int kRuns = 30;
  constexpr double kSpinSeconds = 0.05;  // lets an idle core ramp its clock up
  using Clock = std::chrono::steady_clock;
  auto run = [] {
    std::uint64_t value = 0;
    std::uint64_t one = 1;
    const auto start = Clock::now();
    for (std::uint64_t i = 0; i < kIterations; ++i) {
      asm volatile(".rept 64\n\taddq %1, %0\n\t.endr" : "+r"(value) : "r"(one));
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const auto spin_until = Clock::now() + std::chrono::duration<double>(kSpinSeconds);
  while (Clock::now() < spin_until) run();
  double fastest = 0;
  for (int i = 0; i < kRuns; ++i) {
    const double seconds = run();
    if (i == 0 || seconds < fastest) fastest = seconds;
  }
  if (fastest <= 0) return std::nullopt;
  const double mhz = static_cast<double>(kIterations) * kAddsPerIteration / fastest / 1e6;
  if (mhz < 200 || mhz > 10000) return std::nullopt;
  return mhz;
#else
  return std::nullopt;
#endif
}

std::optional<int> PhysicalCores(const std::vector<CpuInfoProcessor>& processors,
                                 const std::vector<int>& cpus) {
  if (cpus.empty()) return std::nullopt;
  std::map<int, const CpuInfoProcessor*> by_id;
  for (const auto& p : processors) by_id[p.processor] = &p;
  std::set<std::pair<int, int>> cores;
  for (int cpu : cpus) {
    auto it = by_id.find(cpu);
    if (it == by_id.end() || !it->second->physical_id || !it->second->core_id) {
      return std::nullopt;
    }
    cores.emplace(*it->second->physical_id, *it->second->core_id);
  }
  return static_cast<int>(cores.size());
}

std::optional<double> TheoreticalGflops(std::optional<int> cores, std::optional<double> mhz,
                                        std::optional<int> flops_per_cycle) {
  if (!cores || !mhz || !flops_per_cycle || *cores <= 0 || *mhz <= 0 || *flops_per_cycle <= 0) {
    return std::nullopt;
  }
  return static_cast<double>(*cores) * *mhz * static_cast<double>(*flops_per_cycle) / 1000.0;
}

std::optional<std::int64_t> ParseCacheSize(const std::string& text) {
  std::string t = Trim(text);
  std::int64_t multiplier = 1;
  if (!t.empty()) {
    switch (std::toupper(static_cast<unsigned char>(t.back()))) {
      case 'K':
        multiplier = std::int64_t{1} << 10;
        t.pop_back();
        break;
      case 'M':
        multiplier = std::int64_t{1} << 20;
        t.pop_back();
        break;
      case 'G':
        multiplier = std::int64_t{1} << 30;
        t.pop_back();
        break;
      default:
        break;
    }
  }
  const auto value = ParseInteger(t);
  if (!value || *value <= 0) return std::nullopt;
  return *value * multiplier;
}

std::optional<std::int64_t> LastLevelCacheBytes(const std::vector<CacheIndex>& caches) {
  int last_level = 0;
  for (const auto& c : caches) {
    if (c.type != "Instruction" && c.level > last_level) last_level = c.level;
  }
  if (last_level == 0) return std::nullopt;
  std::map<std::string, std::int64_t> instances;
  for (const auto& c : caches) {
    if (c.type != "Instruction" && c.level == last_level) instances[c.shared_cpu_list] = c.bytes;
  }
  std::int64_t total = 0;
  for (const auto& [shared, bytes] : instances) total += bytes;
  return total;
}

std::vector<CacheIndex> ReadCacheIndexes(const std::string& cpu_root,
                                         const std::vector<int>& cpus) {
  // Index directories are numbered densely from 0; a gap ends the list.
  constexpr int kMaxCacheIndexes = 16;
  std::vector<CacheIndex> caches;
  for (int cpu : cpus) {
    const std::string dir = cpu_root + "/cpu" + std::to_string(cpu) + "/cache/index";
    for (int i = 0; i < kMaxCacheIndexes; ++i) {
      const std::string prefix = dir + std::to_string(i) + "/";
      const auto level = ReadTextFile(prefix + "level");
      const auto type = ReadTextFile(prefix + "type");
      const auto size = ReadTextFile(prefix + "size");
      const auto shared = ReadTextFile(prefix + "shared_cpu_list");
      if (!level || !type || !size) break;
      const auto level_value = ParseInt(*level);
      const auto bytes = ParseCacheSize(*size);
      if (!level_value || !bytes) continue;
      caches.push_back({*level_value, Trim(*type), *bytes,
                        shared ? Trim(*shared) : "cpu" + std::to_string(cpu)});
    }
  }
  return caches;
}

std::optional<std::string> ReadTextFile(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

}  // namespace benchfleet::worker
