#ifndef BENCHFLEET_WORKER_CPU_INFO_H_
#define BENCHFLEET_WORKER_CPU_INFO_H_

// What the kernel says about the CPU — /proc/cpuinfo and sysfs — turned into
// the inputs of a theoretical fp32 peak and the size of the last-level cache.
// Torch-free; the parsers take text so that tests can feed them any host.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace benchfleet::worker {

// One "processor" block of /proc/cpuinfo.
struct CpuInfoProcessor {
  int processor = -1;              // logical CPU id
  std::optional<int> physical_id;  // socket
  std::optional<int> core_id;      // core within the socket
  std::optional<int> family;       // "cpu family"
  std::optional<double> mhz;       // "cpu MHz"
  std::string vendor_id;           // "GenuineIntel", "AuthenticAMD", ...
  std::string model_name;          // "model name"
  std::set<std::string> flags;     // "flags"
};

// Parses the whole text of /proc/cpuinfo; blocks without a "processor" line
// are skipped. Unparsable numbers leave the field empty.
std::vector<CpuInfoProcessor> ParseCpuInfo(const std::string& text);

// The widest fp32 vector FMA capability the flags advertise.
struct SimdPeak {
  std::string isa;               // "avx512f", "avx2+fma", "avx", "sse2"
  int flops_per_cycle_fp32 = 0;  // per core
};

// fp32 FLOP per cycle per core from the ISA flags, assuming two vector FMA
// (or, for AVX/SSE2, one add and one multiply) pipes per core, as on server
// cores since Haswell / Zen 2:
//   avx512f  -> 2 pipes x 16 lanes x 2 (FMA) = 64
//   avx2+fma -> 2 pipes x  8 lanes x 2       = 32
//   avx      -> (1 add + 1 mul) x 8 lanes    = 16
//   sse2     -> (1 add + 1 mul) x 4 lanes    =  8
// One known exception is applied: AMD family 19h with AVX-512 (Zen 4)
// executes a 512-bit operation as two halves on its 256-bit pipes (AMD's
// Zen 4 software optimization guide), so it counts as avx2+fma. Cores with
// a single 512-bit FMA unit (some Xeon Bronze/Silver, client parts) or
// 128-bit pipes (Zen 1) cannot be told apart by flags and are overstated by
// 2x. nullopt when no known flag is present.
std::optional<SimdPeak> Fp32PeakPerCycle(const CpuInfoProcessor& cpu);

// Parses cpufreq's cpuinfo_max_freq (kHz) into MHz; nullopt when not a
// positive number.
std::optional<double> ParseCpufreqKhzAsMhz(const std::string& text);

// The clock a theoretical peak is computed with, and where it came from.
struct ClockReading {
  double mhz = 0;
  std::string source;  // kClockSourceCpufreq or kClockSourceCpuinfo
};
inline constexpr char kClockSourceCpufreq[] = "cpufreq cpuinfo_max_freq";
inline constexpr char kClockSourceCpuinfo[] = "/proc/cpuinfo cpu MHz";

// cpufreq's maximum when `cpufreq_max_freq_text` (the file's contents) is
// present and valid, else the "cpu MHz" of `cpu`, else nullopt. "cpu MHz" is
// the current clock on bare metal and the nominal (not boost) clock in most
// virtual machines.
std::optional<ClockReading> ChooseClock(const std::optional<std::string>& cpufreq_max_freq_text,
                                        const CpuInfoProcessor& cpu);

// Distinct physical cores (socket, core id) among `cpus`; nullopt when a CPU
// in `cpus` is missing from `processors` or lacks physical/core ids, so that
// SMT siblings are never counted as cores by guess.
std::optional<int> PhysicalCores(const std::vector<CpuInfoProcessor>& processors,
                                 const std::vector<int>& cpus);

// cores x MHz x FLOP/cycle, in GFLOP/s; nullopt when any input is unknown.
std::optional<double> TheoreticalGflops(std::optional<int> cores, std::optional<double> mhz,
                                        std::optional<int> flops_per_cycle);

// Parses a sysfs cache "size" ("32768K", "1M", "512") into bytes.
std::optional<std::int64_t> ParseCacheSize(const std::string& text);

// One cache of one CPU, as sysfs lists it under cpuN/cache/indexM.
struct CacheIndex {
  int level = 0;
  std::string type;  // "Data", "Instruction", "Unified"
  std::int64_t bytes = 0;
  std::string shared_cpu_list;  // identifies the cache instance
};

// Total bytes of the last-level cache instances in `caches` (highest level
// among data and unified caches; one instance per distinct
// shared_cpu_list). nullopt when there is none.
std::optional<std::int64_t> LastLevelCacheBytes(const std::vector<CacheIndex>& caches);

// Reads every cache index of each CPU in `cpus` under `cpu_root` (normally
// /sys/devices/system/cpu). Unreadable entries are skipped.
std::vector<CacheIndex> ReadCacheIndexes(const std::string& cpu_root, const std::vector<int>& cpus);

// Contents of a small text file, nullopt when it cannot be read.
std::optional<std::string> ReadTextFile(const std::string& path);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_CPU_INFO_H_
