#include "worker/measure/quantile_interval.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace benchfleet::worker {
namespace {

std::vector<double> OneToN(std::size_t n) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), 1.0);
  return v;
}

std::vector<double> Sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The ranks the binomial gives (checked against a direct summation of
// Binomial(n, q) in Python: n = 10 -> [2, 9], 13 -> [3, 11], 100 -> [40, 61],
// 2000 -> [956, 1045]; p99 at n = 368 -> [360, 368], 1000 -> [983, 997]).
TEST(QuantileConfidenceIntervalTest, RanksAreTheBinomialOnes) {
  struct Case {
    std::size_t n;
    double q;
    std::size_t low, high;
  };
  for (const Case& c :
       {Case{10, 0.5, 2, 9}, Case{13, 0.5, 3, 11}, Case{100, 0.5, 40, 61},
        Case{2000, 0.5, 956, 1045}, Case{368, 0.99, 360, 368}, Case{1000, 0.99, 983, 997}}) {
    const auto interval = QuantileConfidenceInterval(OneToN(c.n), c.q, 1);
    ASSERT_TRUE(interval) << c.n << " " << c.q;
    EXPECT_EQ(interval->low_rank, c.low) << c.n << " " << c.q;
    EXPECT_EQ(interval->high_rank, c.high) << c.n << " " << c.q;
    // With samples 1..n, the values are the ranks.
    EXPECT_DOUBLE_EQ(interval->low, static_cast<double>(c.low));
    EXPECT_DOUBLE_EQ(interval->high, static_cast<double>(c.high));
  }
}

TEST(QuantileConfidenceIntervalTest, TheNormalApproximationTakesOverWithinARank) {
  const auto exact = QuantileConfidenceInterval(OneToN(kExactBinomialMaxSamples), 0.5, 1);
  const auto normal = QuantileConfidenceInterval(OneToN(kExactBinomialMaxSamples + 1), 0.5, 1);
  ASSERT_TRUE(exact && normal);
  EXPECT_LE(std::abs(static_cast<double>(normal->low_rank) - static_cast<double>(exact->low_rank)),
            1);
  EXPECT_LE(
      std::abs(static_cast<double>(normal->high_rank) - static_cast<double>(exact->high_rank)), 2);
}

TEST(QuantileConfidenceIntervalTest, TooFewSamplesHaveNoInterval) {
  // Five samples all above (or all below) the median happen with probability 1/16.
  EXPECT_FALSE(QuantileConfidenceInterval(OneToN(5), 0.5, 1));
  EXPECT_TRUE(QuantileConfidenceInterval(OneToN(6), 0.5, 1));
  // A p99 needs 0.99^n <= 0.025.
  EXPECT_FALSE(QuantileConfidenceInterval(OneToN(367), 0.99, 1));
  EXPECT_TRUE(QuantileConfidenceInterval(OneToN(368), 0.99, 1));
  EXPECT_FALSE(QuantileConfidenceInterval({}, 0.5, 1));
  EXPECT_FALSE(QuantileConfidenceInterval(OneToN(100), 1.0, 1));
}

TEST(QuantileConfidenceIntervalTest, DependenceWidensTheRanksBySqrtTau) {
  const auto independent = QuantileConfidenceInterval(OneToN(2001), 0.5, 1);
  const auto dependent = QuantileConfidenceInterval(OneToN(2001), 0.5, 4);
  ASSERT_TRUE(independent && dependent);
  const double centre = 1001;
  EXPECT_NEAR(centre - static_cast<double>(dependent->low_rank),
              2 * (centre - static_cast<double>(independent->low_rank)), 1);
  EXPECT_NEAR(static_cast<double>(dependent->high_rank) - centre,
              2 * (static_cast<double>(independent->high_rank) - centre), 1);
  // Widened past the ends: no interval.
  EXPECT_FALSE(QuantileConfidenceInterval(OneToN(20), 0.5, 100));
}

TEST(SerialVarianceFactorTest, IndependentSamplesAreNearOneAndNeverBelow) {
  std::mt19937 random(7);
  std::exponential_distribution<double> draw(1.0);
  std::vector<double> x(4000);
  for (double& v : x) v = draw(random);
  const double tau = SerialVarianceFactor(x, Sorted(x)[x.size() / 2]);
  EXPECT_GE(tau, 1.0);
  EXPECT_LT(tau, 1.3);
  // Alternating around the median: negative dependence is not allowed to narrow it.
  std::vector<double> alternating;
  for (int i = 0; i < 100; ++i) alternating.push_back(i % 2 ? 2.0 : 1.0);
  EXPECT_DOUBLE_EQ(SerialVarianceFactor(alternating, 1.5), 1.0);
  EXPECT_DOUBLE_EQ(SerialVarianceFactor(std::vector<double>(50, 3.0), 3.0), 1.0);
}

// A Gaussian AR(1) series x_t = phi x_{t-1} + e_t: its median's indicators have
// autocorrelations (2 / pi) asin(phi^k), so tau = 1 + 2 sum_k (2 / pi) asin(0.8^k) = 6.39.
std::vector<double> Ar1(std::mt19937& random, std::size_t n, double phi) {
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> x(n);
  double previous = noise(random) / std::sqrt(1 - phi * phi);  // stationary start
  for (double& v : x) v = previous = phi * previous + noise(random);
  return x;
}

TEST(SerialVarianceFactorTest, FindsTheDependenceOfAnAutoregressiveSeries) {
  std::mt19937 random(11);
  const std::vector<double> x = Ar1(random, 20000, 0.8);
  const double tau = SerialVarianceFactor(x, Sorted(x)[x.size() / 2]);
  EXPECT_GT(tau, 5.0);
  EXPECT_LT(tau, 8.0);
}

// The reason for the widening: with dependent samples the order-statistic interval of
// independent ones covers the true median far less often than it says.
TEST(QuantileConfidenceIntervalTest, CoversTheTrueMedianOfDependentSamples) {
  std::mt19937 random(3);
  constexpr int kRepetitions = 400;
  int covered_widened = 0;
  int covered_independent = 0;
  for (int r = 0; r < kRepetitions; ++r) {
    const std::vector<double> x = Ar1(random, 1000, 0.8);  // true median 0
    const std::vector<double> sorted = Sorted(x);
    const double tau = SerialVarianceFactor(x, sorted[sorted.size() / 2]);
    const auto widened = QuantileConfidenceInterval(sorted, 0.5, tau);
    const auto independent = QuantileConfidenceInterval(sorted, 0.5, 1);
    if (widened && widened->low <= 0 && widened->high >= 0) ++covered_widened;
    if (independent && independent->low <= 0 && independent->high >= 0) ++covered_independent;
  }
  EXPECT_GE(covered_widened, 0.90 * kRepetitions);
  EXPECT_LT(covered_independent, 0.75 * kRepetitions);
}

TEST(QuantileConfidenceIntervalTest, CoversTheTrueMedianOfIndependentSamples) {
  std::mt19937 random(5);
  std::exponential_distribution<double> draw(1.0);
  const double true_median = std::log(2.0);
  constexpr int kRepetitions = 1000;
  int covered = 0;
  for (int r = 0; r < kRepetitions; ++r) {
    std::vector<double> x(200);
    for (double& v : x) v = draw(random);
    const std::vector<double> sorted = Sorted(x);
    const auto interval =
        QuantileConfidenceInterval(sorted, 0.5, SerialVarianceFactor(x, sorted[100]));
    if (interval && interval->low <= true_median && interval->high >= true_median) ++covered;
  }
  // The order-statistic interval is conservative: at least 95%, a little above.
  EXPECT_GE(covered, 0.935 * kRepetitions);
  EXPECT_LE(covered, 0.99 * kRepetitions);
}

}  // namespace
}  // namespace benchfleet::worker
