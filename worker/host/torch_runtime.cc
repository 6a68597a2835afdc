#include "worker/host/torch_runtime.h"

#include <ATen/Config.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "worker/host/calibration.h"
#include "worker/host/omp_wait_policy.h"
#include "worker/host/process_info.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// OpenBLAS is found by symbol rather than linked: LibTorch reaches it through
// the libblas.so.3 alternative, which may point at another BLAS.
using OpenblasGetConfig = char* (*)();
using OpenblasGetThreads = int (*)();
using OpenblasSetThreads = void (*)(int);
using OpenblasGetParallel = int (*)();

template <typename Fn>
Fn FindSymbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// LibTorch's account of how it was built (at::show_config, what torch.__config__.show()
// prints): the only place a build names its MKL and oneDNN versions.
const std::string& ShowConfig() {
  static const std::string config = at::show_config();
  return config;
}

// The text after `marker` in the build's account, up to the next space or line end;
// empty when the marker is not there.
std::string ConfigWord(const std::string& marker) {
  const std::string& config = ShowConfig();
  const std::size_t at = config.find(marker);
  if (at == std::string::npos) return "";
  const std::size_t start = at + marker.size();
  const std::size_t end = config.find_first_of(" \n,()", start);
  return config.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// "openblas" where OpenBLAS answers (Debian's LibTorch reaches it through libblas.so.3),
// else the build's own BLAS_INFO ("mkl" in the PyPI wheel), else "unknown".
std::string BlasName() {
  if (FindSymbol<OpenblasGetConfig>("openblas_get_config") != nullptr) return "openblas";
  const std::string info = ConfigWord("BLAS_INFO=");
  return info.empty() ? "unknown" : info;
}

json TextOrNull(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

// oneMKL's MKLVersion (mkl_types.h) as of 2024: PatchVersion came in then, so an older
// MKL's struct is read for nothing (its fields would be misplaced).
struct MklVersionInfo {
  int major, minor, update, patch;
  const char* product_status;
  const char* build;
  const char* processor;
  const char* platform;
};
using MklGetVersion = void (*)(MklVersionInfo*);
constexpr int kMklVersionWithPatch = 2024;

// The code path MKL's dispatch chose on this CPU, as MKL_VERBOSE names it: "Intel(R)
// Advanced Vector Extensions 512 (Intel(R) AVX-512) enabled processors" on an Intel CPU
// with AVX-512; "Intel(R) Architecture processors", its generic path, on AMD's (where its
// sgemm ran ~13% below oneDNN's on a Zen 4 host: docs/performance.md). Null without MKL.
json MklPath() {
  auto get = FindSymbol<MklGetVersion>("mkl_serv_get_version");
  if (get == nullptr) return nullptr;
  MklVersionInfo version{};
  get(&version);
  if (version.major < kMklVersionWithPatch || version.processor == nullptr) return nullptr;
  return version.processor;
}

// "2024.2" of "Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build ...".
json MklVersion() {
  std::string version = ConfigWord("Math Kernel Library Version ");
  version = version.substr(0, version.find('-'));
  return TextOrNull(version);
}

// "3.13.3" of "Intel(R) MKL-DNN v3.13.3" (oneDNN's old name, which LibTorch still prints).
json OnednnVersion() { return TextOrNull(ConfigWord("MKL-DNN v")); }

// The BLAS's own version: OpenBLAS's from its configuration ("OpenBLAS 0.3.21 ..."),
// MKL's for MKL.
json BlasVersion() {
  if (auto get = FindSymbol<OpenblasGetConfig>("openblas_get_config")) {
    const std::string config = get();
    const std::size_t space = config.find(' ');
    if (space == std::string::npos) return nullptr;
    return TextOrNull(config.substr(space + 1, config.find(' ', space + 1) - space - 1));
  }
  return BlasName() == "mkl" ? MklVersion() : json(nullptr);
}

json OpenblasThreads() {
  auto get = FindSymbol<OpenblasGetThreads>("openblas_get_num_threads");
  return get != nullptr ? json(get()) : json(nullptr);
}

// How OpenBLAS runs its threads (openblas_get_parallel): "sequential", "pthreads" (a
// pool of its own beside OpenMP's) or "openmp" (OpenMP's pool, shared with ATen and
// oneDNN); null for another BLAS.
json OpenblasThreading() {
  auto get = FindSymbol<OpenblasGetParallel>("openblas_get_parallel");
  if (get == nullptr) return nullptr;
  switch (get()) {
    case 0:
      return "sequential";
    case 1:
      return "pthreads";
    case 2:
      return "openmp";
    default:
      return nullptr;
  }
}

// GPU names and memory via the CUDA driver API, loaded at run time so this
// builds and runs on hosts without CUDA. Returns [] when the driver is absent.
json ListGpus() {
  json gpus = json::array();
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return gpus;
  using CuInit = int (*)(unsigned);
  using CuDeviceGetCount = int (*)(int*);
  using CuDeviceGet = int (*)(int*, int);
  using CuDeviceGetName = int (*)(char*, int, int);
  using CuDeviceTotalMem = int (*)(std::size_t*, int);
  auto init = reinterpret_cast<CuInit>(dlsym(driver, "cuInit"));
  auto get_count = reinterpret_cast<CuDeviceGetCount>(dlsym(driver, "cuDeviceGetCount"));
  auto get_device = reinterpret_cast<CuDeviceGet>(dlsym(driver, "cuDeviceGet"));
  auto get_name = reinterpret_cast<CuDeviceGetName>(dlsym(driver, "cuDeviceGetName"));
  auto total_mem = reinterpret_cast<CuDeviceTotalMem>(dlsym(driver, "cuDeviceTotalMem_v2"));
  constexpr int kCudaSuccess = 0;
  constexpr int kNameLength = 256;
  constexpr double kBytesPerMiB = 1024.0 * 1024.0;
  int count = 0;
  if (init != nullptr && get_count != nullptr && get_device != nullptr && get_name != nullptr &&
      total_mem != nullptr && init(0) == kCudaSuccess && get_count(&count) == kCudaSuccess) {
    for (int i = 0; i < count; ++i) {
      int device = 0;
      char name[kNameLength] = {};
      std::size_t bytes = 0;
      if (get_device(&device, i) != kCudaSuccess ||
          get_name(name, kNameLength, device) != kCudaSuccess ||
          total_mem(&bytes, device) != kCudaSuccess) {
        continue;
      }
      gpus.push_back(
          {{"index", i}, {"name", name}, {"memory_mb", static_cast<double>(bytes) / kBytesPerMiB}});
    }
  }
  dlclose(driver);
  return gpus;
}

std::string EngineName(at::QEngine engine) {
  std::string name = c10::toString(engine);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

// "13.0" from CUDART_VERSION 13000 (major * 1000 + minor * 10): the CUDA runtime this
// LibTorch was built with, also on a host without a driver or a GPU (the CUDA hooks answer
// it from a compile-time constant); null for a CPU-only LibTorch, whose hooks throw.
json CudaRuntimeVersion() {
  try {
    const long v = at::detail::getCUDAHooks().versionCUDART();
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  } catch (const c10::Error&) {
    return nullptr;
  }
}

// True when this LibTorch is built with CUDA, whether or not this host has a driver and a
// GPU (at::hasCUDA() says that).
bool BuiltWithCuda() { return !CudaRuntimeVersion().is_null(); }

// "9.10.2" from cuDNN's major * 10000 + minor * 100 + patch (cuDNN 9; 8 used
// major * 1000 + minor * 100 + patch); null without cuDNN.
json CudnnVersion() {
  if (!BuiltWithCuda() || !at::detail::getCUDAHooks().hasCuDNN()) return nullptr;
  try {
    const long v = at::detail::getCUDAHooks().versionCuDNN();
    const long major_unit = v >= 90000 ? 10000 : 1000;
    return std::to_string(v / major_unit) + "." + std::to_string(v % major_unit / 100) + "." +
           std::to_string(v % 100);
  } catch (const c10::Error&) {
    return nullptr;
  }
}

}  // namespace

std::string CheckDevice(const std::string& device) {
  if (device == "cpu") return "";
  if (!at::hasCUDA()) {
    if (BuiltWithCuda()) {
      return "device \"" + device + "\": no GPU is usable on this host (this LibTorch has CUDA " +
             CudaRuntimeVersion().get<std::string>() +
             ", but no NVIDIA driver is loaded or it sees no GPU); run the job on a GPU host, or "
             "use device \"cpu\"";
    }
    return "device \"" + device +
           "\": this LibTorch build has no CUDA support; run the job on a host whose "
           "LibTorch has CUDA, or use device \"cpu\"";
  }
  const std::size_t colon = device.find(':');
  const std::string digits = colon == std::string::npos ? "0" : device.substr(colon + 1);
  // More digits than an int holds is no GPU that exists.
  constexpr std::size_t kMaxIndexDigits = 9;
  const long index =
      digits.size() > kMaxIndexDigits ? std::numeric_limits<long>::max() : std::stol(digits);
  const auto count = static_cast<long>(torch::cuda::device_count());
  if (index >= count) {
    return "device \"" + device + "\": no GPU " + digits + " on this host (it has " +
           std::to_string(count) + ")";
  }
  return "";
}

std::string ApplyBackendSettings(bool onednn, bool quantized) {
  at::globalContext().setUserEnabledMkldnn(onednn);
  if (!quantized) return "";
  // As a user's PyTorch picks on x86: "x86" (FBGEMM and oneDNN by shape; the default of
  // PyTorch 2.x), else oneDNN's int8 kernels (Debian's 1.13 has no FBGEMM), else QNNPACK
  // (ARM). By name: the x86 engine is not in every LibTorch's enum.
  for (const char* wanted : {"x86", "onednn", "qnnpack"}) {
    for (at::QEngine engine : at::globalContext().supportedQEngines()) {
      if (EngineName(engine) == wanted) {
        at::globalContext().setQEngine(engine);
        return "";
      }
    }
  }
  return "dtype \"int8\": this LibTorch build has none of the x86, onednn and qnnpack "
         "quantized engines; use dtype \"fp32\" or \"bf16\"";
}

std::string ApplyThreadSettings(std::int64_t threads, std::int64_t interop_threads) {
  try {
    at::set_num_threads(static_cast<int>(threads));
    // The inter-op pool can be sized only once per process, before first use.
    // (an int in LibTorch 1.13, a size_t in 2.x)
    if (static_cast<std::int64_t>(at::get_num_interop_threads()) != interop_threads) {
      at::set_num_interop_threads(static_cast<int>(interop_threads));
    }
  } catch (const c10::Error& e) {
    return "cannot apply threads=" + std::to_string(threads) +
           " interop_threads=" + std::to_string(interop_threads) + ": " +
           e.what_without_backtrace();
  }
  if (auto set = FindSymbol<OpenblasSetThreads>("openblas_set_num_threads")) {
    set(static_cast<int>(threads));
  }
  return "";
}

void ApplyCudaMath(bool allow_tf32) {
  at::globalContext().setAllowTF32CuBLAS(allow_tf32);
  at::globalContext().setAllowTF32CuDNN(allow_tf32);
  at::globalContext().setBenchmarkCuDNN(true);
}

json CudaMathInfo() {
  return {{"allow_tf32_cublas", at::globalContext().allowTF32CuBLAS()},
          {"allow_tf32_cudnn", at::globalContext().allowTF32CuDNN()},
          {"cudnn_benchmark", at::globalContext().benchmarkCuDNN()}};
}

bool CudaAvailable() { return torch::cuda::is_available(); }

std::int64_t CudaDeviceCount() {
  return CudaAvailable() ? static_cast<std::int64_t>(torch::cuda::device_count()) : 0;
}

json RuntimeInfo(bool quantized, bool gpu) {
  json info = {
      {"torch_version", TORCH_VERSION},
      {"onednn", at::hasMKLDNN() && at::globalContext().userEnabledMkldnn()},
      {"qengine", quantized ? json(EngineName(at::globalContext().qEngine())) : json(nullptr)},
      {"blas", BlasName()},
      {"blas_version", BlasVersion()},
      {"mkl_path", MklPath()},
      {"onednn_version", at::hasMKLDNN() ? OnednnVersion() : json(nullptr)},
      {"openblas_threads", OpenblasThreads()},
      {"intraop_threads", at::get_num_threads()},
      {"interop_threads", at::get_num_interop_threads()},
      {"blas_threading", OpenblasThreading()},
      {"omp_wait_policy", OmpWaitPolicyInEffect()},
      {"env", PerformanceEnvironment(environ)},
      {"affinity", AllowedCpus()}};
  if (gpu) info.update(CudaMathInfo());
  return info;
}

json ProbeInfo() {
  auto get_config = FindSymbol<OpenblasGetConfig>("openblas_get_config");
  json engines = json::array();
  for (at::QEngine engine : at::globalContext().supportedQEngines()) {
    if (engine == at::QEngine::NoQEngine) continue;  // "none", not an engine
    engines.push_back(EngineName(engine));
  }
  const bool cuda = CudaAvailable();
  return {{"torch_version", TORCH_VERSION},
          {"blas", BlasName()},
          {"blas_config", get_config != nullptr ? json(get_config()) : json(nullptr)},
          {"blas_threading", OpenblasThreading()},
          {"onednn", at::hasMKLDNN()},
          {"openmp", static_cast<bool>(AT_PARALLEL_OPENMP)},
          {"parallel_info", at::get_parallel_info()},
          {"cuda_available", cuda},
          {"cuda_device_count", cuda ? static_cast<int>(torch::cuda::device_count()) : 0},
          {"cuda_version", CudaRuntimeVersion()},
          {"cudnn_version", CudnnVersion()},
          {"gpus", cuda ? ListGpus() : json::array()},
          {"quantized_engines", engines},
          {"blas_version", BlasVersion()},
          {"mkl_version", at::hasMKL() ? MklVersion() : json(nullptr)},
          {"mkl_path", MklPath()},
          {"onednn_version", at::hasMKLDNN() ? OnednnVersion() : json(nullptr)}};
}

std::string CheckTorch(const std::string& prefix) {
  if (TorchVersionMatches(prefix, TORCH_VERSION)) return "";
  return "torch " + json(prefix).dump() + ": this worker runs LibTorch " + TORCH_VERSION +
         "; the agent runs a job on a worker of the torch it names";
}

std::string TorchVersion() { return TORCH_VERSION; }

}  // namespace benchfleet::worker
