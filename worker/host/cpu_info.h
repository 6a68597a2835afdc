#ifndef BENCHFLEET_WORKER_HOST_CPU_INFO_H_
#define BENCHFLEET_WORKER_HOST_CPU_INFO_H_

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
  std::optional<int> model;        // "model" (not "model name")
  std::optional<double> mhz;       // "cpu MHz"
  std::string vendor_id;           // "GenuineIntel", "AuthenticAMD", ...
  std::string model_name;          // "model name"
  std::set<std::string> flags;     // "flags"
};

// Parses the whole text of /proc/cpuinfo; blocks without a "processor" line
// are skipped. Unparsable numbers leave the field empty.
std::vector<CpuInfoProcessor> ParseCpuInfo(const std::string& text);

// fp32 (and bf16) FLOP per cycle per core, from the micro-architecture.
struct SimdPeak {
  std::string isa;                // widest vector ISA both the core and the flags offer:
                                  // "avx512f" or "avx2+fma"
  int flops_per_cycle_fp32 = 0;   // per core
  std::string microarchitecture;  // "Zen 3", "Skylake-SP", ...
  std::string source;             // which table row or flags, keyed by what: for the reader
  // bf16 GEMM FLOP per cycle per core: AMX's tile multiply (amx_bf16: TDPBF16PS, 1024
  // multiply-adds a cycle, 2048), AVX-512 BF16's dot products (avx512_bf16:
  // VDPBF16PS, two products per fp32 lane, 2 x fp32's), else fp32's (bf16 is then
  // converted to fp32 and can go no faster).
  int flops_per_cycle_bf16 = 0;
  std::string bf16_source;
};

// Looks the core up in a small table keyed by vendor, family and model
// (kMicroArchitectures in cpu_info.cc) and takes its FLOP/cycle for the
// widest ISA the flags advertise, so that a guest without AVX-512 in its
// flags is not credited with it. Flags that only newer parts have outrank the
// model number, which a hypervisor may present from another part (a KVM guest
// of a Sapphire Rapids class host showed model 0xa7, Rocket Lake, with
// amx_tile and avx512_fp16 in its flags): an Intel core with AMX or
// AVX512-FP16 is taken as a Sapphire Rapids class Xeon, two 512-bit FMA units
// (64), whatever its model says, and one such core not in the table is known
// by them. The table knows the FMA units, which flags
// cannot tell: Zen 4 runs AVX-512 as two halves on its 256-bit pipes (32),
// Zen 5 server/desktop, Skylake-SP and later Xeons have two 512-bit FMA
// pipes (64), Haswell through Comet Lake and Zen 2/3 two 256-bit ones (32),
// Zen 1 two 128-bit ones (16), client Ice/Tiger/Rocket Lake one 512-bit one
// (32). nullopt (unknown, not a guess) for any other core, and for a known
// one whose flags lack AVX2+FMA.
std::optional<SimdPeak> Fp32PeakPerCycle(const CpuInfoProcessor& cpu);

// Parses cpufreq's cpuinfo_max_freq (kHz) into MHz; nullopt when not a
// positive number.
std::optional<double> ParseCpufreqKhzAsMhz(const std::string& text);

// The clock a theoretical peak is computed with, and where it came from.
struct ClockReading {
  double mhz = 0;
  std::string source;  // kClockSourceCpufreq or kClockSourceMeasured
};
inline constexpr char kClockSourceCpufreq[] = "cpufreq cpuinfo_max_freq";
inline constexpr char kClockSourceMeasured[] = "measured: dependent add chain";

// cpufreq's maximum when `cpufreq_max_freq_text` (the file's contents) is
// present and valid, else the clock MeasureCoreClockMhz measured, else
// nullopt. /proc/cpuinfo's "cpu MHz" is never used: it is the current clock
// on bare metal and the nominal one in most virtual machines (2096 MHz on a
// Zen 5 guest whose cores sustain well over 3 GHz).
std::optional<ClockReading> ChooseClock(const std::optional<std::string>& cpufreq_max_freq_text,
                                        std::optional<double> measured_mhz);

// A dependent chain of register adds (one cycle each on every x86-64 core)
// timed against the wall clock, fastest of several short runs after a brief
// spin that lets the core reach its clock: the clock this core sustains
// while busy, in MHz. Runs on the calling thread; pin it first. nullopt
// off x86-64 or when the figure is implausible (outside 200-10000 MHz).
std::optional<double> MeasureCoreClockMhz();

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

#endif  // BENCHFLEET_WORKER_HOST_CPU_INFO_H_
