#ifndef BENCHFLEET_WORKER_HOST_CALIBRATION_H_
#define BENCHFLEET_WORKER_HOST_CALIBRATION_H_

// Host calibration: what this host can do at best — fp32 GEMM peak, memory
// bandwidth, theoretical peak, and the GPUs' figures from
// benchfleet-gpu-calibrate — so that a result can be read as a fraction of
// it (docs/calibration.md). Torch-free: the GEMM is passed in.

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "worker/host/cpu_info.h"

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

// A GEMM figure is the best of measurements repeated until two consecutive
// ones agree within this fraction of the larger ...
inline constexpr double kGemmAgreement = 0.03;
// ... or until this many were taken (then `agreed` is false).
inline constexpr int kGemmMaxMeasurements = 5;

// One GEMM measurement: the median of its steady samples (MeasureWorkload).
struct GemmMeasurement {
  double gflops = 0;          // 2 N^3 / median_seconds / 1e9
  double median_seconds = 0;  // per product
  bool unsteady = false;      // never reached a steady regime; never agrees
  std::string error;          // non-empty when nothing was measured
};

// Best GEMM rate found by a GemmMeasure.
struct GemmPeak {
  std::int64_t n = 0;               // N of the N x N x N product actually measured
  double best_gflops = 0;           // best agreeing measurement's GFLOP/s
  double best_seconds = 0;          // its median seconds per product
  int timed_runs = 0;               // measurements taken
  bool agreed = false;              // two consecutive measurements agreed
  std::vector<double> runs_gflops;  // every measurement, in order (0 when unsteady)
  std::string error;                // non-empty when nothing was measured
};

// Calls `measure` until two consecutive measurements, neither unsteady,
// agree within kGemmAgreement, at most kGemmMaxMeasurements times, and
// keeps the best (highest GFLOP/s) of all steady ones. An error from
// `measure` ends it with that error.
GemmPeak RepeatUntilAgreement(const std::function<GemmMeasurement()>& measure);

// Element types whose GEMM peak is calibrated, so that a job of a dtype is
// compared with the peak of its dtype.
enum class GemmDtype { kFp32, kBf16 };

// Measures an N x N GEMM of `dtype` with `threads` threads for every pool
// (intra-op and BLAS) on the CPUs the process is currently pinned to. A
// measure chooses its own N from `n` (GemmPeak::n): one at which those CPUs
// are all busy, and a product does not take too long (MeasureTorchGemm).
using GemmMeasure = std::function<GemmPeak(GemmDtype dtype, std::int64_t n, int threads)>;

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
  // Measures the clock of the calling (pinned) thread's core in MHz for the
  // theoretical peak where cpufreq does not say; empty: not measured.
  std::function<std::optional<double>()> measure_clock = MeasureCoreClockMhz;
  std::string proc_cpuinfo_path = "/proc/cpuinfo";
  std::string sysfs_cpu_root = "/sys/devices/system/cpu";
};

// Runs the calibration and returns its JSON (schemas/worker.md, --calibrate):
// fp32 and bf16 GEMM on all allowed CPUs, then on the first one alone; triad
// the same way; then the GPU tool. Every thread of the process is pinned for
// each phase and re-pinned to all allowed CPUs at the end. A phase that fails
// leaves its figure null and adds a line to "errors" (so do measurements that
// never agreed; their best counts). A calibration whose fp32 figures cannot be
// trusted (all CPUs slower than one) gets a top-level "error" saying why: it
// must not be stored.
nlohmann::json RunCalibration(const CalibrationOptions& options, const GemmMeasure& gemm);

// Triad array size for a last-level cache of `llc_bytes` (nullopt: unknown),
// by the constants above.
std::int64_t TriadArrayBytes(std::optional<std::int64_t> llc_bytes);

// Pins every thread of this process (/proc/self/task) to `cpus`. Threads
// created later inherit the pinning of their creator. Returns false when a
// thread could not be pinned.
bool PinAllThreads(const std::vector<int>& cpus);

// The environment variables that change how the BLAS and OpenMP runtimes
// behave (OPENBLAS_*, OMP_*, MKL_*, KMP_*, GOMP_*), from `envp` (a
// NULL-terminated array of "NAME=value", as `environ`), as a JSON object.
nlohmann::json PerformanceEnvironment(const char* const* envp);

// The widest vector ISA a CPU's /proc/cpuinfo flags advertise: "avx512f",
// "avx2", "avx", "sse2", or "" when none.
std::string WidestFlagsIsa(const std::set<std::string>& flags);

// The kernel family OpenBLAS reports in its config string ("OpenBLAS 0.3.21
// NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64" -> "Haswell")
// and the vector ISA its kernels use ("avx2"; "avx512f", "avx", "sse2").
struct BlasKernel {
  std::string name;
  std::string isa;
};
std::optional<BlasKernel> OpenBlasKernel(const std::string& blas_config);

// True when `blas_isa` is narrower than `cpu_isa` (both as WidestFlagsIsa
// names): the BLAS leaves part of the vector width unused, e.g.
// OPENBLAS_CORETYPE=Haswell (AVX2 kernels) on an AVX-512 CPU. nullopt when
// either is unknown.
std::optional<bool> BlasIsaNarrowerThanCpu(const std::string& blas_isa, const std::string& cpu_isa);

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

#endif  // BENCHFLEET_WORKER_HOST_CALIBRATION_H_
