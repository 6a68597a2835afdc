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
  EXPECT_NEAR(c.ratio, 1.2, 0.02);
  EXPECT_LT(c.test.p, kCompareAlpha);
  EXPECT_EQ(CompareSamples(base, run(8, 50)).change, Change::kFaster);
  // 2% slower: with many samples significant, but below the ratio: unchanged.
  c = CompareSamples(run(10, 400), run(10.2, 400));
  EXPECT_LT(c.test.p, kCompareAlpha);
  EXPECT_EQ(c.change, Change::kUnchanged);
  // 20% slower on three samples a side: large, but no test can say so: unchanged.
  c = CompareSamples(run(10, 3), run(12, 3));
  EXPECT_GT(c.test.p, kCompareAlpha);
  EXPECT_EQ(c.change, Change::kUnchanged);
  // The same distribution: unchanged.
  EXPECT_EQ(CompareSamples(run(10, 50), run(10, 50)).change, Change::kUnchanged);
}

TEST(CompareTest, WelchMatchesTheTextbookAndProcessesChangeOnlyWhenTheTestAndTheSizeAgree) {
  // {1, 2, 3} against {2, 3, 4}: t = 1 / sqrt(1/3 + 1/3) = 1.2247 on 4 degrees of
  // freedom, two-sided p = 0.2879 (scipy.stats.ttest_ind(..., equal_var=False)).
  const WelchTest w = WelchT({1, 2, 3}, {2, 3, 4});
  EXPECT_NEAR(w.t, 1.2247, 1e-4);
  EXPECT_NEAR(w.df, 4, 1e-9);
  EXPECT_NEAR(w.p, 0.2879, 5e-4);
  // t = 2 / (1.5811 x sqrt(2/5)) = 2 on 8 degrees of freedom: p = 0.0805.
  EXPECT_NEAR(WelchT({0, 1, 2, 3, 4}, {2, 3, 4, 5, 6}).p, 0.0805, 1e-3);
  const std::vector<double> base = {1.0, 1.01, 0.99, 1.005, 0.995};
  std::vector<double> slower;
  for (double m : base) slower.push_back(m * 1.1);
  EXPECT_EQ(CompareProcesses(base, slower).change, Change::kSlower);
  EXPECT_EQ(CompareProcesses(slower, base).change, Change::kFaster);
  // Processes that spread 10% cannot show a 10% step from five a side.
  const std::vector<double> wide = {1.0, 1.1, 0.9, 1.05, 0.95};
  std::vector<double> wide_slower;
  for (double m : wide) wide_slower.push_back(m * 1.1);
  EXPECT_EQ(CompareProcesses(wide, wide_slower).change, Change::kUnchanged);
  // 2% apart, tightly: significant, below the ratio.
  std::vector<double> close;
  for (double m : base) close.push_back(m * 1.02);
  const SampleComparison c = CompareProcesses(base, close);
  EXPECT_LT(c.test.p, kCompareProcessesAlpha);
  EXPECT_EQ(c.change, Change::kUnchanged);
}

TEST(CompareTest, TheHostsPaceExplainsAChangeTheSameWayUpToItsSquare) {
  // The host moved beyond 5% slower: a slowdown up to 1.2^2 = 1.44 is the host's.
  EXPECT_TRUE(HostPaceExplains(1.15, 1.2, 1.05));
  EXPECT_TRUE(HostPaceExplains(1.44, 1.2, 1.05));
  EXPECT_FALSE(HostPaceExplains(1.5, 1.2, 1.05)) << "beyond what the host explains: the code's";
  EXPECT_FALSE(HostPaceExplains(0.9, 1.2, 1.05)) << "faster on a slower host: the code's";
  EXPECT_FALSE(HostPaceExplains(1.15, 1.04, 1.05)) << "the host did not move";
  // And faster.
  EXPECT_TRUE(HostPaceExplains(0.8, 0.85, 1.05));
  EXPECT_FALSE(HostPaceExplains(0.6, 0.85, 1.05));
  EXPECT_FALSE(HostPaceExplains(1.1, 0.85, 1.05));
  // No pace, no explanation.
  EXPECT_FALSE(HostPaceExplains(1.15, 0, 1.05));
}

}  // namespace
}  // namespace benchfleet
