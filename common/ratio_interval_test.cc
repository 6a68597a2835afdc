#include "common/ratio_interval.h"

#include <gtest/gtest.h>

#include <cmath>

namespace benchfleet {
namespace {

TEST(RatioIntervalTest, StudentTMatchesItsTables) {
  // Two-sided 95% points and the one-sided 80% point, from the published tables.
  EXPECT_NEAR(StudentT975(1), 12.706, 1e-3);
  EXPECT_NEAR(StudentT975(4), 2.776, 1e-3);
  EXPECT_NEAR(StudentT975(9), 2.262, 1e-3);
  EXPECT_NEAR(StudentT975(40), 2.021, 1e-3);
  EXPECT_NEAR(StudentT975(1000), 1.962, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.995, 8), 3.355, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.8, 10), 0.879, 1e-3);
  EXPECT_NEAR(StudentTQuantile(0.025, 4), -2.776, 1e-3);
  EXPECT_NEAR(StudentTCdf(0, 3), 0.5, 1e-12);
  EXPECT_NEAR(StudentTCdf(2.776, 4), 0.975, 1e-4);
  EXPECT_NEAR(StudentTCdf(-2.776, 4), 0.025, 1e-4);
  EXPECT_NEAR(StudentTCdf(1.5, 7.3) + StudentTCdf(-1.5, 7.3), 1, 1e-12);
  EXPECT_TRUE(std::isinf(StudentT975(0)));
}

TEST(RatioIntervalTest, AGeometricIntervalNeverReachesZero) {
  // Process medians that vary by ratios: a wide spread stays positive.
  const GeometricSummary wide = SummarizeGeometric({0.05, 0.2, 0.1, 0.09, 0.3});
  ASSERT_TRUE(wide.low && wide.high);
  EXPECT_GT(*wide.low, 0);
  EXPECT_LT(*wide.low, wide.mean);
  EXPECT_GT(*wide.high, wide.mean);
  // The geometric mean, and the interval symmetric on the log scale.
  const GeometricSummary s = SummarizeGeometric({1, 4});
  EXPECT_NEAR(s.mean, 2, 1e-12);
  EXPECT_NEAR(std::log(*s.high) - std::log(s.mean), std::log(s.mean) - std::log(*s.low), 1e-12);
  // exp(mean log +- t(1) x sd x sqrt(2/2)): sd of {0, log 4} is log(4) / sqrt(2).
  EXPECT_NEAR(std::log(*s.high), std::log(2) + 12.706 * std::log(4) / std::sqrt(2), 1e-2);
  const GeometricSummary one = SummarizeGeometric({0.5});
  EXPECT_EQ(one.count, 1);
  EXPECT_FALSE(one.low.has_value());
  EXPECT_TRUE(std::isinf(one.relative_half_width()));
  EXPECT_EQ(SummarizeGeometric({0, -1, 2}).count, 1);  // a time is positive
}

TEST(RatioIntervalTest, PairedRatioIsATIntervalOnTheLogRatios) {
  const std::vector<double> d = {std::log(1.05), std::log(1.04), std::log(1.06), std::log(1.05)};
  const RatioEstimate r = PairedRatio(d);
  EXPECT_TRUE(r.paired);
  EXPECT_EQ(r.count_a, 4);
  EXPECT_NEAR(r.ratio, 1.05, 2e-3);
  EXPECT_LT(r.low, r.ratio);
  EXPECT_GT(r.high, r.ratio);
  EXPECT_GT(r.low, 1.02);  // four pairs pin a 5% change to about +-1.3%
  EXPECT_LT(r.p, 0.01);
  EXPECT_DOUBLE_EQ(r.df, 3);
  // One pair: no interval.
  EXPECT_FALSE(PairedRatio({0.1}).valid());
  // Pairs that agree exactly: a point, and "no change" is out unless the ratio is 1.
  const RatioEstimate exact = PairedRatio({0.1, 0.1, 0.1});
  EXPECT_NEAR(exact.low, std::exp(0.1), 1e-12);
  EXPECT_EQ(exact.p, 0);
}

TEST(RatioIntervalTest, UnpairedRatioIsWelchOnTheLogs) {
  const std::vector<double> a = {1.0, 1.1, 0.9, 1.05, 0.95};
  const std::vector<double> b = {2.0, 2.2, 1.8, 2.1, 1.9};
  const RatioEstimate r = UnpairedRatio(a, b);
  EXPECT_FALSE(r.paired);
  EXPECT_NEAR(r.ratio, 2, 1e-9);  // b is a times 2: the logs differ by log 2 exactly
  // Equal spreads of the logs: Welch's df is the pooled 2(n-1).
  EXPECT_NEAR(r.df, 8, 1e-9);
  EXPECT_LT(r.p, 1e-6);
  const RatioEstimate same = UnpairedRatio(a, a);
  EXPECT_NEAR(same.ratio, 1, 1e-12);
  EXPECT_NEAR(same.p, 1, 1e-12);
  EXPECT_LT(same.low, 1);
  EXPECT_GT(same.high, 1);
  EXPECT_FALSE(UnpairedRatio({1.0}, b).valid());
}

TEST(RatioIntervalTest, TheVerdictNeedsBothTheTestAndTheSize) {
  // 5% slower, known to +-1%: slower at a 1% threshold, unchanged at 10%.
  const RatioEstimate r = PairedRatio({0.049, 0.051, 0.048, 0.050, 0.050, 0.049});
  EXPECT_EQ(Judge(r, 0.05, 1.01).change, Change::kSlower);
  EXPECT_EQ(Judge(r, 0.05, 1.10).change, Change::kUnchanged);
  EXPECT_NEAR(Judge(r, 0.05, 1.10).detectable, 0.10, 1e-12);  // the threshold's own
  // The mirror image is faster.
  const RatioEstimate f = PairedRatio({-0.049, -0.051, -0.048, -0.050, -0.050, -0.049});
  EXPECT_EQ(Judge(f, 0.05, 1.01).change, Change::kFaster);
  // A large change the data cannot tell from noise is unchanged, and says what it could
  // have found.
  const RatioEstimate noisy = PairedRatio({0.3, -0.2, 0.25});
  const Verdict v = Judge(noisy, 0.05, 1.01);
  EXPECT_EQ(v.change, Change::kUnchanged);
  EXPECT_GT(v.detectable, 0.3);
  EXPECT_EQ(DescribeDetectable(0.041), "could detect >= 4.1%");
}

TEST(RatioIntervalTest, TheDetectableChangeShrinksWithTheStandardError) {
  RatioEstimate r;
  r.df = 10;
  r.se_log = 0.01;
  const double at_01 = DetectableChange(r, 0.05);
  // (t(0.975, 10) + t(0.8, 10)) x 0.01 = (2.228 + 0.879) x 0.01
  EXPECT_NEAR(at_01, std::expm1(0.03107), 2e-4);
  r.se_log = 0.005;
  EXPECT_LT(DetectableChange(r, 0.05), at_01);
  EXPECT_TRUE(std::isinf(DetectableChange(RatioEstimate{}, 0.05)));
}

}  // namespace
}  // namespace benchfleet
