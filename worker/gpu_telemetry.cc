#include "worker/gpu_telemetry.h"

#include <dlfcn.h>

#include <algorithm>
#include <utility>

namespace benchfleet::worker {

// The subset of NVML's C ABI used here (nvml.h is not installed on most hosts).
namespace nvml {
using Return = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
constexpr Return kSuccess = 0;
struct DeviceOpaque;
using Device = DeviceOpaque*;  // nvmlDevice_t
struct Utilization {           // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int kClockSm = 1;         // NVML_CLOCK_SM
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
using Init = Return (*)();
using Shutdown = Return (*)();
using GetHandleByIndex = Return (*)(unsigned int, Device*);
using GetHandleByPciBusId = Return (*)(const char*, Device*);
using GetUtilization = Return (*)(Device, Utilization*);
using GetMemory = Return (*)(Device, Memory*);
using GetClock = Return (*)(Device, int, unsigned int*);
using GetTemperature = Return (*)(Device, int, unsigned int*);
using GetPower = Return (*)(Device, unsigned int*);  // milliwatts
using GetTotalEnergy = Return (*)(Device, unsigned long long*);  // millijoules since the driver loaded
}  // namespace nvml

struct GpuTelemetry::Nvml {
  void* library = nullptr;
  bool initialised = false;
  nvml::Device device = nullptr;
  nvml::Shutdown shutdown = nullptr;
  nvml::GetUtilization utilization = nullptr;
  nvml::GetMemory memory = nullptr;
  nvml::GetClock clock = nullptr;
  nvml::GetTemperature temperature = nullptr;
  nvml::GetPower power = nullptr;
  nvml::GetTotalEnergy energy = nullptr;  // Volta and later; null where NVML lacks it

  ~Nvml() {
    if (initialised) shutdown();
    if (library != nullptr) dlclose(library);
  }
};

namespace {

template <typename Fn>
Fn Find(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

// The PCI bus id of CUDA device `cuda_index` from the CUDA driver, or "" when the
// driver API is not available.
std::string CudaPciBusId(int cuda_index) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return "";
  using CuInit = int (*)(unsigned);
  using CuDeviceGet = int (*)(int*, int);
  using CuDeviceGetPciBusId = int (*)(char*, int, int);
  auto init = Find<CuInit>(driver, "cuInit");
  auto get = Find<CuDeviceGet>(driver, "cuDeviceGet");
  auto bus_id = Find<CuDeviceGetPciBusId>(driver, "cuDeviceGetPCIBusId");
  constexpr int kBusIdLength = 64;  // "dddd:bb:dd.f" plus slack
  char id[kBusIdLength] = {};
  int device = 0;
  std::string result;
  if (init != nullptr && get != nullptr && bus_id != nullptr && init(0) == 0 &&
      get(&device, cuda_index) == 0 && bus_id(id, kBusIdLength, device) == 0) {
    result = id;
  }
  dlclose(driver);
  return result;
}

}  // namespace

void GpuTelemetry::Series::Add(double v) {
  max = count == 0 ? v : std::max(max, v);
  sum += v;
  ++count;
}

nlohmann::json GpuTelemetry::Series::Mean() const {
  return count > 0 ? nlohmann::json(sum / count) : nlohmann::json(nullptr);
}

nlohmann::json GpuTelemetry::Series::Max() const {
  return count > 0 ? nlohmann::json(max) : nlohmann::json(nullptr);
}

std::unique_ptr<GpuTelemetry> GpuTelemetry::Open(int cuda_index, std::string* why_not,
                                                 const char* library) {
  auto n = std::make_unique<Nvml>();
  n->library = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (n->library == nullptr) {
    *why_not = std::string("NVML (") + library + ") is not installed on this host";
    return nullptr;
  }
  auto init = Find<nvml::Init>(n->library, "nvmlInit_v2");
  auto by_index = Find<nvml::GetHandleByIndex>(n->library, "nvmlDeviceGetHandleByIndex_v2");
  auto by_bus = Find<nvml::GetHandleByPciBusId>(n->library, "nvmlDeviceGetHandleByPciBusId_v2");
  n->shutdown = Find<nvml::Shutdown>(n->library, "nvmlShutdown");
  n->utilization = Find<nvml::GetUtilization>(n->library, "nvmlDeviceGetUtilizationRates");
  n->memory = Find<nvml::GetMemory>(n->library, "nvmlDeviceGetMemoryInfo");
  n->clock = Find<nvml::GetClock>(n->library, "nvmlDeviceGetClockInfo");
  n->temperature = Find<nvml::GetTemperature>(n->library, "nvmlDeviceGetTemperature");
  n->power = Find<nvml::GetPower>(n->library, "nvmlDeviceGetPowerUsage");
  n->energy = Find<nvml::GetTotalEnergy>(n->library, "nvmlDeviceGetTotalEnergyConsumption");
  if (init == nullptr || by_index == nullptr || n->shutdown == nullptr ||
      n->utilization == nullptr || n->memory == nullptr || n->clock == nullptr ||
      n->temperature == nullptr || n->power == nullptr) {
    *why_not = std::string(library) + " lacks the NVML functions used (driver too old?)";
    return nullptr;
  }
  if (const nvml::Return r = init(); r != nvml::kSuccess) {
    *why_not = "nvmlInit_v2 failed with NVML error " + std::to_string(r);
    return nullptr;
  }
  n->initialised = true;
  const std::string bus_id = CudaPciBusId(cuda_index);
  const nvml::Return r = !bus_id.empty() && by_bus != nullptr
                             ? by_bus(bus_id.c_str(), &n->device)
                             : by_index(static_cast<unsigned>(cuda_index), &n->device);
  if (r != nvml::kSuccess) {
    *why_not = "NVML does not know CUDA device " + std::to_string(cuda_index) +
               (bus_id.empty() ? "" : " (PCI " + bus_id + ")") + ": NVML error " +
               std::to_string(r);
    return nullptr;
  }
  return std::unique_ptr<GpuTelemetry>(new GpuTelemetry(std::move(n)));
}

GpuTelemetry::GpuTelemetry(std::unique_ptr<Nvml> nvml) : nvml_(std::move(nvml)) {}

GpuTelemetry::~GpuTelemetry() {
  if (thread_.joinable()) Stop();
}

void GpuTelemetry::SampleOnce() {
  constexpr double kBytesPerMiB = 1024.0 * 1024.0;
  constexpr double kMilliwattsPerWatt = 1000.0;
  nvml::Utilization util{};
  nvml::Memory memory{};
  unsigned int clock = 0, temperature = 0, power = 0;
  const Nvml& n = *nvml_;
  const bool util_ok = n.utilization(n.device, &util) == nvml::kSuccess;
  const bool memory_ok = n.memory(n.device, &memory) == nvml::kSuccess;
  const bool clock_ok = n.clock(n.device, nvml::kClockSm, &clock) == nvml::kSuccess;
  const bool temp_ok =
      n.temperature(n.device, nvml::kTemperatureGpu, &temperature) == nvml::kSuccess;
  const bool power_ok = n.power(n.device, &power) == nvml::kSuccess;
  std::lock_guard<std::mutex> lock(mutex_);
  ++samples_;
  if (util_ok) util_.Add(util.gpu);
  if (memory_ok) mem_mb_.Add(static_cast<double>(memory.used) / kBytesPerMiB);
  if (clock_ok) clock_mhz_.Add(clock);
  if (temp_ok) temp_c_.Add(temperature);
  if (power_ok) power_w_.Add(power / kMilliwattsPerWatt);
}

std::optional<double> GpuTelemetry::EnergyJoules(std::string* why_not) {
  constexpr double kMillijoulesPerJoule = 1000.0;
  if (nvml_->energy == nullptr) {
    *why_not = "NVML lacks nvmlDeviceGetTotalEnergyConsumption (driver too old)";
    return std::nullopt;
  }
  unsigned long long millijoules = 0;
  if (const nvml::Return r = nvml_->energy(nvml_->device, &millijoules); r != nvml::kSuccess) {
    *why_not = "nvmlDeviceGetTotalEnergyConsumption failed with NVML error " + std::to_string(r) +
               " (the GPU has no energy counter before Volta)";
    return std::nullopt;
  }
  return static_cast<double>(millijoules) / kMillijoulesPerJoule;
}

void GpuTelemetry::Run(std::chrono::milliseconds period) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (wake_.wait_for(lock, period, [this] { return stop_; })) break;
    lock.unlock();
    SampleOnce();
    lock.lock();
  }
}

void GpuTelemetry::Start(std::chrono::milliseconds period) {
  SampleOnce();
  thread_ = std::thread([this, period] { Run(period); });
}

nlohmann::json GpuTelemetry::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  SampleOnce();
  std::lock_guard<std::mutex> lock(mutex_);
  return {{"samples", samples_},
          {"util_pct_mean", util_.Mean()},
          {"util_pct_max", util_.Max()},
          {"mem_used_mb_max", mem_mb_.Max()},
          {"sm_clock_mhz_mean", clock_mhz_.Mean()},
          {"temp_c_max", temp_c_.Max()},
          {"power_w_mean", power_w_.Mean()}};
}

}  // namespace benchfleet::worker
