#include "worker/measure/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace benchfleet::worker {
namespace {

TEST(QuantileTest, InterpolatesLinearlyLikeNumpy) {
  const std::vector<double> sorted = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Quantile(sorted, 0.0), 1);
  EXPECT_DOUBLE_EQ(Quantile(sorted, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(Quantile(sorted, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Quantile(sorted, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(Quantile(sorted, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(Quantile(sorted, 0.99), 3.97);
  EXPECT_DOUBLE_EQ(Quantile(sorted, 1.0), 4);
}

TEST(QuantileTest, SingleValueIsEveryQuantile) {
  const std::vector<double> sorted = {7};
  EXPECT_DOUBLE_EQ(Quantile(sorted, 0.0), 7);
  EXPECT_DOUBLE_EQ(Quantile(sorted, 0.99), 7);
  EXPECT_DOUBLE_EQ(Quantile(sorted, 1.0), 7);
}

TEST(RelativeIqrTest, HandlesZeroMedian) {
  EXPECT_DOUBLE_EQ(RelativeIqr({0, 0, 0}), 0);
  EXPECT_TRUE(std::isinf(RelativeIqr({-1, 0, 0, 1})));
  EXPECT_DOUBLE_EQ(RelativeIqr({1, 2, 3, 4}), 1.5 / 2.5);
}

TEST(SummarizeTest, ComputesEveryField) {
  // Unsorted on purpose; numpy on [1..10]: mean 5.5, std(ddof=1) 3.0276503540974917,
  // percentiles 25/50/75/90/99 = 3.25, 5.5, 7.75, 9.1, 9.91.
  const std::vector<double> samples = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
  const SampleStats s = Summarize(samples, 0.05);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.mean_ms, 5.5);
  EXPECT_NEAR(s.stdev_ms, 3.0276503540974917, 1e-12);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 10);
  EXPECT_DOUBLE_EQ(s.q1_ms, 3.25);
  EXPECT_DOUBLE_EQ(s.median_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.q3_ms, 7.75);
  EXPECT_DOUBLE_EQ(s.iqr_ms, 4.5);
  EXPECT_NEAR(s.p90_ms, 9.1, 1e-12);
  EXPECT_NEAR(s.p99_ms, 9.91, 1e-12);
  EXPECT_TRUE(s.noisy);
}

TEST(SummarizeTest, TheMediansIntervalComesWithIt) {
  // 1..10 in the order above: ranks 2 and 9 (Binomial(10, 0.5)); the indicators of
  // "below the median" alternate, a negative dependence that may not narrow it.
  const SampleStats s = Summarize({10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 0.05);
  ASSERT_TRUE(s.median_ci_low_ms && s.median_ci_high_ms && s.median_ci_relative);
  EXPECT_DOUBLE_EQ(*s.median_ci_low_ms, 2);
  EXPECT_DOUBLE_EQ(*s.median_ci_high_ms, 9);
  EXPECT_DOUBLE_EQ(*s.median_ci_relative, 3.5 / 5.5);
  EXPECT_DOUBLE_EQ(s.variance_factor, 1);
  EXPECT_DOUBLE_EQ(s.effective_n, 10);
  // Ten samples say nothing of p99.
  EXPECT_FALSE(s.p99_ci_low_ms);
  EXPECT_FALSE(s.p99_ci_high_ms);
}

TEST(SummarizeTest, NoisyMeansTheMedianIsNotKnownToTargetCi) {
  // 1000 samples spread evenly over [9, 11): IQR / median 10%, yet the median's
  // interval is a few tenths of a percent wide.
  std::vector<double> samples;
  for (int i = 0; i < 1000; ++i) samples.push_back(9 + 2.0 * ((i * 617) % 1000) / 1000);
  const SampleStats s = Summarize(samples, 0.01);
  EXPECT_NEAR(s.iqr_ms / s.median_ms, 0.1, 0.002);
  ASSERT_TRUE(s.median_ci_relative);
  EXPECT_LT(*s.median_ci_relative, 0.01);
  EXPECT_FALSE(s.noisy);
  EXPECT_TRUE(Summarize(samples, *s.median_ci_relative * 0.99).noisy);
  EXPECT_FALSE(Summarize(samples, *s.median_ci_relative).noisy);
  ASSERT_TRUE(s.p99_ci_low_ms && s.p99_ci_high_ms);
  EXPECT_LE(*s.p99_ci_low_ms, s.p99_ms);
  EXPECT_GE(*s.p99_ci_high_ms, s.p99_ms);
}

TEST(SummarizeTest, TooFewSamplesAreNoisyEvenWithoutSpread) {
  const std::vector<double> samples(kMinSamples - 1, 2.0);
  const SampleStats s = Summarize(samples, 0.05);
  EXPECT_DOUBLE_EQ(s.iqr_ms, 0);
  EXPECT_TRUE(s.noisy);
  EXPECT_FALSE(Summarize(std::vector<double>(kMinSamples, 2.0), 0.05).noisy);
}

TEST(SummarizeTest, SingleSampleHasZeroStdev) {
  const SampleStats s = Summarize({3.0}, 0.05);
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_DOUBLE_EQ(s.stdev_ms, 0);
}

TEST(SummarizeTest, EmptyInputIsNoisyWithNoSamples) {
  const SampleStats s = Summarize({}, 0.05);
  EXPECT_EQ(s.n, 0u);
  EXPECT_TRUE(s.noisy);
}

}  // namespace
}  // namespace benchfleet::worker
