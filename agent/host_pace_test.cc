#include "agent/host_pace.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <cmath>

#include "common/cpu_list.h"

namespace benchfleet {
namespace {

TEST(HostPaceTest, TheReferenceRunsOnEachJobCpuAndLeavesTheAgentsAffinityAsItWas) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  const HostPace pace = MeasureHostPace(allowed);
  const size_t measured = std::min(allowed.size(), kHostPaceMaxCpus);
  EXPECT_EQ(pace.cpus, std::vector<int>(allowed.begin(),
                                        allowed.begin() + static_cast<std::ptrdiff_t>(measured)));
  ASSERT_EQ(pace.cpu_ms.size(), measured);
  double sum = 0;
  for (double ms : pace.cpu_ms) {
    EXPECT_GT(ms, 0);
    sum += ms;
  }
  EXPECT_DOUBLE_EQ(pace.before_ms, sum / static_cast<double>(measured));
  EXPECT_DOUBLE_EQ(pace.ms, pace.before_ms);  // until the reading after
  EXPECT_EQ(AllowedCpus(), allowed) << "the agent's own affinity must be restored";
  const nlohmann::json facts = pace.ToJson();
  EXPECT_EQ(facts["ms"], pace.ms);
  EXPECT_EQ(facts["cpus"].size(), measured);
  EXPECT_FALSE(facts.contains("after_ms"));
}

TEST(HostPaceTest, TheReadingAfterTheWorkerBracketsItOnTheSameCpus) {
  const std::vector<int> allowed = AllowedCpus();
  HostPace pace = MeasureHostPace({allowed.front()});
  MeasureHostPaceAfter(&pace);
  ASSERT_TRUE(pace.after_ms.has_value());
  ASSERT_EQ(pace.after_cpu_ms.size(), 1u);
  EXPECT_GT(*pace.after_ms, 0);
  EXPECT_NEAR(pace.ms, std::sqrt(pace.before_ms * *pace.after_ms), 1e-12);
  const nlohmann::json facts = pace.ToJson();
  EXPECT_EQ(facts["after_ms"], *pace.after_ms);
  EXPECT_EQ(facts["before_ms"], pace.before_ms);
  EXPECT_EQ(AllowedCpus(), allowed);
}

TEST(HostPaceTest, ACpuTheAgentMayNotUseIsSkippedAndWithNoneItRunsWhereTheAgentRuns) {
  const std::vector<int> allowed = AllowedCpus();
  // CPU_SETSIZE - 1 exists on no machine this runs on: pinning to it fails.
  const HostPace some = MeasureHostPace({allowed.front(), CPU_SETSIZE - 1});
  EXPECT_EQ(some.cpus, std::vector<int>{allowed.front()});
  const HostPace none = MeasureHostPace({CPU_SETSIZE - 1});
  EXPECT_TRUE(none.cpus.empty());
  ASSERT_EQ(none.cpu_ms.size(), 1u);
  EXPECT_GT(none.ms, 0);
  EXPECT_EQ(AllowedCpus(), allowed);
}

}  // namespace
}  // namespace benchfleet
