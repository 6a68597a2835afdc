#include "common/cpu_list.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

TEST(CpuListTest, CpuListsRoundTrip) {
  auto cpus = ParseCpuList("0-3,6,8-9,2");
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 6, 8, 9}));
  EXPECT_EQ(FormatCpuList(*cpus), "0-3,6,8-9");
}

TEST(CpuListTest, BadCpuListsAreRejected) {
  for (const char* bad : {"", "a", "1-", "3-1", "1,,2", "-1", "0-99999", "1x"}) {
    SCOPED_TRACE(bad);
    auto cpus = ParseCpuList(bad);
    EXPECT_FALSE(cpus.ok());
  }
}

}  // namespace
}  // namespace benchfleet
