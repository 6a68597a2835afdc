#include "worker/stats.h"

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

TEST(SummarizeTest, NoisyFlagComparesIqrOverMedianWithTarget) {
  // IQR / median = 0.5 / 10 = 0.05 for 10 samples 9.5 x3, 10 x4, 10.5 x3... built directly:
  std::vector<double> samples(kMinSamples, 10.0);
  samples[0] = samples[1] = samples[2] = 9.0;
  samples[7] = samples[8] = samples[9] = 11.0;
  const double relative = RelativeIqr({9, 9, 9, 10, 10, 10, 10, 11, 11, 11});
  EXPECT_FALSE(Summarize(samples, relative + 1e-9).noisy);
  EXPECT_TRUE(Summarize(samples, relative).noisy);
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
