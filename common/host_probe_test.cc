#include "common/host_probe.h"

#include <gtest/gtest.h>

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

TEST(HostProbeTest, CpuListsRoundTrip) {
  auto cpus = ParseCpuList("0-3,6,8-9,2");
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 6, 8, 9}));
  EXPECT_EQ(FormatCpuList(*cpus), "0-3,6,8-9");
}

TEST(HostProbeTest, BadCpuListsAreRejected) {
  for (const char* bad : {"", "a", "1-", "3-1", "1,,2", "-1", "0-99999", "1x"}) {
    SCOPED_TRACE(bad);
    auto cpus = ParseCpuList(bad);
    EXPECT_FALSE(cpus.ok());
  }
}

}  // namespace
}  // namespace benchfleet
