// CombineRanks (common/rank_results.h): one result from the results of a job's ranks,
// as the agent and the coordinator both make it.
#include "common/rank_results.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

using nlohmann::json;

json RankResult(int rank, double median_ms, double wall_s) {
  return {{"ok", true},
          {"job_id", 7},
          {"attempt", 1},
          {"model", "mlp"},
          {"stats", {{"median_ms", median_ms}}},
          {"samples_ms", {median_ms, median_ms}},
          {"runtime", {{"torch", "2.x"}}},
          {"worker_wall_s", wall_s},
          {"distributed", {{"rank", rank}, {"world_size", 2}}}};
}

TEST(CombineRanksTest, AGangThatSucceededIsRankZerosResultWithEveryRanksOwnFigures) {
  const json combined =
      CombineRanks({RankResult(0, 2.0, 5.0), RankResult(1, 3.0, 6.5)}, std::nullopt, false);
  EXPECT_EQ(combined["ok"], true);
  EXPECT_EQ(combined["stats"]["median_ms"], 2.0);
  EXPECT_EQ(combined["samples_ms"], json({2.0, 2.0}));  // rank 0's raw samples are the job's
  EXPECT_EQ(combined["job_id"], 7);
  EXPECT_EQ(combined["worker_wall_s"], 6.5);  // the slowest rank's
  ASSERT_EQ(combined["ranks"].size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const json& entry = combined["ranks"][r];
    EXPECT_EQ(entry["distributed"]["rank"], r);
    for (const char* dropped : {"samples_ms", "runtime", "job_id", "attempt"}) {
      EXPECT_FALSE(entry.contains(dropped)) << dropped;
    }
  }
  EXPECT_EQ(combined["ranks"][1]["stats"]["median_ms"], 3.0);
  EXPECT_FALSE(combined.contains("replicas"));
}

TEST(CombineRanksTest, AFailedGangNamesTheRankWhereItRanAndItsCauseWithTheRanksHeardFrom) {
  json failed = {{"ok", false},
                 {"error", "worker killed by signal 9 (SIGKILL)"},
                 {"exit", "killed by signal 9"},
                 {"stderr_tail", "oom"},
                 {"worker_wall_s", 1.5}};
  const json combined = CombineRanks({RankResult(0, 2.0, 5.0), nullptr, failed},
                                     RankFailure{2, " on agent node-c"}, false);
  EXPECT_EQ(combined["ok"], false);
  EXPECT_EQ(
      combined["error"],
      "rank 2 of 3 on agent node-c: worker killed by signal 9 (SIGKILL); the gang was stopped");
  EXPECT_EQ(combined["exit"], "killed by signal 9");
  EXPECT_EQ(combined["stderr_tail"], "oom");
  EXPECT_FALSE(combined.contains("stats"));  // no figures of a failed gang
  ASSERT_EQ(combined["ranks"].size(), 2u);   // rank 1 was not heard from
  EXPECT_EQ(combined["ranks"][0]["distributed"]["rank"], 0);
  EXPECT_EQ(combined["ranks"][1]["distributed"]["rank"], 2);  // filled in where it lacked one
  EXPECT_EQ(combined["worker_wall_s"], 5.0);
  // A cause without an error of its own still names the rank.
  EXPECT_EQ(CombineRanks({json{{"ok", false}}}, RankFailure{0, ""}, false)["error"],
            "rank 0 of 1: failed; the gang was stopped");
}

TEST(CombineRanksTest, ReplicasThatSucceededAreSummarized) {
  auto copy = [](double from, double to, double rate, double median) {
    return json{
        {"ok", true},
        {"stats", {{"median_ms", median}}},
        {"replica", {{"timed_from_s", from}, {"timed_to_s", to}, {"throughput_per_s", rate}}}};
  };
  const json combined =
      CombineRanks({copy(10.0, 15.0, 100, 2.0), copy(10.5, 14.0, 50, 4.0)}, std::nullopt, true);
  EXPECT_EQ(combined["replicas"]["count"], 2);
  EXPECT_EQ(combined["replicas"]["aggregate_throughput_per_s"], 150.0);
  EXPECT_EQ(combined["ranks"].size(), 2u);
}

TEST(CombineRanksTest, RankResultsThatAreNotObjectsAreNeverTrusted) {
  const json combined = CombineRanks({json("text"), json::array()}, std::nullopt, false);
  EXPECT_EQ(combined["ok"], false);
  EXPECT_EQ(combined["error"], "rank 0 was not heard from");
  EXPECT_TRUE(combined["ranks"].empty());
}

}  // namespace
}  // namespace benchfleet
