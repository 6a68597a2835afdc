#include "coordinator/core/pair_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace benchfleet {
namespace {

std::vector<double> Pairs(double ratio, double spread, int n, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> noise(0, spread);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(std::log(ratio) + noise(random));
  return out;
}

TEST(PairStatsTest, AFewPairsAreNeverEnough) {
  const PairRequest request;
  EXPECT_FALSE(PlanPairs(request, {}).done);
  EXPECT_FALSE(PlanPairs(request, {0.05}).done);
  EXPECT_FALSE(PlanPairs(request, {0.05, 0.05}).done);
}

TEST(PairStatsTest, AClearChangeStopsAsSoonAsEvenTheStricterIntervalIsBeyondTheThreshold) {
  const PairRequest request;  // precision 1%, min_change 1%, 20 pairs at most
  const PairPlan plan = PlanPairs(request, {std::log(1.050), std::log(1.052), std::log(1.049)});
  ASSERT_TRUE(plan.done);
  EXPECT_EQ(plan.stopped, "decided");
  EXPECT_EQ(plan.verdict.change, Change::kSlower);
  EXPECT_NEAR(plan.estimate.ratio, 1.05, 2e-3);
  EXPECT_NE(plan.why.find("99%"), std::string::npos) << plan.why;
  // Faster the same way.
  const PairPlan faster = PlanPairs(request, {std::log(0.95), std::log(0.951), std::log(0.949)});
  ASSERT_TRUE(faster.done);
  EXPECT_EQ(faster.verdict.change, Change::kFaster);
}

TEST(PairStatsTest, NoChangeStopsOnPrecisionAfterEnoughPairsAndSaysWhatItCouldHaveFound) {
  const PairRequest request;
  std::vector<double> pairs = {0.001, -0.002, 0.0015, -0.001};
  EXPECT_FALSE(PlanPairs(request, pairs).done) << "fewer than kPairsBeforePrecision";
  pairs.push_back(0.0005);
  const PairPlan plan = PlanPairs(request, pairs);
  ASSERT_TRUE(plan.done);
  EXPECT_EQ(plan.stopped, "precision");
  EXPECT_EQ(plan.verdict.change, Change::kUnchanged);
  EXPECT_LE(plan.reached, request.precision);
  EXPECT_GE(plan.verdict.detectable, request.min_change);
  EXPECT_LT(plan.verdict.detectable, 0.02);
}

TEST(PairStatsTest, NoisyPairsStopAtTheCapAndSayWhy) {
  PairRequest request;
  request.max_pairs = 6;
  const std::vector<double> pairs = Pairs(1.0, 0.2, 6, 7);
  EXPECT_FALSE(PlanPairs(request, {pairs.begin(), pairs.begin() + 5}).done);
  const PairPlan plan = PlanPairs(request, pairs);
  ASSERT_TRUE(plan.done);
  EXPECT_EQ(plan.stopped, "cap");
  EXPECT_EQ(plan.verdict.change, Change::kUnchanged);
  EXPECT_GT(plan.verdict.detectable, 0.1);
  EXPECT_NE(plan.why.find("cap of 6"), std::string::npos) << plan.why;
}

// The sequential rule as a whole, simulated: an A/A comparison is seldom called slower,
// a 5% change nearly always, at the spreads seen between pairs on 2-vCPU guests.
TEST(PairStatsTest, SimulatedAAandFivePercentRunsAreCalledAsTheyAre) {
  const PairRequest request;
  std::mt19937 random(11);
  for (const double spread : {0.01, 0.02, 0.03}) {
    int false_calls = 0, found = 0;
    constexpr int kRuns = 400;
    for (int run = 0; run < kRuns; ++run) {
      for (const double truth : {1.0, 1.05}) {
        std::normal_distribution<double> noise(std::log(truth), spread);
        std::vector<double> pairs;
        PairPlan plan;
        while (!plan.done) {
          pairs.push_back(noise(random));
          plan = PlanPairs(request, pairs);
        }
        if (plan.verdict.change == Change::kSlower) (truth == 1.0 ? false_calls : found) += 1;
      }
    }
    SCOPED_TRACE(spread);
    EXPECT_LE(false_calls, kRuns / 20);
    EXPECT_GE(found, kRuns * 9 / 10);
  }
}

}  // namespace
}  // namespace benchfleet
