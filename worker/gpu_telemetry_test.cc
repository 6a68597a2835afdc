#include "worker/gpu_telemetry.h"

#include <gtest/gtest.h>

namespace benchfleet::worker {
namespace {

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
                          "temp_c_max", "power_w_mean"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
}

}  // namespace
}  // namespace benchfleet::worker
