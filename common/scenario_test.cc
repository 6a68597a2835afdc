// The job's `scenario` (schemas/worker.md, Scenarios) and its matrix axis.
#include <gtest/gtest.h>

#include <string>

#include "common/job_spec.h"
#include "common/sweep.h"

namespace benchfleet {
namespace {

using nlohmann::json;

json Mlp(json scenario, int batch = 8) {
  return {{"job_id", 1},     {"model", "mlp"},      {"mode", "inference"}, {"dtype", "fp32"},
          {"device", "cpu"}, {"batch_size", batch}, {"threads", 1},        {"scenario", scenario}};
}

TEST(ScenarioTest, AbsentOrNullIsOffline) {
  JobSpecError error;
  json job = Mlp(nullptr);
  auto spec = ParseJobSpec(job, &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_EQ(spec->scenario, "offline");
  job.erase("scenario");
  EXPECT_EQ(ParseJobSpec(job, &error)->scenario, "offline");
  EXPECT_EQ(ParseJobSpec(Mlp("offline"), &error)->scenario, "offline");
}

TEST(ScenarioTest, ServerTakesItsRateAndBatcherWithLoadGenDefaults) {
  JobSpecError error;
  auto spec = ParseJobSpec(Mlp({{"kind", "server"}, {"qps", 2000}}), &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_EQ(spec->scenario, "server");
  EXPECT_DOUBLE_EQ(spec->serving.qps, 2000);
  EXPECT_EQ(spec->serving.max_batch, 8);  // the job's batch_size
  EXPECT_DOUBLE_EQ(spec->serving.max_wait_ms, 1);
  EXPECT_FALSE(spec->serving.slo_p99_ms);
  EXPECT_DOUBLE_EQ(spec->serving.min_duration_s, 10);
  EXPECT_EQ(spec->serving.min_queries, 100);
  spec = ParseJobSpec(Mlp({{"kind", "server"},
                           {"qps", 500},
                           {"max_batch", 4},
                           {"max_wait_ms", 0},
                           {"slo_p99_ms", 5},
                           {"min_duration_s", 0.5},
                           {"min_queries", 20},
                           {"max_duration_s", 3}}),
                      &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_EQ(spec->serving.max_batch, 4);
  EXPECT_DOUBLE_EQ(spec->serving.max_wait_ms, 0);
  EXPECT_DOUBLE_EQ(*spec->serving.slo_p99_ms, 5);
  EXPECT_DOUBLE_EQ(spec->serving.max_duration_s, 3);
  spec = ParseJobSpec(Mlp({{"kind", "single_stream"}, {"min_queries", 10}}, 1), &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_EQ(spec->scenario, "single_stream");
  EXPECT_EQ(spec->serving.min_queries, 10);
}

TEST(ScenarioTest, ErrorsNameTheField) {
  struct Case {
    json job;
    std::string field, message;
  };
  json train = Mlp({{"kind", "server"}, {"qps", 10}});
  train["mode"] = "train";
  const Case cases[] = {
      {Mlp("batch"), "scenario", "scenario must be one of offline, single_stream, server"},
      {Mlp({{"kind", "serve"}}), "scenario.kind", "scenario must be one of"},
      {Mlp("server"), "scenario.qps", "scenario \"server\" needs an arrival rate"},
      {Mlp({{"kind", "server"}}), "scenario.qps", "scenario.qps: missing"},
      {Mlp({{"kind", "server"}, {"qps", -1}}), "scenario.qps",
       "scenario.qps must be a positive number up to 10000000.0, got -1"},
      {Mlp({{"kind", "server"}, {"qps", 1}, {"max_batch", 0}}), "scenario.max_batch",
       "scenario.max_batch must be an integer in [1, "},
      {Mlp({{"kind", "server"}, {"qps", 1}, {"max_wait_ms", -1}}), "scenario.max_wait_ms",
       "scenario.max_wait_ms must be a number of ms in [0, 1e6], got -1"},
      {Mlp({{"kind", "server"}, {"qps", 1}, {"slo_p99_ms", 0}}), "scenario.slo_p99_ms", ""},
      {Mlp({{"kind", "server"}, {"qps", 1}, {"rate", 1}}), "scenario.rate",
       "unknown key \"rate\" in scenario of kind \"server\"; known keys: kind, qps,"},
      {Mlp({{"kind", "single_stream"}, {"qps", 1}}, 1), "scenario.qps",
       "unknown key \"qps\" in scenario of kind \"single_stream\""},
      {Mlp({{"kind", "offline"}, {"min_queries", 1}}), "scenario.min_queries", ""},
      {Mlp({{"kind", "server"}, {"qps", 1}, {"min_duration_s", 5}, {"max_duration_s", 1}}),
       "scenario.min_duration_s", "scenario.min_duration_s (5.0) must not exceed"},
      {Mlp("single_stream", 4), "batch_size",
       "scenario \"single_stream\" runs one query at a time: batch_size must be 1, got 4"},
      {train, "scenario",
       "scenario \"server\" serves queries from one inference model; it needs "
       "mode \"inference\""},
  };
  for (const Case& c : cases) {
    JobSpecError error;
    EXPECT_FALSE(ParseJobSpec(c.job, &error)) << c.job.dump();
    EXPECT_EQ(error.field, c.field) << c.job.dump() << ": " << error.message;
    EXPECT_EQ(error.message.rfind(c.message, 0), 0u) << error.message;
  }
}

TEST(ScenarioTest, AMatrixAxisLeftOutOfJobsWhenNotSwept) {
  auto sweep = ParseSweepText(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": 1,
      "scenario": [null, "single_stream", {"kind": "server", "qps": 100, "slo_p99_ms": 5}]}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  const std::vector<Combination> jobs = sweep->Combinations();
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_FALSE(jobs[0].Spec().contains("scenario"));  // the job, and its series, as before
  EXPECT_EQ(jobs[1].Spec()["scenario"], "single_stream");
  EXPECT_EQ(jobs[2].Spec()["scenario"]["qps"], 100);
  sweep = ParseSweepText(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": 1}})");
  ASSERT_TRUE(sweep.ok());
  EXPECT_FALSE(sweep->Combinations()[0].Spec().contains("scenario"));
  sweep = ParseSweepText(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": 1,
      "scenario": ["offline", {"kind": "server", "qps": 0}]}})");
  ASSERT_FALSE(sweep.ok());
  EXPECT_EQ(sweep.status().message().rfind("matrix.scenario[1].qps: scenario.qps must be", 0), 0u)
      << sweep.status().message();
}

}  // namespace
}  // namespace benchfleet
