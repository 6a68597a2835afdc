#ifndef BENCHFLEET_WORKER_CALIBRATION_H_
#define BENCHFLEET_WORKER_CALIBRATION_H_

// Host calibration: what this host can do at best — fp32 GEMM peak, memory
// bandwidth, theoretical peak, and the GPUs' figures from
// benchfleet-gpu-calibrate — so that a result can be read as a fraction of
// it (docs/calibration.md). Torch-free: the GEMM is passed in.

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace benchfleet::worker {

// N of the N x N x N fp32 GEMM: large enough that every BLAS reaches its
// plateau, small enough (48 MiB, ~0.1 s per product on 2 cores) to repeat.
inline constexpr std::int64_t kDefaultCalibrationGemmN = 2048;

// Triad arrays are this many times the last-level cache (all instances the
// allowed CPUs use together), so that at most a quarter of each pass could
// hit in cache ...
inline constexpr std::int64_t kTriadArrayToCacheRatio = 4;
// ... and never smaller than this ...
inline constexpr std::int64_t kMinTriadArrayBytes = std::int64_t{32} << 20;
// ... nor, when sysfs does not say (virtual machines often hide it), smaller
// than 4 x 32 MiB, 32 MiB being the L3 one core complex of current server
// parts (Zen 3-5, without stacked cache) shares ...
inline constexpr std::int64_t kTriadArrayBytesWhenCacheUnknown = std::int64_t{128} << 20;
// ... nor larger than this, which keeps the three arrays within 3 GiB.
inline constexpr std::int64_t kMaxTriadArrayBytes = std::int64_t{1} << 30;

// File name of the GPU calibration program, installed next to the worker.
inline constexpr char kGpuCalibrateProgram[] = "benchfleet-gpu-calibrate";

// Best GEMM rate found by a GemmMeasure.
struct GemmPeak {
  double best_gflops = 0;   // 2 N^3 / best_seconds / 1e9
  double best_seconds = 0;  // fastest timed product
  int timed_runs = 0;
  std::string error;  // non-empty when nothing was measured
};

// Measures N x N fp32 GEMM with `threads` threads for every pool (intra-op
// and BLAS) on the CPUs the process is currently pinned to.
using GemmMeasure = std::function<GemmPeak(std::int64_t n, int threads)>;

struct CalibrationOptions {
  // CPUs this process may run on (normally sched_getaffinity's); "all" in
  // the figures' names means these, "1" the first of them.
  std::vector<int> cpus;
  std::int64_t gemm_n = kDefaultCalibrationGemmN;
  // Program printing {"gpus": [...]} (benchfleet-gpu-calibrate); when the
  // file does not exist, "gpus" is [] and "gpu_note" says why.
  std::string gpu_tool_path;
  // Bytes per triad array; 0 chooses them from the cache size.
  std::int64_t triad_array_bytes = 0;
  std::string proc_cpuinfo_path = "/proc/cpuinfo";
  std::string sysfs_cpu_root = "/sys/devices/system/cpu";
};

// Runs the calibration and returns its JSON (schemas/worker.md, --calibrate):
// GEMM on all allowed CPUs, then on the first one alone; triad the same way;
// then the GPU tool. Every thread of the process is pinned for each phase
// and re-pinned to all allowed CPUs at the end. A phase that fails leaves
// its figure null and adds a line to "errors".
nlohmann::json RunCalibration(const CalibrationOptions& options, const GemmMeasure& gemm);

// Triad array size for a last-level cache of `llc_bytes` (nullopt: unknown),
// by the constants above.
std::int64_t TriadArrayBytes(std::optional<std::int64_t> llc_bytes);

// Pins every thread of this process (/proc/self/task) to `cpus`. Threads
// created later inherit the pinning of their creator. Returns false when a
// thread could not be pinned.
bool PinAllThreads(const std::vector<int>& cpus);

// What the GPU calibration program reported.
struct GpuCalibration {
  nlohmann::json gpus = nlohmann::json::array();
  nlohmann::json note;  // null, or why "gpus" is empty or incomplete
};

// Runs `tool_path` (no arguments) and reads its JSON. Never throws: a missing
// program, a failure or malformed output yields no GPUs and a note.
GpuCalibration RunGpuCalibrationTool(const std::string& tool_path);

// Interprets the tool's exit status (as from wait) and standard output.
GpuCalibration ParseGpuCalibrationOutput(int wait_status, const std::string& output);

// `program` in the directory of this process's executable (/proc/self/exe);
// empty when that cannot be resolved.
std::string PathNextToExecutable(const std::string& program);

// "2024-05-01T12:34:56Z".
std::string Iso8601Utc(std::chrono::system_clock::time_point time);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_CALIBRATION_H_
