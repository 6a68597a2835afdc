// benchfleet-gpu-calibrate: measures each CUDA device's fp32 GEMM peak
// (cuBLAS SGEMM) and device memory bandwidth (a triad kernel), and computes
// its theoretical fp32 peak. Prints one JSON object to stdout; see
// docs/calibration.md. Built only where the CUDA Toolkit is installed;
// needs no LibTorch. Exits 0 whenever it printed its JSON, also when there
// is no GPU ("gpus" is then empty and "note" says why).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

// SGEMM size: large enough for cuBLAS to reach its plateau on an H100-class
// GPU; 3 x 256 MiB. Devices with less free memory than kLargeGemmMinFreeBytes
// use kSmallGemmN.
constexpr int kLargeGemmN = 8192;
constexpr int kSmallGemmN = 4096;
constexpr std::size_t kLargeGemmMinFreeBytes = std::size_t{2} << 30;
constexpr int kGemmWarmupRuns = 3;
constexpr int kGemmTimedRuns = 10;

// Each triad array is 1 GiB (far beyond any L2), or a quarter of the free
// memory when that is less.
constexpr std::size_t kTriadArrayBytes = std::size_t{1} << 30;
constexpr int kTriadWarmupRuns = 2;
constexpr int kTriadTimedRuns = 20;
constexpr int kTriadBlockSize = 256;
constexpr float kTriadScalar = 3.0f;

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

// Fills x[0, n) with values in [-1, 1) from an integer hash, so that GEMM
// inputs are not all zero (a zero matrix draws less power and can clock
// higher than real data allows).
__global__ void FillPseudoRandom(float* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = static_cast<float>(h) / 2147483648.0f - 1.0f;
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
  float* get() const { return static_cast<float*>(data_); }

 private:
  void* data_ = nullptr;
};

class EventPair {
 public:
  EventPair() {
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
  }
  ~EventPair() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void Start() { cudaEventRecord(start_); }
  // Milliseconds since Start(); negative when the timing failed.
  float StopMs() {
    cudaEventRecord(stop_);
    float ms = -1;
    if (cudaEventSynchronize(stop_) != cudaSuccess ||
        cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess) {
      return -1;
    }
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

int GridFor(std::size_t n, int sm_count) {
  // Enough blocks to fill every SM several times over; the grid-stride loop
  // covers the rest.
  const std::size_t wanted = (n + kTriadBlockSize - 1) / kTriadBlockSize;
  return static_cast<int>(std::min<std::size_t>(wanted, static_cast<std::size_t>(sm_count) * 32));
}

struct GpuFigures {
  double sgemm_gflops = 0;
  int sgemm_n = 0;
  double bandwidth_gbps = 0;
  double bandwidth_array_mb = 0;
  std::string error;  // first thing that failed; figures after it are not set
};

std::string CudaError(const char* what, cudaError_t status) {
  return std::string(what) + ": " + cudaGetErrorString(status);
}

// SGEMM C = A * B, N x N, true fp32 (CUBLAS_DEFAULT_MATH: no TF32 tensor
// cores), best of kGemmTimedRuns after kGemmWarmupRuns.
void MeasureSgemm(GpuFigures& figures, int sm_count) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (status != cudaSuccess) {
    figures.error = CudaError("cudaMemGetInfo", status);
    return;
  }
  const int n = free_bytes >= kLargeGemmMinFreeBytes ? kLargeGemmN : kSmallGemmN;
  const std::size_t elements = static_cast<std::size_t>(n) * n;
  DeviceBuffer a, b, c;
  for (DeviceBuffer* buffer : {&a, &b, &c}) {
    if ((status = buffer->Allocate(elements * sizeof(float))) != cudaSuccess) {
      figures.error = CudaError("cudaMalloc for SGEMM", status);
      return;
    }
  }
  FillPseudoRandom<<<GridFor(elements, sm_count), kTriadBlockSize>>>(a.get(), elements, 1);
  FillPseudoRandom<<<GridFor(elements, sm_count), kTriadBlockSize>>>(b.get(), elements, 2);
  if ((status = cudaDeviceSynchronize()) != cudaSuccess) {
    figures.error = CudaError("filling SGEMM inputs", status);
    return;
  }
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    figures.error = "cublasCreate failed";
    return;
  }
  cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
  const float alpha = 1.0f;
  const float beta = 0.0f;
  auto gemm = [&] {
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.get(), n, b.get(), n,
                       &beta, c.get(), n);
  };
  EventPair events;
  float best_ms = -1;
  for (int run = 0; run < kGemmWarmupRuns + kGemmTimedRuns; ++run) {
    events.Start();
    if (gemm() != CUBLAS_STATUS_SUCCESS) {
      figures.error = "cublasSgemm failed";
      break;
    }
    const float ms = events.StopMs();
    if (ms <= 0) {
      figures.error = CudaError("timing SGEMM", cudaGetLastError());
      break;
    }
    if (run >= kGemmWarmupRuns && (best_ms < 0 || ms < best_ms)) best_ms = ms;
  }
  cublasDestroy(handle);
  if (!figures.error.empty()) return;
  figures.sgemm_n = n;
  figures.sgemm_gflops = 2.0 * n * static_cast<double>(n) * n / (best_ms * 1e-3) / 1e9;
}

// a = b + s * c over three float arrays; bytes counted as 3 x array size
// per pass (STREAM's convention, as on the CPU side).
void MeasureBandwidth(GpuFigures& figures, int sm_count) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (status != cudaSuccess) {
    figures.error = CudaError("cudaMemGetInfo", status);
    return;
  }
  const std::size_t array_bytes = std::min(kTriadArrayBytes, free_bytes / 4);
  const std::size_t n = array_bytes / sizeof(float);
  DeviceBuffer a, b, c;
  for (DeviceBuffer* buffer : {&a, &b, &c}) {
    if ((status = buffer->Allocate(n * sizeof(float))) != cudaSuccess) {
      figures.error = CudaError("cudaMalloc for the triad", status);
      return;
    }
  }
  const int grid = GridFor(n, sm_count);
  FillPseudoRandom<<<grid, kTriadBlockSize>>>(b.get(), n, 3);
  FillPseudoRandom<<<grid, kTriadBlockSize>>>(c.get(), n, 4);
  EventPair events;
  float best_ms = -1;
  for (int run = 0; run < kTriadWarmupRuns + kTriadTimedRuns; ++run) {
    events.Start();
    Triad<<<grid, kTriadBlockSize>>>(a.get(), b.get(), c.get(), kTriadScalar, n);
    const float ms = events.StopMs();
    if (ms <= 0) {
      figures.error = CudaError("triad kernel", cudaGetLastError());
      return;
    }
    if (run >= kTriadWarmupRuns && (best_ms < 0 || ms < best_ms)) best_ms = ms;
  }
  figures.bandwidth_array_mb = static_cast<double>(n * sizeof(float)) / kBytesPerMiB;
  figures.bandwidth_gbps = 3.0 * static_cast<double>(n * sizeof(float)) / (best_ms * 1e-3) / 1e9;
}

std::string DeviceJson(int index) {
  cudaDeviceProp prop{};
  cudaError_t status = cudaGetDeviceProperties(&prop, index);
  if (status != cudaSuccess) {
    return "{\"index\": " + std::to_string(index) +
           ", \"error\": " + JsonString(CudaError("cudaGetDeviceProperties", status)) + "}";
  }
  int clock_khz = 0;  // peak SM clock; cudaDeviceProp lost clockRate in CUDA 13
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, index);
  const int lanes = LanesPerSm(prop.major, prop.minor);
  const bool theoretical_known = lanes > 0 && clock_khz > 0;
  const double theoretical_gflops =
      static_cast<double>(prop.multiProcessorCount) * lanes * 2.0 * clock_khz / 1e6;

  GpuFigures figures;
  status = cudaSetDevice(index);
  if (status != cudaSuccess) {
    figures.error = CudaError("cudaSetDevice", status);
  } else {
    MeasureSgemm(figures, prop.multiProcessorCount);
    if (figures.error.empty()) MeasureBandwidth(figures, prop.multiProcessorCount);
  }
  const bool sgemm_known = figures.sgemm_n > 0;
  const bool bandwidth_known = figures.bandwidth_array_mb > 0;
  std::string json = "{\"index\": " + std::to_string(index);
  json += ", \"name\": " + JsonString(prop.name);
  json += ", \"memory_mb\": " +
          JsonNumber(static_cast<double>(prop.totalGlobalMem) / kBytesPerMiB, true);
  json += ", \"compute_capability\": " +
          JsonString(std::to_string(prop.major) + "." + std::to_string(prop.minor));
  json += ", \"sm_count\": " + std::to_string(prop.multiProcessorCount);
  json += ", \"clock_mhz\": " + JsonNumber(clock_khz / 1e3, clock_khz > 0);
  json += ", \"fp32_lanes_per_sm\": " + JsonNumber(lanes, lanes > 0);
  json += ", \"sgemm_n\": " + JsonNumber(figures.sgemm_n, sgemm_known);
  json += ", \"sgemm_gflops\": " + JsonNumber(figures.sgemm_gflops, sgemm_known);
  json += ", \"bandwidth_array_mb\": " + JsonNumber(figures.bandwidth_array_mb, bandwidth_known);
  json += ", \"bandwidth_gbps\": " + JsonNumber(figures.bandwidth_gbps, bandwidth_known);
  json += ", \"theoretical_gflops\": " + JsonNumber(theoretical_gflops, theoretical_known);
  json +=
      ", \"error\": " + (figures.error.empty() ? std::string("null") : JsonString(figures.error));
  return json + "}";
}

}  // namespace

constexpr const char* kUsage =
    "Usage: benchfleet-gpu-calibrate\n"
    "Measures each CUDA device's fp32 GEMM peak (cuBLAS SGEMM) and memory bandwidth (a\n"
    "triad kernel), computes its theoretical fp32 peak, and prints one JSON object\n"
    "{\"gpus\": [...]} to stdout (docs/calibration.md). Takes no arguments; the agent's\n"
    "calibration runs it where it is installed.\n"
    "  -h, --help  print this and exit\n";

int main(int argc, char** argv) {
  if (argc > 1) {
    const std::string arg = argv[1];
    if (argc == 2 && (arg == "-h" || arg == "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "benchfleet-gpu-calibrate: unexpected argument \"%s\"\n%s", arg.c_str(), kUsage);
    return 2;
  }
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    const char* why = cudaGetErrorString(status != cudaSuccess ? status : cudaErrorNoDevice);
    std::printf("{\"gpus\": [], \"note\": %s}\n",
                JsonString(std::string("no CUDA device: ") + why).c_str());
    return 0;
  }
  std::vector<std::string> devices;
  for (int i = 0; i < count; ++i) devices.push_back(DeviceJson(i));
  std::string json = "{\"gpus\": [";
  for (std::size_t i = 0; i < devices.size(); ++i) json += (i > 0 ? ", " : "") + devices[i];
  json += "]}";
  std::printf("%s\n", json.c_str());
  return std::fflush(stdout) == 0 ? 0 : 1;
}
