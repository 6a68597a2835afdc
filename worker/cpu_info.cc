#include "worker/cpu_info.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

namespace benchfleet::worker {
namespace {

// AMD's family number for Zen 3 and Zen 4 (only Zen 4 has AVX-512).
constexpr int kAmdFamilyZen4 = 0x19;

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

std::optional<SimdPeak> Fp32PeakPerCycle(const CpuInfoProcessor& cpu) {
  const auto has = [&](const char* flag) { return cpu.flags.count(flag) > 0; };
  const bool zen4 = cpu.vendor_id == "AuthenticAMD" && cpu.family == kAmdFamilyZen4;
  if (has("avx512f") && !zen4) return SimdPeak{"avx512f", 64};
  if (has("avx2") && has("fma")) return SimdPeak{"avx2+fma", 32};
  if (has("avx")) return SimdPeak{"avx", 16};
  if (has("sse2")) return SimdPeak{"sse2", 8};
  return std::nullopt;
}

std::optional<double> ParseCpufreqKhzAsMhz(const std::string& text) {
  const auto khz = ParseInteger(text);
  if (!khz || *khz <= 0) return std::nullopt;
  return static_cast<double>(*khz) / 1000.0;
}

std::optional<ClockReading> ChooseClock(const std::optional<std::string>& cpufreq_max_freq_text,
                                        const CpuInfoProcessor& cpu) {
  if (cpufreq_max_freq_text) {
    if (auto mhz = ParseCpufreqKhzAsMhz(*cpufreq_max_freq_text)) {
      return ClockReading{*mhz, kClockSourceCpufreq};
    }
  }
  if (cpu.mhz && *cpu.mhz > 0) return ClockReading{*cpu.mhz, kClockSourceCpuinfo};
  return std::nullopt;
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
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

}  // namespace benchfleet::worker
