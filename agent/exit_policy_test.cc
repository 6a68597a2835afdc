// When an agent leaves by itself: idle long enough or its jobs done, and only once
// nothing runs and every result is acknowledged.
#include "agent/exit_policy.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

using namespace std::chrono_literals;

const MonoTime kStart = MonoTime() + 1h;

ExitPolicyOptions Options(std::optional<Millis> when_idle, std::optional<int64_t> max_jobs) {
  ExitPolicyOptions options;
  options.when_idle = when_idle;
  options.max_jobs = max_jobs;
  return options;
}

TEST(ExitPolicyTest, WithoutOptionsItNeverLeaves) {
  ExitPolicy policy({}, kStart);
  EXPECT_FALSE(policy.Due(kStart + 1000h, false, 0));
  policy.JobEnded(kStart);
  EXPECT_TRUE(policy.TakesJobs());
}

TEST(ExitPolicyTest, IdleCountsFromTheLastOfferOrJob) {
  ExitPolicy policy(Options(30000ms, std::nullopt), kStart);
  EXPECT_FALSE(policy.Due(kStart + 29999ms, false, 0));
  EXPECT_EQ(policy.Due(kStart + 30s, false, 0), "idle for 30 s (--exit-when-idle)");
  policy.Active(kStart + 20s);  // an offer, or a job that ran until then
  EXPECT_FALSE(policy.Due(kStart + 49999ms, false, 0));
  EXPECT_TRUE(policy.Due(kStart + 50s, false, 0));
  policy.JobEnded(kStart + 60s);
  EXPECT_FALSE(policy.Due(kStart + 89999ms, false, 0));
  EXPECT_TRUE(policy.Due(kStart + 90s, false, 0));
  ExitPolicy fractional(Options(1500ms, std::nullopt), kStart);
  EXPECT_EQ(fractional.Due(kStart + 2s, false, 0), "idle for 1.5 s (--exit-when-idle)");
}

TEST(ExitPolicyTest, NeverWhileBusyOrWithResultsNotAcknowledged) {
  ExitPolicy policy(Options(1000ms, 1), kStart);
  EXPECT_FALSE(policy.Due(kStart + 1h, /*busy=*/true, 0));
  EXPECT_FALSE(policy.Due(kStart + 1h, false, /*spooled=*/1));
  EXPECT_TRUE(policy.Due(kStart + 1h, false, 0));
}

TEST(ExitPolicyTest, AfterMaxJobsNoMoreAreTakenAndItLeavesOnceAcknowledged) {
  ExitPolicy policy(Options(std::nullopt, 2), kStart);
  policy.JobEnded(kStart);
  EXPECT_TRUE(policy.TakesJobs());
  EXPECT_FALSE(policy.Due(kStart, false, 0));
  policy.JobEnded(kStart + 1s);
  EXPECT_FALSE(policy.TakesJobs());
  EXPECT_FALSE(policy.Due(kStart + 1s, false, 1));  // its result is not acknowledged yet
  EXPECT_EQ(policy.Due(kStart + 1s, false, 0), "ran 2 jobs (--max-jobs)");
  ExitPolicy one(Options(std::nullopt, 1), kStart);
  one.JobEnded(kStart);
  EXPECT_EQ(one.Due(kStart, false, 0), "ran 1 job (--max-jobs)");
}

}  // namespace
}  // namespace benchfleet
