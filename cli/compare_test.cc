#include "cli/compare.h"

#include <gtest/gtest.h>

#include <random>

#include "common/host_pace.h"

namespace benchfleet {
namespace {

// Reference values by the textbook formulas (normal approximation, tie and continuity
// corrections), as scipy.stats.mannwhitneyu(method="asymptotic") computes them.
TEST(CompareTest, MannWhitneyMatchesTheTextbookFormulas) {
  std::vector<double> a, b;
  for (int i = 1; i <= 10; ++i) a.push_back(i), b.push_back(i + 10);
  MannWhitney t = MannWhitneyU(a, b);
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_NEAR(t.z, -3.7418482827913495, 1e-12);
  EXPECT_NEAR(t.p, 0.0001826717911095504, 1e-15);
  // Ties take their mean rank and shrink the variance.
  t = MannWhitneyU({1, 2, 2, 3}, {2, 3, 3, 4});
  EXPECT_DOUBLE_EQ(t.u, 3);
  EXPECT_NEAR(t.z, -1.365698202000489, 1e-12);
  EXPECT_NEAR(t.p, 0.17203370892182296, 1e-12);
  // Symmetric: B against A has the opposite z and the same p.
  const MannWhitney back = MannWhitneyU({2, 3, 3, 4}, {1, 2, 2, 3});
  EXPECT_NEAR(back.z, -t.z, 1e-12);
  EXPECT_NEAR(back.p, t.p, 1e-12);
  // All equal: no evidence at all.
  EXPECT_DOUBLE_EQ(MannWhitneyU({5, 5, 5}, {5, 5}).p, 1);
}

TEST(CompareTest, ACellChangesOnlyWhenTheTestAndTheSizeAgree) {
  std::mt19937 random(3);
  std::normal_distribution<double> noise(0, 0.02);
  auto run = [&](double level, int n) {
    std::vector<double> samples;
    for (int i = 0; i < n; ++i) samples.push_back(level * (1 + noise(random)));
    return samples;
  };
  const std::vector<double> base = run(10, 50);
  // 20% slower, 50 samples a side: significant and large.
  SampleComparison c = CompareSamples(base, run(12, 50));
  EXPECT_EQ(c.change, Change::kSlower);
  EXPECT_NEAR(c.estimate.ratio, 1.2, 0.02);
  EXPECT_LT(c.estimate.p, kCompareAlpha);
  EXPECT_EQ(CompareSamples(base, run(8, 50)).change, Change::kFaster);
  // 2% slower: with many samples significant, but below the ratio: unchanged.
  c = CompareSamples(run(10, 400), run(10.2, 400));
  EXPECT_LT(c.estimate.p, kCompareAlpha);
  EXPECT_EQ(c.change, Change::kUnchanged);
  // 20% slower on three samples a side: large, but no test can say so: unchanged.
  c = CompareSamples(run(10, 3), run(12, 3));
  EXPECT_GT(c.estimate.p, kCompareAlpha);
  EXPECT_EQ(c.change, Change::kUnchanged);
  // The same distribution: unchanged.
  EXPECT_EQ(CompareSamples(run(10, 50), run(10, 50)).change, Change::kUnchanged);
}

TEST(CompareTest, ProcessesChangeOnlyWhenTheTestOnTheirLogsAndTheSizeAgree) {
  const std::vector<double> base = {1.0, 1.01, 0.99, 1.005, 0.995};
  std::vector<double> slower;
  for (double m : base) slower.push_back(m * 1.1);
  const SampleComparison c = CompareProcesses(base, slower);
  EXPECT_EQ(c.change, Change::kSlower);
  EXPECT_NEAR(c.estimate.ratio, 1.1, 1e-12);  // the ratio of geometric means
  EXPECT_LT(c.estimate.low, 1.1);
  EXPECT_GT(c.estimate.high, 1.1);
  EXPECT_DOUBLE_EQ(c.estimate.confidence, 1 - kCompareProcessesAlpha);
  EXPECT_EQ(CompareProcesses(slower, base).change, Change::kFaster);
  // Processes that spread 10% cannot show a 10% step from five a side, and say what
  // they could have shown.
  const std::vector<double> wide = {1.0, 1.1, 0.9, 1.05, 0.95};
  std::vector<double> wide_slower;
  for (double m : wide) wide_slower.push_back(m * 1.1);
  const SampleComparison unsure = CompareProcesses(wide, wide_slower);
  EXPECT_EQ(unsure.change, Change::kUnchanged);
  EXPECT_GT(unsure.detectable, 0.1);
  // 2% apart, tightly: significant, below the ratio.
  std::vector<double> close;
  for (double m : base) close.push_back(m * 1.02);
  const SampleComparison small = CompareProcesses(base, close);
  EXPECT_LT(small.estimate.p, kCompareProcessesAlpha);
  EXPECT_EQ(small.change, Change::kUnchanged);
  EXPECT_NEAR(small.detectable, kCompareRatio - 1, 1e-12) << "the threshold is what it could say";
}

TEST(CompareTest, SamplesCarryTheMediansIntervalsIntoTheRatios) {
  std::vector<double> a, b;
  for (int i = 0; i < 40; ++i) a.push_back(1 + 0.001 * (i % 7)), b.push_back(1.2 + 0.001 * (i % 5));
  const SampleComparison c =
      CompareSamples(a, b, MedianInterval{0.99, 1.01}, MedianInterval{1.19, 1.21});
  EXPECT_EQ(c.change, Change::kSlower);
  EXPECT_TRUE(c.estimate.valid());
  EXPECT_LT(c.estimate.low, c.estimate.ratio);
  EXPECT_LT(c.detectable, 0.06);
  // Without intervals the ratio has none and the detectable change is the threshold's.
  const SampleComparison bare = CompareSamples(a, b);
  EXPECT_FALSE(bare.estimate.valid());
}

RatioEstimate Pace(double ratio, double p) {
  RatioEstimate pace;
  pace.ratio = ratio;
  pace.p = p;
  pace.df = 4;
  return pace;
}

TEST(CompareTest, TheHostsPaceExplainsAChangeOnlyBeyondItsNoiseTheSameWayUpToItsSquare) {
  // The host moved 20% slower, beyond its noise: a slowdown up to 1.2^2 = 1.44 is the host's.
  EXPECT_TRUE(HostPaceExplains(1.15, Pace(1.2, 0.001)));
  EXPECT_TRUE(HostPaceExplains(1.44, Pace(1.2, 0.001)));
  EXPECT_FALSE(HostPaceExplains(1.5, Pace(1.2, 0.001))) << "beyond what the host explains";
  EXPECT_FALSE(HostPaceExplains(0.9, Pace(1.2, 0.001))) << "faster on a slower host: the code's";
  // A pace that moved no further than its own readings vary explains nothing.
  EXPECT_FALSE(HostPaceExplains(1.15, Pace(1.2, 0.2)));
  // And faster.
  EXPECT_TRUE(HostPaceExplains(0.8, Pace(0.85, 0.001)));
  EXPECT_FALSE(HostPaceExplains(0.6, Pace(0.85, 0.001)));
  EXPECT_FALSE(HostPaceExplains(1.1, Pace(0.85, 0.001)));
  // No pace, no explanation; too few readings a side, no pace.
  EXPECT_FALSE(HostPaceExplains(1.15, std::nullopt));
  EXPECT_FALSE(HostPaceRatio({1, 1.1}, {2, 2.1, 2.2}).has_value());
  const std::optional<RatioEstimate> moved = HostPaceRatio({1, 1.02, 0.98}, {2, 2.04, 1.96});
  ASSERT_TRUE(moved.has_value());
  EXPECT_NEAR(moved->ratio, 2, 1e-9);
  EXPECT_TRUE(HostPaceExplains(3, moved));
  // The same pace twice did not move.
  EXPECT_FALSE(HostPaceExplains(1.1, HostPaceRatio({1, 1.02, 0.98}, {1, 1.02, 0.98})));
}

TEST(CompareTest, AChangeIsBeyondTheHostOnlyWhenItsIntervalIsBeyondThePacesSquare) {
  RatioEstimate change;
  change.df = 8;
  // The host ran 41% slower: up to 1.41^2 = 1.99 is the host's.
  change.ratio = 1.993, change.low = 1.21, change.high = 3.28;  // measured under a 30% loop
  EXPECT_FALSE(HostPaceExplains(change.ratio, Pace(1.41, 1e-6))) << "the ratio alone is beyond";
  EXPECT_TRUE(HostPaceExplains(change, Pace(1.41, 1e-6))) << "its interval reaches back within";
  change.ratio = 2.6, change.low = 2.1, change.high = 3.2;  // even its low end is beyond
  EXPECT_FALSE(HostPaceExplains(change, Pace(1.41, 1e-6)));
  // Faster: the interval's high end nearest 1.
  change.ratio = 0.5, change.low = 0.4, change.high = 0.75;
  EXPECT_TRUE(HostPaceExplains(change, Pace(0.8, 1e-6)));
  change.high = 0.6;
  EXPECT_FALSE(HostPaceExplains(change, Pace(0.8, 1e-6)));
  // An interval that reaches across 1 does not let a faster host explain a slowdown.
  change.ratio = 1.1, change.low = 0.95, change.high = 1.25;
  EXPECT_FALSE(HostPaceExplains(change, Pace(0.8, 1e-6)));
  EXPECT_TRUE(HostPaceExplains(change, Pace(1.2, 1e-6)));
  // No interval: the ratio.
  RatioEstimate bare;
  bare.ratio = 1.5;
  EXPECT_FALSE(HostPaceExplains(bare, Pace(1.2, 1e-6)));
  bare.ratio = 1.3;
  EXPECT_TRUE(HostPaceExplains(bare, Pace(1.2, 1e-6)));
  // The pace must still have moved beyond its noise.
  change.ratio = 1.3, change.low = 1.1, change.high = 1.5;
  EXPECT_FALSE(HostPaceExplains(change, Pace(1.2, 0.3)));
}

}  // namespace
}  // namespace benchfleet
