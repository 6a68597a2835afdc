// recommend's decisions on hand-made candidates: the Pareto set per host, the best one
// under an SLO and an accuracy limit, by each criterion, and the warnings.
#include "cli/recommend.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

Candidate Make(int64_t job, const std::string& host, const std::string& dtype, int64_t threads,
               int64_t batch, double throughput, double p99, std::optional<double> loss,
               std::optional<double> cost = std::nullopt) {
  Candidate c;
  c.job_id = job;
  c.host = host;
  c.device = "cpu";
  c.dtype = dtype;
  c.scenario = "offline";
  c.threads = threads;
  c.batch_size = batch;
  c.throughput_per_s = throughput;
  c.p99_ms = p99;
  c.accuracy_loss = loss;
  c.cost_per_1m = cost;
  c.currency = cost ? "USD" : "";
  return c;
}

std::vector<int64_t> Jobs(const std::vector<Candidate>& list) {
  std::vector<int64_t> jobs;
  for (const Candidate& c : list) jobs.push_back(c.job_id);
  return jobs;
}

TEST(RecommendTest, DominanceNeedsEveryObjectiveAtLeastAsGoodAndOneBetter) {
  const Candidate fast = Make(1, "a", "fp32", 2, 64, 1000, 5, 0);
  const Candidate slow = Make(2, "a", "fp32", 1, 64, 500, 8, 0);
  const Candidate lossy = Make(3, "a", "int8", 2, 64, 2000, 3, 0.02);
  EXPECT_TRUE(Dominates(fast, slow));
  EXPECT_FALSE(Dominates(slow, fast));
  EXPECT_FALSE(Dominates(fast, fast));   // equal is not better
  EXPECT_FALSE(Dominates(lossy, fast));  // faster, but loses accuracy
  EXPECT_FALSE(Dominates(fast, lossy));
  Candidate unmeasured = lossy;
  unmeasured.accuracy_loss.reset();  // unknown loss counts as worst
  EXPECT_TRUE(Dominates(lossy, unmeasured));
}

TEST(RecommendTest, ThePerHostParetoSetAndTheBestUnderTheConstraints) {
  const std::vector<Candidate> rows = {
      Make(1, "a", "fp32", 1, 1, 400, 2.5, 0),     // lowest latency
      Make(2, "a", "fp32", 2, 64, 9000, 7.1, 0),   // most exact throughput
      Make(3, "a", "fp32", 1, 64, 5000, 12.8, 0),  // dominated by 2
      Make(4, "a", "int8", 2, 64, 20000, 3.2, 0.03), Make(5, "b", "fp32", 2, 64, 3000, 21, 0)};
  RecommendOptions options;  // by throughput, no constraints
  auto r = Recommend(rows, options);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].host, "a");
  EXPECT_EQ(Jobs(r[0].pareto), (std::vector<int64_t>{4, 2, 1}));  // best first
  ASSERT_TRUE(r[0].best);
  EXPECT_EQ(r[0].best->job_id, 4);
  EXPECT_TRUE(r[0].warnings.empty());
  // At most 1% accuracy lost: int8 is out.
  options.max_accuracy_drop = 0.01;
  r = Recommend(rows, options);
  EXPECT_EQ(r[0].best->job_id, 2);
  // And p99 within 5 ms: only the batch-1 configuration is left on host a, none on b.
  options.slo_p99_ms = 5;
  r = Recommend(rows, options);
  EXPECT_EQ(r[0].best->job_id, 1);
  EXPECT_FALSE(r[1].best);
  ASSERT_EQ(r[1].warnings.size(), 1u);
  EXPECT_NE(r[1].warnings[0].find("no configuration meets the constraints (1 of 1 refused"),
            std::string::npos)
      << r[1].warnings[0];
  // By latency, without constraints.
  options = {};
  options.by = RecommendBy::kLatency;
  EXPECT_EQ(Recommend(rows, options)[0].best->job_id, 1);
}

TEST(RecommendTest, ByCostOrEnergyAndTheWarningsOfWhatTheBestRestsOn) {
  std::vector<Candidate> rows = {Make(1, "a", "fp32", 2, 64, 9000, 7, 0, 0.08),
                                 Make(2, "a", "fp32", 1, 64, 6000, 9, 0, 0.05)};
  rows[1].p99_ms = 6;  // cheaper and faster to answer, less throughput: both on the front
  RecommendOptions options;
  options.by = RecommendBy::kCost;
  auto r = Recommend(rows, options);
  EXPECT_EQ(r[0].pareto.size(), 2u);
  EXPECT_EQ(r[0].best->job_id, 2);
  EXPECT_TRUE(r[0].warnings.empty());
  rows[1].noisy = true;
  rows[1].stale = true;
  r = Recommend(rows, options);
  ASSERT_EQ(r[0].warnings.size(), 2u);
  EXPECT_NE(r[0].warnings[0].find("job 2 (cpu fp32, 1 thread, batch 64, offline) is noisy"),
            std::string::npos);
  EXPECT_NE(r[0].warnings[1].find("is stale"), std::string::npos);
  // No energy counter: the figure cannot decide, and the answer says so.
  options.by = RecommendBy::kEnergy;
  r = Recommend(rows, options);
  ASSERT_TRUE(r[0].best);
  EXPECT_NE(r[0].warnings[0].find("no energy counter"), std::string::npos);
  const nlohmann::json json = ToJson(r[0]);
  EXPECT_EQ(json["host"], "a");
  EXPECT_TRUE(json["best"]["joules_per_sample"].is_null());
  EXPECT_EQ(json["pareto"].size(), 2u);
}

TEST(RecommendTest, TheCriterionIsOneOfFour) {
  EXPECT_EQ(ParseRecommendBy("cost"), RecommendBy::kCost);
  EXPECT_EQ(ParseRecommendBy("energy"), RecommendBy::kEnergy);
  EXPECT_FALSE(ParseRecommendBy("speed"));
}

}  // namespace
}  // namespace benchfleet
