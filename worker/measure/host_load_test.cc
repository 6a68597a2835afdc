#include "worker/measure/host_load.h"

#include <gtest/gtest.h>

namespace benchfleet::worker {
namespace {

// /proc/stat of a 2-CPU guest (Linux 6.1), 100 ticks per second.
constexpr char kProcStatBefore[] =
    "cpu  8357 10 4151 25294 821 0 302 1134 0 0\n"
    "cpu0 3447 0 1661 14294 71 0 79 496 0 0\n"
    "cpu1 4909 0 2489 10999 750 0 223 637 0 0\n"
    "intr 1393411 0 9 0 0\n"
    "ctxt 2931423\n"
    "btime 1700000000\n";

TEST(ParseProcStatTest, ReadsTheAggregateLineInSeconds) {
  const std::optional<HostCpuTimes> t = ParseProcStat(kProcStatBefore, 100);
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(t->busy_s, (8357 + 10 + 4151 + 0 + 302) / 100.0);
  EXPECT_DOUBLE_EQ(t->idle_s, (25294 + 821) / 100.0);
  EXPECT_DOUBLE_EQ(t->steal_s, 11.34);
  EXPECT_DOUBLE_EQ(t->total_s, t->busy_s + t->idle_s + t->steal_s);
}

TEST(ParseProcStatTest, OldKernelsShortLineAndGarbage) {
  // Linux 2.4 had four fields.
  const std::optional<HostCpuTimes> t = ParseProcStat("cpu  100 0 50 850\n", 100);
  ASSERT_TRUE(t.has_value());
  EXPECT_DOUBLE_EQ(t->busy_s, 1.5);
  EXPECT_DOUBLE_EQ(t->steal_s, 0);
  EXPECT_FALSE(ParseProcStat("cpu  100 0\n", 100).has_value());
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4 5\n", 100).has_value());  // no aggregate line
  EXPECT_FALSE(ParseProcStat("", 100).has_value());
  EXPECT_FALSE(ParseProcStat(kProcStatBefore, 0).has_value());
}

HostCpuTimes Times(double busy, double idle, double steal) {
  return {busy, idle, steal, busy + idle + steal};
}

TEST(ComputeHostLoadTest, QuietHostIsNotDisturbed) {
  // 2 s on 2 CPUs: we used 1.9 s, everything else 0.1 s.
  const auto load = ComputeHostLoad(Times(100, 300, 1), Times(102, 302, 1), 1.9, 2);
  ASSERT_TRUE(load.has_value());
  EXPECT_NEAR(load->busy_cpus, 0.05, 1e-9);
  EXPECT_DOUBLE_EQ(load->steal_fraction, 0);
  EXPECT_FALSE(load->disturbed);
}

TEST(ComputeHostLoadTest, NeighbourBuildIsDisturbance) {
  // 1 s on 2 CPUs, both busy; one of them was ours.
  const auto load = ComputeHostLoad(Times(100, 300, 1), Times(102, 300, 1), 1.0, 1);
  ASSERT_TRUE(load.has_value());
  EXPECT_NEAR(load->busy_cpus, 1.0, 1e-9);
  EXPECT_TRUE(load->disturbed);
}

TEST(ComputeHostLoadTest, StealIsDisturbance) {
  // 10% of the CPU time went to other guests; nobody else ran here.
  const auto load = ComputeHostLoad(Times(100, 300, 1), Times(101.8, 300, 1.2), 1.8, 1);
  ASSERT_TRUE(load.has_value());
  EXPECT_NEAR(load->busy_cpus, 0, 1e-9);
  EXPECT_NEAR(load->steal_fraction, 0.1, 1e-9);
  EXPECT_TRUE(load->disturbed);
}

TEST(ComputeHostLoadTest, TickRoundingNeverGivesNegativeLoad) {
  const auto load = ComputeHostLoad(Times(100, 300, 0), Times(100.99, 301, 0), 1.0, 1);
  ASSERT_TRUE(load.has_value());
  EXPECT_DOUBLE_EQ(load->busy_cpus, 0);
}

TEST(ComputeHostLoadTest, NonsenseIntervalsGiveNothing) {
  EXPECT_FALSE(ComputeHostLoad(Times(100, 300, 0), Times(101, 301, 0), 1, 0).has_value());
  EXPECT_FALSE(ComputeHostLoad(Times(100, 300, 0), Times(99, 301, 0), 1, 1).has_value());
}

TEST(ReadHostCpuTimesTest, ThisHostHasProcStat) {
  const std::optional<HostCpuTimes> t = ReadHostCpuTimes();
  ASSERT_TRUE(t.has_value());
  EXPECT_GT(t->total_s, 0);
}

}  // namespace
}  // namespace benchfleet::worker
