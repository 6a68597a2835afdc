#include "agent/host_probe.h"

#include <gtest/gtest.h>

#include "common/cpu_list.h"

namespace benchfleet {
namespace {

TEST(HostProbeTest, ReportsThisMachine) {
  const HostFacts host = ProbeHost();
  EXPECT_FALSE(host.hostname.value_or("").empty());
  EXPECT_FALSE(host.machine_id.value_or("").empty());
  EXPECT_GE(host.logical_cpus.value_or(0), 1);
  EXPECT_GT(host.memory_mb.value_or(0), 0);
  EXPECT_TRUE(host.nvidia_driver.sent);  // null without a driver
  EXPECT_FALSE(host.benchfleet_version.value_or("").empty());
  auto allowed = ParseCpuList(host.allowed_cpus.value_or(""));
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(*allowed, AllowedCpus());
}

// What the agent sends of its host is what the coordinator reads back.
TEST(HostProbeTest, ReadsBackAsProbed) {
  const HostFacts host = ProbeHost();
  auto read = HostFacts::FromJson(host.ToJson(), "capabilities.host");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(*read == host) << host.ToJson().dump();
}

}  // namespace
}  // namespace benchfleet
