// benchfleet-gpu-calibrate: measures each CUDA device's GEMM peaks (cuBLAS: true
// fp32, TF32 tensor cores, bf16 tensor cores) and device memory bandwidth (a
// triad kernel and a device-to-device copy), and computes its theoretical fp32
// peak. Prints one JSON object to stdout; see docs/calibration.md. Built only
// where the CUDA Toolkit is installed; needs no LibTorch. Exits 0 whenever it
// printed its JSON, also when there is no GPU ("gpus" is then empty and "note"
// says why). A measurement that fails leaves its figures null and says why in
// the device's "error"; the others are still taken.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// GEMM size: large enough for cuBLAS to reach its plateau on an H100/H200-class
// GPU (fp32: 3 x 256 MiB, bf16: 3 x 128 MiB). Devices with less free memory
// than kLargeGemmMinFreeBytes use kSmallGemmN.
constexpr int kLargeGemmN = 8192;
constexpr int kSmallGemmN = 4096;
constexpr std::size_t kLargeGemmMinFreeBytes = std::size_t{2} << 30;
// GEMMs between one pair of CUDA events, so that the events' and the launches'
// few microseconds vanish beside the work (a bf16 GEMM of N = 8192 takes about
// 1.5 ms on an H100). A timing is the pair's time / kGemmsPerTiming.
constexpr int kGemmsPerTiming = 10;
// Untimed timings first (clocks ramp up, cuBLAS picks and loads its kernels),
// then the fastest of kGemmTimedTimings counts.
constexpr int kGemmWarmupTimings = 1;
constexpr int kGemmTimedTimings = 5;

// Each triad array is 1 GiB (far beyond any L2), or a quarter of the free
// memory when that is less.
constexpr std::size_t kTriadArrayBytes = std::size_t{1} << 30;
constexpr int kTriadWarmupRuns = 2;
constexpr int kTriadTimedRuns = 20;
constexpr int kTriadBlockSize = 256;
constexpr float kTriadScalar = 3.0f;

// The copy: source and destination 1 GiB each (a quarter of free memory when
// that is less), kCopiesPerTiming copies between one pair of events, the
// fastest of kCopyTimedTimings after kCopyWarmupTimings.
constexpr std::size_t kCopyBytes = std::size_t{1} << 30;
constexpr int kCopiesPerTiming = 10;
constexpr int kCopyWarmupTimings = 2;
constexpr int kCopyTimedTimings = 10;

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

// FP32 results per clock per SM ("FP32 cores"), from the CUDA C++
// Programming Guide, "Arithmetic Instructions", throughput table (32-bit
// floating-point add, multiply, multiply-add). Compute capabilities not
// listed here give a null theoretical peak rather than a guess.
struct Fp32Lanes {
  int major;
  int minor;
  int lanes_per_sm;
};
constexpr Fp32Lanes kFp32LanesPerSm[] = {
    {5, 0, 128}, {5, 2, 128}, {5, 3, 128},  {6, 0, 64},   {6, 1, 128}, {6, 2, 128},
    {7, 0, 64},  {7, 2, 64},  {7, 5, 64},   {8, 0, 64},   {8, 6, 128}, {8, 7, 128},
    {8, 9, 128}, {9, 0, 128}, {10, 0, 128}, {12, 0, 128},
};

int LanesPerSm(int major, int minor) {
  for (const Fp32Lanes& entry : kFp32LanesPerSm) {
    if (entry.major == major && entry.minor == minor) return entry.lanes_per_sm;
  }
  return 0;
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string JsonNumber(double value, bool known) {
  if (!known) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// "" when the call succeeded, else what failed and CUDA's or cuBLAS's reason.
std::string CudaFailure(const std::string& what, cudaError_t status) {
  return status == cudaSuccess ? std::string() : what + ": " + cudaGetErrorString(status);
}
std::string CublasFailure(const std::string& what, cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? std::string()
                                         : what + ": " + cublasGetStatusString(status);
}

// Returns the failure text of `failure` (a CudaFailure or CublasFailure) from the
// enclosing function, which returns std::string, when it is not empty.
#define RETURN_IF_FAILED(failure)                 \
  do {                                            \
    std::string why_failed_ = (failure);          \
    if (!why_failed_.empty()) return why_failed_; \
  } while (0)

__device__ inline void StoreElement(float* x, std::size_t i, float v) { x[i] = v; }
__device__ inline void StoreElement(__nv_bfloat16* x, std::size_t i, float v) {
  x[i] = __float2bfloat16(v);
}

// Fills x[0, n) with values in [-1, 1) from an integer hash, so that GEMM
// inputs are not all zero (a zero matrix draws less power and can clock
// higher than real data allows).
template <typename T>
__global__ void FillPseudoRandom(T* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 2246822519u;
    h ^= h >> 13;
    StoreElement(x, i, static_cast<float>(h) / 2147483648.0f - 1.0f);
  }
}

__global__ void Triad(float* __restrict__ a, const float* __restrict__ b,
                      const float* __restrict__ c, float scalar, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    a[i] = b[i] + scalar * c[i];
  }
}

// Frees device memory on every exit path.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  cudaError_t Allocate(std::size_t bytes) { return cudaMalloc(&data_, bytes); }
  void* get() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
};

// Two CUDA events on the default stream: the time between them.
class EventPair {
 public:
  EventPair() = default;
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }
  std::string Create() {
    RETURN_IF_FAILED(CudaFailure("cudaEventCreate", cudaEventCreate(&start_)));
    return CudaFailure("cudaEventCreate", cudaEventCreate(&stop_));
  }
  std::string Start() { return CudaFailure("cudaEventRecord", cudaEventRecord(start_)); }
  // Records the stop, waits for it and sets *ms to the time since Start(). An
  // asynchronous failure of the work between them shows here.
  std::string Stop(float* ms) {
    RETURN_IF_FAILED(CudaFailure("cudaEventRecord", cudaEventRecord(stop_)));
    RETURN_IF_FAILED(CudaFailure("cudaEventSynchronize", cudaEventSynchronize(stop_)));
    RETURN_IF_FAILED(CudaFailure("cudaEventElapsedTime", cudaEventElapsedTime(ms, start_, stop_)));
    if (*ms <= 0) return "the CUDA events measured no time";
    return "";
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

class CublasHandle {
 public:
  CublasHandle() = default;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  std::string Create() { return CublasFailure("cublasCreate", cublasCreate(&handle_)); }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

int GridFor(std::size_t n, int sm_count) {
  // Enough blocks to fill every SM several times over; the grid-stride loop
  // covers the rest.
  const std::size_t wanted = (n + kTriadBlockSize - 1) / kTriadBlockSize;
  return static_cast<int>(std::min<std::size_t>(wanted, static_cast<std::size_t>(sm_count) * 32));
}

// Launches FillPseudoRandom over `buffer` as n elements of T.
template <typename T>
std::string Fill(const DeviceBuffer& buffer, std::size_t n, std::uint32_t seed, int sm_count) {
  FillPseudoRandom<T><<<GridFor(n, sm_count), kTriadBlockSize>>>(buffer.as<T>(), n, seed);
  return CudaFailure("launching FillPseudoRandom", cudaGetLastError());
}

std::string FreeBytes(std::size_t* free_bytes) {
  std::size_t total_bytes = 0;
  return CudaFailure("cudaMemGetInfo", cudaMemGetInfo(free_bytes, &total_bytes));
}

// One figure and the size it was measured at (a GEMM's N, an array's MiB); known
// once measured.
struct Figure {
  double value = 0;
  double size = 0;
  bool known = false;
};

// A GEMM C = A * B of N x N matrices through cublasGemmEx.
struct GemmKind {
  const char* name;  // names it in error messages
  cudaDataType_t data_type;
  cublasComputeType_t compute_type;
  std::size_t element_bytes;
};
// True fp32: CUBLAS_COMPUTE_32F under CUBLAS_DEFAULT_MATH (what cublasSgemm does)
// never uses TF32 tensor cores.
constexpr GemmKind kSgemm{"SGEMM", CUDA_R_32F, CUBLAS_COMPUTE_32F, sizeof(float)};
// fp32 matrices, inputs rounded to TF32 on the tensor cores, fp32 accumulation.
constexpr GemmKind kTf32Gemm{"TF32 GEMM", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, sizeof(float)};
// bf16 matrices on the tensor cores, fp32 accumulation.
constexpr GemmKind kBf16Gemm{"bf16 GEMM", CUDA_R_16BF, CUBLAS_COMPUTE_32F, sizeof(__nv_bfloat16)};

// Sets *figure to the GFLOP/s of the fastest of kGemmTimedTimings timings of
// kGemmsPerTiming GEMMs each, after kGemmWarmupTimings untimed ones. Returns ""
// or what failed.
std::string MeasureGemm(const GemmKind& kind, int sm_count, Figure* figure) {
  std::size_t free_bytes = 0;
  RETURN_IF_FAILED(FreeBytes(&free_bytes));
  const int n = free_bytes >= kLargeGemmMinFreeBytes ? kLargeGemmN : kSmallGemmN;
  const std::size_t elements = static_cast<std::size_t>(n) * n;
  DeviceBuffer a, b, c;
  for (DeviceBuffer* buffer : {&a, &b, &c}) {
    RETURN_IF_FAILED(CudaFailure("cudaMalloc", buffer->Allocate(elements * kind.element_bytes)));
  }
  if (kind.data_type == CUDA_R_16BF) {
    RETURN_IF_FAILED(Fill<__nv_bfloat16>(a, elements, 1, sm_count));
    RETURN_IF_FAILED(Fill<__nv_bfloat16>(b, elements, 2, sm_count));
  } else {
    RETURN_IF_FAILED(Fill<float>(a, elements, 1, sm_count));
    RETURN_IF_FAILED(Fill<float>(b, elements, 2, sm_count));
  }
  RETURN_IF_FAILED(CudaFailure("filling the inputs", cudaDeviceSynchronize()));
  CublasHandle handle;
  RETURN_IF_FAILED(handle.Create());
  RETURN_IF_FAILED(
      CublasFailure("cublasSetMathMode", cublasSetMathMode(handle.get(), CUBLAS_DEFAULT_MATH)));
  const float alpha = 1.0f;
  const float beta = 0.0f;
  EventPair events;
  RETURN_IF_FAILED(events.Create());
  float best_ms = -1;
  for (int timing = 0; timing < kGemmWarmupTimings + kGemmTimedTimings; ++timing) {
    RETURN_IF_FAILED(events.Start());
    for (int i = 0; i < kGemmsPerTiming; ++i) {
      RETURN_IF_FAILED(CublasFailure(
          "cublasGemmEx",
          cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.get(),
                       kind.data_type, n, b.get(), kind.data_type, n, &beta, c.get(),
                       kind.data_type, n, kind.compute_type, CUBLAS_GEMM_DEFAULT)));
    }
    float ms = 0;
    RETURN_IF_FAILED(events.Stop(&ms));
    if (timing >= kGemmWarmupTimings && (best_ms < 0 || ms < best_ms)) best_ms = ms;
  }
  RETURN_IF_FAILED(CudaFailure("after the GEMMs", cudaGetLastError()));
  const double seconds_per_gemm = best_ms * 1e-3 / kGemmsPerTiming;
  figure->value = 2.0 * n * static_cast<double>(n) * n / seconds_per_gemm / 1e9;
  figure->size = n;
  figure->known = true;
  return "";
}

// a = b + s * c over three float arrays; bytes counted as 3 x array size
// per pass (STREAM's convention, as on the CPU side).
std::string MeasureTriad(int sm_count, Figure* figure) {
  std::size_t free_bytes = 0;
  RETURN_IF_FAILED(FreeBytes(&free_bytes));
  const std::size_t array_bytes = std::min(kTriadArrayBytes, free_bytes / 4);
  const std::size_t n = array_bytes / sizeof(float);
  DeviceBuffer a, b, c;
  for (DeviceBuffer* buffer : {&a, &b, &c}) {
    RETURN_IF_FAILED(CudaFailure("cudaMalloc", buffer->Allocate(n * sizeof(float))));
  }
  RETURN_IF_FAILED(Fill<float>(b, n, 3, sm_count));
  RETURN_IF_FAILED(Fill<float>(c, n, 4, sm_count));
  EventPair events;
  RETURN_IF_FAILED(events.Create());
  const int grid = GridFor(n, sm_count);
  float best_ms = -1;
  for (int run = 0; run < kTriadWarmupRuns + kTriadTimedRuns; ++run) {
    RETURN_IF_FAILED(events.Start());
    Triad<<<grid, kTriadBlockSize>>>(a.as<float>(), b.as<float>(), c.as<float>(), kTriadScalar, n);
    RETURN_IF_FAILED(CudaFailure("launching the triad kernel", cudaGetLastError()));
    float ms = 0;
    RETURN_IF_FAILED(events.Stop(&ms));
    if (run >= kTriadWarmupRuns && (best_ms < 0 || ms < best_ms)) best_ms = ms;
  }
  figure->size = static_cast<double>(n * sizeof(float)) / kBytesPerMiB;
  figure->value = 3.0 * static_cast<double>(n * sizeof(float)) / (best_ms * 1e-3) / 1e9;
  figure->known = true;
  return "";
}

// cudaMemcpyAsync device to device; bytes counted as read + written (2 x size
// per copy), the traffic the copy engines or kernels move through HBM.
std::string MeasureCopy(int sm_count, Figure* figure) {
  std::size_t free_bytes = 0;
  RETURN_IF_FAILED(FreeBytes(&free_bytes));
  const std::size_t bytes = std::min(kCopyBytes, free_bytes / 4) / sizeof(float) * sizeof(float);
  DeviceBuffer source, destination;
  RETURN_IF_FAILED(CudaFailure("cudaMalloc", source.Allocate(bytes)));
  RETURN_IF_FAILED(CudaFailure("cudaMalloc", destination.Allocate(bytes)));
  RETURN_IF_FAILED(Fill<float>(source, bytes / sizeof(float), 5, sm_count));
  EventPair events;
  RETURN_IF_FAILED(events.Create());
  float best_ms = -1;
  for (int timing = 0; timing < kCopyWarmupTimings + kCopyTimedTimings; ++timing) {
    RETURN_IF_FAILED(events.Start());
    for (int i = 0; i < kCopiesPerTiming; ++i) {
      RETURN_IF_FAILED(CudaFailure(
          "cudaMemcpyAsync",
          cudaMemcpyAsync(destination.get(), source.get(), bytes, cudaMemcpyDeviceToDevice)));
    }
    float ms = 0;
    RETURN_IF_FAILED(events.Stop(&ms));
    if (timing >= kCopyWarmupTimings && (best_ms < 0 || ms < best_ms)) best_ms = ms;
  }
  figure->size = static_cast<double>(bytes) / kBytesPerMiB;
  figure->value = 2.0 * static_cast<double>(bytes) * kCopiesPerTiming / (best_ms * 1e-3) / 1e9;
  figure->known = true;
  return "";
}

// NVIDIA_TF32_OVERRIDE=0 makes cuBLAS run TF32 requests in true fp32: the
// figure would then be fp32's, not TF32's.
bool Tf32DisabledByEnvironment() {
  const char* value = std::getenv("NVIDIA_TF32_OVERRIDE");
  return value != nullptr && std::strcmp(value, "0") == 0;
}

struct GpuFigures {
  Figure sgemm, tf32, bf16, triad, copy;
  std::vector<std::string> errors;  // one per measurement that failed, naming it
};

// Runs `measure` into *figure; a failure is noted in figures->errors under `name`,
// together with any asynchronous error it left behind, so that the next measurement
// starts clean (a sticky error fails it too, and is reported again there).
template <typename Measure>
void Take(const char* name, GpuFigures* figures, Figure* figure, Measure measure) {
  (void)cudaGetLastError();
  const std::string why = measure(figure);
  if (!why.empty()) {
    *figure = Figure{};
    figures->errors.push_back(std::string(name) + ": " + why);
  }
  (void)cudaGetLastError();
}

std::string DeviceJson(int index) {
  cudaDeviceProp prop{};
  cudaError_t status = cudaGetDeviceProperties(&prop, index);
  if (status != cudaSuccess) {
    return "{\"index\": " + std::to_string(index) +
           ", \"error\": " + JsonString(CudaFailure("cudaGetDeviceProperties", status)) + "}";
  }
  int clock_khz = 0;  // peak SM clock; cudaDeviceProp lost clockRate in CUDA 13
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, index) != cudaSuccess) {
    clock_khz = 0;
  }
  const int lanes = LanesPerSm(prop.major, prop.minor);
  const bool theoretical_known = lanes > 0 && clock_khz > 0;
  const double theoretical_gflops =
      static_cast<double>(prop.multiProcessorCount) * lanes * 2.0 * clock_khz / 1e6;

  GpuFigures figures;
  const int sms = prop.multiProcessorCount;
  status = cudaSetDevice(index);
  if (status != cudaSuccess) {
    figures.errors.push_back(CudaFailure("cudaSetDevice", status));
  } else {
    Take("SGEMM", &figures, &figures.sgemm, [&](Figure* f) { return MeasureGemm(kSgemm, sms, f); });
    if (Tf32DisabledByEnvironment()) {
      figures.errors.push_back(
          "TF32 GEMM: not measured: NVIDIA_TF32_OVERRIDE=0 turns TF32 off in cuBLAS");
    } else {
      Take("TF32 GEMM", &figures, &figures.tf32,
           [&](Figure* f) { return MeasureGemm(kTf32Gemm, sms, f); });
    }
    Take("bf16 GEMM", &figures, &figures.bf16,
         [&](Figure* f) { return MeasureGemm(kBf16Gemm, sms, f); });
    Take("triad", &figures, &figures.triad, [&](Figure* f) { return MeasureTriad(sms, f); });
    Take("copy", &figures, &figures.copy, [&](Figure* f) { return MeasureCopy(sms, f); });
  }
  std::string errors;
  for (const std::string& error : figures.errors) errors += (errors.empty() ? "" : "; ") + error;
  std::string json = "{\"index\": " + std::to_string(index);
  json += ", \"name\": " + JsonString(prop.name);
  json += ", \"memory_mb\": " +
          JsonNumber(static_cast<double>(prop.totalGlobalMem) / kBytesPerMiB, true);
  json += ", \"compute_capability\": " +
          JsonString(std::to_string(prop.major) + "." + std::to_string(prop.minor));
  json += ", \"sm_count\": " + std::to_string(prop.multiProcessorCount);
  json += ", \"clock_mhz\": " + JsonNumber(clock_khz / 1e3, clock_khz > 0);
  json += ", \"fp32_lanes_per_sm\": " + JsonNumber(lanes, lanes > 0);
  json += ", \"sgemm_n\": " + JsonNumber(figures.sgemm.size, figures.sgemm.known);
  json += ", \"sgemm_gflops\": " + JsonNumber(figures.sgemm.value, figures.sgemm.known);
  json += ", \"tf32_n\": " + JsonNumber(figures.tf32.size, figures.tf32.known);
  json += ", \"tf32_gflops\": " + JsonNumber(figures.tf32.value, figures.tf32.known);
  json += ", \"bf16_n\": " + JsonNumber(figures.bf16.size, figures.bf16.known);
  json += ", \"bf16_gflops\": " + JsonNumber(figures.bf16.value, figures.bf16.known);
  json += ", \"bandwidth_array_mb\": " + JsonNumber(figures.triad.size, figures.triad.known);
  json += ", \"bandwidth_gbps\": " + JsonNumber(figures.triad.value, figures.triad.known);
  json += ", \"copy_mb\": " + JsonNumber(figures.copy.size, figures.copy.known);
  json += ", \"copy_gbps\": " + JsonNumber(figures.copy.value, figures.copy.known);
  json += ", \"theoretical_gflops\": " + JsonNumber(theoretical_gflops, theoretical_known);
  json += ", \"error\": " + (errors.empty() ? std::string("null") : JsonString(errors));
  return json + "}";
}

}  // namespace

constexpr const char* kUsage =
    "Usage: benchfleet-gpu-calibrate\n"
    "Measures each CUDA device's GEMM peaks (cuBLAS: true fp32, TF32, bf16) and memory\n"
    "bandwidth (a triad kernel, a device-to-device copy), computes its theoretical fp32\n"
    "peak, and prints one JSON object {\"gpus\": [...]} to stdout (docs/calibration.md).\n"
    "Takes no arguments; the agent's calibration runs it where it is installed.\n"
    "  -h, --help  print this and exit\n";

int main(int argc, char** argv) {
  if (argc > 1) {
    const std::string arg = argv[1];
    if (argc == 2 && (arg == "-h" || arg == "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "benchfleet-gpu-calibrate: unexpected argument \"%s\"\n%s", arg.c_str(),
                 kUsage);
    return 2;
  }
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    const char* why = cudaGetErrorString(status != cudaSuccess ? status : cudaErrorNoDevice);
    std::printf("{\"gpus\": [], \"note\": %s}\n",
                JsonString(std::string("no CUDA device: ") + why).c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  std::vector<std::string> devices;
  for (int i = 0; i < count; ++i) devices.push_back(DeviceJson(i));
  std::string json = "{\"gpus\": [";
  for (std::size_t i = 0; i < devices.size(); ++i) json += (i > 0 ? ", " : "") + devices[i];
  json += "]}";
  std::printf("%s\n", json.c_str());
  return std::fflush(stdout) == 0 ? 0 : 1;
}
