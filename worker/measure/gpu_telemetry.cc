#include "worker/measure/gpu_telemetry.h"

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
using GetTotalEnergy = Return (*)(Device,
                                  unsigned long long*);  // millijoules since the driver loaded
}  // namespace nvml

struct GpuTelemetry::Nvml {
  void* library = nullptr;
  bool initialised = false;
  nvml::Device device = nullptr;
  nvml::Shutdown shutdown = nullptr;
  nvml::GetUtilization utilization = nullptr;
  nvml::GetMemory memory = nullptr;
  nvml::GetClock clock = nullptr;
  // Optional: null where NVML lacks them (the counters are then null).
  nvml::GetTemperature temperature = nullptr;
  nvml::GetPower power = nullptr;
  nvml::GetTotalEnergy energy = nullptr;  // Volta and later

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

template <typename Fn>
Fn Find(const NvmlLookup& lookup, const char* name) {
  return reinterpret_cast<Fn>(lookup(name));
}

// power_source values (schemas/worker.md, gpu_telemetry).
constexpr const char* kPowerFromEnergyCounter = "energy_counter";
constexpr const char* kPowerFromPowerUsage = "power_usage_mean";

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
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    *why_not = std::string("NVML (") + library + ") is not installed on this host";
    return nullptr;
  }
  auto telemetry =
      OpenWith([handle](const char* name) { return dlsym(handle, name); }, cuda_index, why_not);
  if (telemetry == nullptr) {
    dlclose(handle);
    *why_not = std::string(library) + ": " + *why_not;
    return nullptr;
  }
  telemetry->nvml_->library = handle;  // closed after nvmlShutdown, with the object
  return telemetry;
}

std::unique_ptr<GpuTelemetry> GpuTelemetry::OpenWith(const NvmlLookup& lookup, int cuda_index,
                                                     std::string* why_not, Clock& clock) {
  auto n = std::make_unique<Nvml>();
  auto init = Find<nvml::Init>(lookup, "nvmlInit_v2");
  auto by_index = Find<nvml::GetHandleByIndex>(lookup, "nvmlDeviceGetHandleByIndex_v2");
  auto by_bus = Find<nvml::GetHandleByPciBusId>(lookup, "nvmlDeviceGetHandleByPciBusId_v2");
  n->shutdown = Find<nvml::Shutdown>(lookup, "nvmlShutdown");
  n->utilization = Find<nvml::GetUtilization>(lookup, "nvmlDeviceGetUtilizationRates");
  n->memory = Find<nvml::GetMemory>(lookup, "nvmlDeviceGetMemoryInfo");
  n->clock = Find<nvml::GetClock>(lookup, "nvmlDeviceGetClockInfo");
  n->temperature = Find<nvml::GetTemperature>(lookup, "nvmlDeviceGetTemperature");
  n->power = Find<nvml::GetPower>(lookup, "nvmlDeviceGetPowerUsage");
  n->energy = Find<nvml::GetTotalEnergy>(lookup, "nvmlDeviceGetTotalEnergyConsumption");
  std::string missing;
  for (const auto& [name, found] : {std::pair<const char*, bool>{"nvmlInit_v2", init != nullptr},
                                    {"nvmlDeviceGetHandleByIndex_v2", by_index != nullptr},
                                    {"nvmlShutdown", n->shutdown != nullptr},
                                    {"nvmlDeviceGetUtilizationRates", n->utilization != nullptr},
                                    {"nvmlDeviceGetMemoryInfo", n->memory != nullptr},
                                    {"nvmlDeviceGetClockInfo", n->clock != nullptr}}) {
    if (!found) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  if (!missing.empty()) {
    *why_not = "NVML lacks " + missing + " (driver too old?)";
    return nullptr;
  }
  if (const nvml::Return r = init(); r != nvml::kSuccess) {
    *why_not = "nvmlInit_v2 failed with NVML error " + std::to_string(r);
    return nullptr;
  }
  n->initialised = true;
  const std::string bus_id = by_bus != nullptr ? CudaPciBusId(cuda_index) : std::string();
  const nvml::Return r = !bus_id.empty() ? by_bus(bus_id.c_str(), &n->device)
                                         : by_index(static_cast<unsigned>(cuda_index), &n->device);
  if (r != nvml::kSuccess) {
    *why_not = "NVML does not know CUDA device " + std::to_string(cuda_index) +
               (bus_id.empty() ? "" : " (PCI " + bus_id + ")") + ": NVML error " +
               std::to_string(r);
    return nullptr;
  }
  return std::unique_ptr<GpuTelemetry>(new GpuTelemetry(std::move(n), clock));
}

GpuTelemetry::GpuTelemetry(std::unique_ptr<Nvml> nvml, Clock& clock)
    : nvml_(std::move(nvml)), clock_(clock) {}

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
  const bool temp_ok = n.temperature != nullptr && n.temperature(n.device, nvml::kTemperatureGpu,
                                                                 &temperature) == nvml::kSuccess;
  const bool power_ok = n.power != nullptr && n.power(n.device, &power) == nvml::kSuccess;
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
  std::string no_counter;
  start_joules_ = EnergyJoules(&no_counter);
  start_seconds_ = clock_.WallSeconds();
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
  nlohmann::json power_w = nullptr, power_source = nullptr;
  std::string no_counter;
  const double joules =
      start_joules_ ? EnergyJoules(&no_counter).value_or(-1) - *start_joules_ : -1;
  const double seconds = clock_.WallSeconds() - start_seconds_;
  std::lock_guard<std::mutex> lock(mutex_);
  if (joules >= 0 && seconds > 0) {  // the counter read at both ends, and never went back
    power_w = joules / seconds;
    power_source = kPowerFromEnergyCounter;
  } else if (power_w_.count > 0) {
    power_w = power_w_.Mean();
    power_source = kPowerFromPowerUsage;
  }
  return {{"samples", samples_},
          {"util_pct_mean", util_.Mean()},
          {"util_pct_max", util_.Max()},
          {"mem_used_mb_max", mem_mb_.Max()},
          {"sm_clock_mhz_mean", clock_mhz_.Mean()},
          {"temp_c_max", temp_c_.Max()},
          {"power_w_mean", power_w},
          {"power_source", power_source}};
}

}  // namespace benchfleet::worker
