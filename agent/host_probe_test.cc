#include "agent/host_probe.h"

#include <gtest/gtest.h>

#include "common/cpu_list.h"

namespace benchfleet {
namespace {

TEST(HostProbeTest, ReportsThisMachine) {
  auto host = ProbeHost();
  EXPECT_FALSE(host["hostname"].get<std::string>().empty());
  EXPECT_FALSE(host["machine_id"].get<std::string>().empty());
  EXPECT_GE(host["logical_cpus"].get<int>(), 1);
  EXPECT_GT(host["memory_mb"].get<int64_t>(), 0);
  auto allowed = ParseCpuList(host["allowed_cpus"].get<std::string>());
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(*allowed, AllowedCpus());
}

}  // namespace
}  // namespace benchfleet
