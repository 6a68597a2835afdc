#include "worker/measure/gpu_telemetry.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace benchfleet::worker {
namespace {

// A fake NVML: one GPU whose counters the test sets; a function can be left out, as an
// older driver's library lacks it.
struct FakeGpu {
  unsigned long long energy_mj = 0;
  int energy_status = 0;  // NVML_SUCCESS; 3 is NVML_ERROR_NOT_SUPPORTED
  unsigned int power_mw = 0;
  unsigned int temperature_c = 0;
};
FakeGpu fake_gpu;
int fake_device_token;

int FakeInit() { return 0; }
int FakeShutdown() { return 0; }
int FakeHandleByIndex(unsigned int index, void** device) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &fake_device_token;
  return 0;
}
int FakeUtilization(void*, unsigned int* util) {
  util[0] = 80;  // gpu
  util[1] = 40;  // memory
  return 0;
}
int FakeMemory(void*, unsigned long long* memory) {
  memory[0] = 16ull << 30;  // total
  memory[1] = 12ull << 30;  // free
  memory[2] = 4ull << 30;   // used
  return 0;
}
int FakeClockInfo(void*, int, unsigned int* mhz) {
  *mhz = 1980;
  return 0;
}
int FakeTemperature(void*, int, unsigned int* celsius) {
  *celsius = fake_gpu.temperature_c;
  return 0;
}
int FakePower(void*, unsigned int* milliwatts) {
  *milliwatts = fake_gpu.power_mw;
  return 0;
}
int FakeEnergy(void*, unsigned long long* millijoules) {
  *millijoules = fake_gpu.energy_mj;
  return fake_gpu.energy_status;
}

// The fake library's functions, less those named in `absent`.
NvmlLookup FakeNvml(std::set<std::string> absent = {}) {
  const std::map<std::string, void*> functions = {
      {"nvmlInit_v2", reinterpret_cast<void*>(&FakeInit)},
      {"nvmlShutdown", reinterpret_cast<void*>(&FakeShutdown)},
      {"nvmlDeviceGetHandleByIndex_v2", reinterpret_cast<void*>(&FakeHandleByIndex)},
      {"nvmlDeviceGetUtilizationRates", reinterpret_cast<void*>(&FakeUtilization)},
      {"nvmlDeviceGetMemoryInfo", reinterpret_cast<void*>(&FakeMemory)},
      {"nvmlDeviceGetClockInfo", reinterpret_cast<void*>(&FakeClockInfo)},
      {"nvmlDeviceGetTemperature", reinterpret_cast<void*>(&FakeTemperature)},
      {"nvmlDeviceGetPowerUsage", reinterpret_cast<void*>(&FakePower)},
      {"nvmlDeviceGetTotalEnergyConsumption", reinterpret_cast<void*>(&FakeEnergy)}};
  return [functions, absent](const char* name) -> void* {
    auto it = functions.find(name);
    return it == functions.end() || absent.count(name) ? nullptr : it->second;
  };
}

class FakeClock : public Clock {
 public:
  double WallSeconds() override { return seconds; }
  double ProcessCpuSeconds() override { return 0; }
  double seconds = 100;
};

// Sampled only at Start() and Stop(): the thread's period is far beyond the test.
constexpr std::chrono::hours kNoPeriodicSamples{1};

class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override { fake_gpu = FakeGpu{}; }
  FakeClock clock_;
};

TEST_F(FakeNvmlTest, PowerIsTheEnergyCountersDifferenceOverTheTimeBetweenStartAndStop) {
  std::string why_not;
  auto telemetry = GpuTelemetry::OpenWith(FakeNvml(), 0, &why_not, clock_);
  ASSERT_NE(telemetry, nullptr) << why_not;
  fake_gpu.energy_mj = 5'000'000;
  fake_gpu.power_mw = 100'000;  // the instantaneous reading says 100 W ...
  fake_gpu.temperature_c = 61;
  telemetry->Start(kNoPeriodicSamples);
  clock_.seconds += 2.0;
  fake_gpu.energy_mj += 700'000;  // ... the counter 700 J over 2 s
  fake_gpu.temperature_c = 67;
  const nlohmann::json summary = telemetry->Stop();
  EXPECT_EQ(summary.at("samples"), 2);
  EXPECT_DOUBLE_EQ(summary.at("power_w_mean").get<double>(), 350.0);
  EXPECT_EQ(summary.at("power_source"), "energy_counter");
  EXPECT_DOUBLE_EQ(summary.at("temp_c_max").get<double>(), 67.0);
  EXPECT_DOUBLE_EQ(summary.at("util_pct_mean").get<double>(), 80.0);
  EXPECT_DOUBLE_EQ(summary.at("mem_used_mb_max").get<double>(), 4096.0);
  EXPECT_DOUBLE_EQ(summary.at("sm_clock_mhz_mean").get<double>(), 1980.0);
}

TEST_F(FakeNvmlTest, WithoutAnEnergyCounterPowerIsTheMeanOfThePowerReadings) {
  for (const bool lacks_function : {true, false}) {
    std::string why_not;
    auto telemetry = GpuTelemetry::OpenWith(
        FakeNvml(lacks_function ? std::set<std::string>{"nvmlDeviceGetTotalEnergyConsumption"}
                                : std::set<std::string>{}),
        0, &why_not, clock_);
    ASSERT_NE(telemetry, nullptr) << why_not;
    fake_gpu.energy_status = lacks_function ? 0 : 3;  // the GPU has no counter (pre-Volta)
    fake_gpu.power_mw = 100'000;
    telemetry->Start(kNoPeriodicSamples);
    clock_.seconds += 2.0;
    fake_gpu.power_mw = 200'000;
    const nlohmann::json summary = telemetry->Stop();
    EXPECT_DOUBLE_EQ(summary.at("power_w_mean").get<double>(), 150.0) << lacks_function;
    EXPECT_EQ(summary.at("power_source"), "power_usage_mean") << lacks_function;
  }
}

// An older driver's NVML without temperature, power or energy still gives the rest.
TEST_F(FakeNvmlTest, TemperatureAndPowerAreOptional) {
  std::string why_not;
  auto telemetry =
      GpuTelemetry::OpenWith(FakeNvml({"nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage",
                                       "nvmlDeviceGetTotalEnergyConsumption"}),
                             0, &why_not, clock_);
  ASSERT_NE(telemetry, nullptr) << why_not;
  telemetry->Start(kNoPeriodicSamples);
  clock_.seconds += 1.0;
  const nlohmann::json summary = telemetry->Stop();
  EXPECT_EQ(summary.at("samples"), 2);
  EXPECT_DOUBLE_EQ(summary.at("util_pct_max").get<double>(), 80.0);
  EXPECT_TRUE(summary.at("temp_c_max").is_null());
  EXPECT_TRUE(summary.at("power_w_mean").is_null());
  EXPECT_TRUE(summary.at("power_source").is_null());
  std::string no_energy;
  EXPECT_FALSE(telemetry->EnergyJoules(&no_energy).has_value());
  EXPECT_NE(no_energy.find("nvmlDeviceGetTotalEnergyConsumption"), std::string::npos) << no_energy;
}

TEST_F(FakeNvmlTest, AMissingEssentialFunctionIsNamed) {
  std::string why_not;
  auto telemetry = GpuTelemetry::OpenWith(
      FakeNvml({"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetClockInfo"}), 0, &why_not, clock_);
  EXPECT_EQ(telemetry, nullptr);
  EXPECT_EQ(why_not,
            "NVML lacks nvmlDeviceGetUtilizationRates, nvmlDeviceGetClockInfo (driver too old?)");
}

TEST_F(FakeNvmlTest, AnUnknownDeviceIsReported) {
  std::string why_not;
  EXPECT_EQ(GpuTelemetry::OpenWith(FakeNvml(), 3, &why_not, clock_), nullptr);
  EXPECT_EQ(why_not, "NVML does not know CUDA device 3: NVML error 2");
}

TEST(GpuTelemetryTest, MissingLibraryIsReportedNotFatal) {
  std::string why_not;
  auto telemetry = GpuTelemetry::Open(0, &why_not, "libbenchfleet-no-such-nvml.so.1");
  EXPECT_EQ(telemetry, nullptr);
  EXPECT_NE(why_not.find("libbenchfleet-no-such-nvml.so.1"), std::string::npos) << why_not;
}

// On a host with NVML and a GPU this samples it; elsewhere it must say why not.
TEST(GpuTelemetryTest, RealNvmlSamplesOrExplains) {
  std::string why_not;
  auto telemetry = GpuTelemetry::Open(0, &why_not);
  if (telemetry == nullptr) {
    EXPECT_FALSE(why_not.empty());
    GTEST_SKIP() << "no NVML GPU here: " << why_not;
  }
  telemetry->Start(std::chrono::milliseconds(10));
  const nlohmann::json summary = telemetry->Stop();
  EXPECT_GE(summary.at("samples").get<int>(), 2);  // one at Start, one at Stop
  for (const char* key : {"util_pct_mean", "util_pct_max", "mem_used_mb_max", "sm_clock_mhz_mean",
                          "temp_c_max", "power_w_mean", "power_source"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
}

}  // namespace
}  // namespace benchfleet::worker
