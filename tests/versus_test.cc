// A sweep's versus, end to end (schemas/sweep.md, Versus): a real coordinator, agent and
// workers run each configuration's two sides as pairs, interleaved (one fresh worker per
// side, in a balanced random order) or in one worker (blocks alternating), until the
// pairs' interval decides; both sides get their results, the answer goes to
// versus_results, `compare SWEEP` shows it and gates on it. What a sweep may not ask of
// versus is refused at submit, naming the field.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/fleet.h"
#include "tests/process.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json PairedSweep(const json& versus, const json& extra = json::object()) {
  json sweep = json::parse(R"({
      "name": "paired", "placement": "any",
      "matrix": {"model": "mlp", "batch_size": 8, "threads": 1},
      "models": {"mlp": {"layers": [256, 256, 10]}},
      "timing": {"warmup_s": 0.02, "min_time_s": 0.05, "max_time_s": 0.2, "target_ci": 0.05}})");
  sweep["versus"] = versus;
  sweep.update(extra);
  return sweep;
}

class VersusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.StartCoordinator()) << fleet_.Logs();
    ASSERT_TRUE(fleet_.StartAgent("agent1")) << fleet_.Logs();
    ASSERT_TRUE(fleet_.WaitForAgents(1, 60s)) << fleet_.Logs();
  }
  int64_t Run(const json& sweep) {
    std::string error;
    const int64_t id = fleet_.Submit(sweep, &error);
    EXPECT_GT(id, 0) << error;
    const json status = fleet_.WaitForSweep(id, 600s);
    EXPECT_EQ(status.value("state", ""), "done") << status.dump() << fleet_.Logs();
    return id;
  }
  json Answer(int64_t sweep) {
    return QueryRows(fleet_.db_path(),
                     "SELECT * FROM versus_comparison WHERE sweep_id = " + std::to_string(sweep));
  }
  Fleet fleet_;
};

TEST_F(VersusTest, ASlowedSideIsCalledSlowerFromInterleavedPairsInABalancedOrder) {
  const int64_t sweep =
      Run(PairedSweep({{"slowdown", {0, 0.4}}, {"pairing", "interleaved"}, {"max_pairs", 8}}));
  const json answer = Answer(sweep);
  ASSERT_EQ(answer.size(), 1u) << fleet_.Logs();
  const json& row = answer[0];
  EXPECT_EQ(row["axis"], "slowdown");
  EXPECT_EQ(row["a_value"], "0");
  EXPECT_EQ(row["b_value"], "0.4");
  EXPECT_EQ(row["pairing"], "interleaved");
  EXPECT_EQ(row["change"], "slower") << row.dump();
  EXPECT_GT(row["ratio"].get<double>(), 1.2) << row.dump();
  EXPECT_LT(row["ratio_ci_low"].get<double>(), row["ratio"].get<double>());
  EXPECT_GT(row["ratio_ci_low"].get<double>(), 1.0);
  EXPECT_GE(row["pairs"].get<int64_t>(), 3);
  EXPECT_LE(row["pairs"].get<int64_t>(), 8);
  EXPECT_NE(row["why"].get<std::string>(), "");
  // Each pair ran two fresh workers, on one host, in an order balanced over each block of
  // two pairs; each side has its results row, made across its pairs.
  const json pairs =
      QueryRows(fleet_.db_path(),
                "SELECT pair, first, pairing, a_median_ms, b_median_ms, ratio, "
                "a_host_pace_ms, b_host_pace_ms, b_job_id FROM result_pairs WHERE job_id = " +
                    row["a_job_id"].dump() + " ORDER BY pair");
  ASSERT_EQ(pairs.size(), row["pairs"].get<size_t>());
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    EXPECT_NE(pairs[i]["first"], pairs[i + 1]["first"]) << pairs.dump();
  }
  for (const json& p : pairs) {
    EXPECT_EQ(p["pairing"], "interleaved");
    EXPECT_NEAR(p["ratio"].get<double>(),
                p["b_median_ms"].get<double>() / p["a_median_ms"].get<double>(), 1e-9);
    EXPECT_GT(p["a_host_pace_ms"].get<double>(), 0) << "each side's worker paced";
    EXPECT_GT(p["b_host_pace_ms"].get<double>(), 0);
  }
  const json sides = QueryRows(fleet_.db_path(),
                               "SELECT job_id, processes, slowdown, median_ms FROM results WHERE "
                               "sweep_id = " +
                                   std::to_string(sweep) + " ORDER BY job_id");
  ASSERT_EQ(sides.size(), 2u);
  EXPECT_EQ(sides[0]["processes"], row["pairs"]);
  EXPECT_EQ(sides[1]["processes"], row["pairs"]);
  EXPECT_TRUE(sides[0]["slowdown"].is_null());
  EXPECT_DOUBLE_EQ(sides[1]["slowdown"].get<double>(), 0.4);
  // compare SWEEP answers from the pairs, and gates on them.
  std::string out, err;
  EXPECT_EQ(RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "compare",
                        std::to_string(sweep), "--fail-on", "slower", "--format", "json"},
                       &out, &err),
            1)
      << out << err;
  const json shown = json::parse(out, nullptr, false);
  ASSERT_TRUE(shown.is_array()) << out;
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0]["change"], "slower");
  EXPECT_EQ(RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "results", "--view",
                        "versus", "--sweep", std::to_string(sweep), "--format", "json"},
                       &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("\"slower\""), std::string::npos) << out;
}

TEST_F(VersusTest, AnAARunInOneProcessIsUnchangedAndSaysWhatItCouldHaveFound) {
  const int64_t sweep = Run(PairedSweep(
      {{"slowdown", {0, 0}}, {"max_pairs", 6}, {"min_change", 0.05}}, {{"precision", 0.02}}));
  const json answer = Answer(sweep);
  ASSERT_EQ(answer.size(), 1u) << fleet_.Logs();
  const json& row = answer[0];
  EXPECT_EQ(row["pairing"], "in_process") << "auto pairs a worker setting in one process";
  EXPECT_EQ(row["change"], "unchanged") << row.dump();
  EXPECT_GE(row["detectable"].get<double>(), 0.05);
  EXPECT_LT(row["ratio_ci_low"].get<double>(), 1.05);
  EXPECT_GT(row["ratio_ci_high"].get<double>(), 1 / 1.05);
  const json pairs =
      QueryRows(fleet_.db_path(),
                "SELECT pairing, first FROM result_pairs WHERE job_id = " + row["a_job_id"].dump());
  ASSERT_FALSE(pairs.empty());
  for (const json& p : pairs) EXPECT_EQ(p["pairing"], "in_process");
  // Each side's processes are its own rows, one per pair.
  const json processes =
      QueryRows(fleet_.db_path(),
                "SELECT job_id, count(*) AS n FROM result_processes WHERE job_id IN (" +
                    row["a_job_id"].dump() + ", " + row["b_job_id"].dump() + ") GROUP BY job_id");
  ASSERT_EQ(processes.size(), 2u);
  for (const json& p : processes) EXPECT_EQ(p["n"], row["pairs"]);
  std::string out, err;
  EXPECT_EQ(RunCommand({kCliBin, "--coordinator", fleet_.clients_endpoint(), "compare",
                        std::to_string(sweep), "--fail-on", "slower"},
                       &out, &err),
            0)
      << out << err;
}

TEST_F(VersusTest, WhatAVersusMayNotBeIsRefusedNamingTheField) {
  struct Refused {
    json sweep;
    std::string words;
  };
  const std::vector<Refused> cases = {
      {PairedSweep({{"colour", {1, 2}}}), "versus: \"colour\" is no axis of a sweep"},
      {PairedSweep({{"dtype", {"fp32", "bf16", "int8"}}}),
       "versus.dtype: must be an array of exactly two"},
      {PairedSweep({{"dtype", "bf16"}}), "versus.dtype: must be an array of exactly two"},
      {PairedSweep(json::object()), "versus: must name exactly one axis"},
      {PairedSweep({{"dtype", {"fp32", "fp64"}}}), "versus.dtype[1]"},
      {PairedSweep({{"threads", {1, 2}}},
                   {{"matrix", {{"model", "mlp"}, {"batch_size", 8}, {"threads", 1}}}}),
       "matrix.threads: named by versus too"},
      {PairedSweep({{"torch", {"2.15", "0.9"}}}), "versus.torch[1]"},
      {PairedSweep({{"torch", {"2.15", "2.15"}}, {"pairing", "in_process"}}),
       "versus.pairing: in_process"},
      {PairedSweep({{"dtype", {"fp32", "bf16"}}, {"pairing", "duet"}},
                   {{"matrix", {{"model", "mlp"}, {"batch_size", 8}, {"threads", 2}}}}),
       "versus.pairing: a duet"},
      {PairedSweep({{"dtype", {"fp32", "bf16"}}}, {{"processes", 3}}), "processes:"},
      {PairedSweep({{"dtype", {"fp32", "bf16"}}},
                   {{"search", {{"max_batch", {{"memory_mb", 64}}}}}}),
       "versus: a batch search"},
      {PairedSweep({{"dtype", {"fp32", "bf16"}}},
                   {{"matrix", {{"model", "mlp"}, {"batch_size", 8}, {"replicas", 2}}}}),
       "versus: replicas"},
      {PairedSweep({{"dtype", {"fp32", "bf16"}}},
                   {{"matrix",
                     {{"model", "mlp"},
                      {"batch_size", 8},
                      {"mode", "train"},
                      {"parallel", {{"kind", "data"}, {"world_size", 2}}}}}}),
       "versus: a gang"},
      {PairedSweep({{"models.cnn.width", {16, 32}}}),
       "versus.models.cnn.width: the sweep's matrix runs mlp"},
      {PairedSweep({{"dtype", {"fp32", "bf16"}}, {"max_pairs", 1}}), "versus.max_pairs"},
      {PairedSweep({{"dtype", {"fp32", "bf16"}}, {"min_change", 0.7}}), "versus.min_change"},
  };
  for (const Refused& c : cases) {
    std::string error;
    EXPECT_LT(fleet_.Submit(c.sweep, &error), 0) << c.sweep.dump();
    EXPECT_NE(error.find(c.words), std::string::npos) << c.words << " in: " << error;
  }
  // Nothing was enqueued.
  EXPECT_EQ(QueryRows(fleet_.db_path(), "SELECT count(*) AS n FROM jobs")[0]["n"], 0);
}

}  // namespace
}  // namespace benchfleet::testing
