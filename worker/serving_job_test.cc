// The serving scenarios on a real small LibTorch mlp, run by RunJob as a worker would.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "worker/job_runner.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

json ServingJob(json scenario, int batch) {
  return {{"job_id", 5},
          {"attempt", 1},
          {"model", "mlp"},
          {"model_args", {{"layers", {64, 128, 10}}}},
          {"mode", "inference"},
          {"dtype", "fp32"},
          {"device", "cpu"},
          {"batch_size", batch},
          {"threads", 1},
          {"seed", 3},
          {"timing", {{"warmup_s", 0.02}, {"min_time_s", 0.05}, {"max_time_s", 0.2}}},
          {"scenario", std::move(scenario)}};
}

TEST(ServingJobTest, ServerAtASustainableRateReportsLatencyFromArrival) {
  // A 64-128-10 mlp at batch 4 takes tens of microseconds: 200 qps is far below capacity.
  const JobOutcome outcome = RunJob(ServingJob({{"kind", "server"},
                                                {"qps", 200},
                                                {"max_wait_ms", 1},
                                                {"min_duration_s", 0.3},
                                                {"min_queries", 40},
                                                {"max_duration_s", 5}},
                                               4));
  const json& r = outcome.result;
  ASSERT_EQ(outcome.exit_code, kExitOk) << r.dump();
  EXPECT_EQ(r.at("scenario"), "server");
  const json& s = r.at("serving");
  EXPECT_TRUE(s.at("valid").get<bool>());
  EXPECT_EQ(s.at("target_qps"), 200.0);
  EXPECT_EQ(s.at("completed"), s.at("queries"));
  EXPECT_GE(s.at("queries").get<int>(), 40);
  EXPECT_GE(s.at("duration_s").get<double>(), 0.3);
  EXPECT_GT(s.at("achieved_qps").get<double>(), 0);
  EXPECT_GE(s.at("batches").get<int>(), 10);  // 4 queries at most each
  EXPECT_LE(s.at("mean_batch").get<double>(), 4);
  EXPECT_EQ(s.at("max_batch"), 4);
  EXPECT_EQ(s.at("seed"), 3);
  const double p50 = s.at("latency_p50_ms"), p90 = s.at("latency_p90_ms"),
               p99 = s.at("latency_p99_ms");
  EXPECT_GT(p50, 0);
  EXPECT_LE(p50, p90);
  EXPECT_LE(p90, p99);
  // The offline figures stay: one batch at max_batch.
  EXPECT_TRUE(r.at("stats").at("median_ms").is_number());
}

TEST(ServingJobTest, SingleStreamRunsBatchOne) {
  const JobOutcome outcome = RunJob(
      ServingJob({{"kind", "single_stream"}, {"min_duration_s", 0.1}, {"min_queries", 50}}, 1));
  const json& r = outcome.result;
  ASSERT_EQ(outcome.exit_code, kExitOk) << r.dump();
  const json& s = r.at("serving");
  EXPECT_EQ(s.at("scenario"), "single_stream");
  EXPECT_EQ(s.at("batches"), s.at("queries"));
  EXPECT_DOUBLE_EQ(s.at("mean_batch").get<double>(), 1);
  EXPECT_TRUE(s.at("target_qps").is_null());
}

TEST(ServingJobTest, ARunCutShortIsInvalidNotAResult) {
  // Arrivals go on until 1e6 queries (~14 min at 1200 qps), the run stops at 0.3 s.
  const JobOutcome outcome = RunJob(ServingJob({{"kind", "server"},
                                                {"qps", 1200},
                                                {"min_duration_s", 0.1},
                                                {"min_queries", 1000000},
                                                {"max_duration_s", 0.3}},
                                               2));
  const json& r = outcome.result;
  ASSERT_EQ(outcome.exit_code, kExitRejected) << r.dump();
  EXPECT_FALSE(r.at("ok").get<bool>());
  EXPECT_EQ(r.at("error").get<std::string>().rfind("scenario server: the run is invalid", 0), 0u)
      << r.at("error");
  EXPECT_FALSE(r.at("serving").at("valid").get<bool>());
}

TEST(ServingJobTest, SloSearchReportsTheHighestRateWithinIt) {
  // A generous SLO for a tiny model: the search brackets and bisects on short runs.
  const JobOutcome outcome = RunJob(ServingJob({{"kind", "server"},
                                                {"qps", 100},
                                                {"slo_p99_ms", 50},
                                                {"min_duration_s", 0.05},
                                                {"min_queries", 20},
                                                {"max_duration_s", 2}},
                                               4));
  const json& r = outcome.result;
  ASSERT_EQ(outcome.exit_code, kExitOk) << r.dump();
  const json& s = r.at("serving");
  ASSERT_TRUE(s.at("max_qps_within_slo").is_number()) << s.dump();
  EXPECT_GE(s.at("max_qps_within_slo").get<double>(), 100);
  EXPECT_EQ(s.at("target_qps"), s.at("max_qps_within_slo"));
  EXPECT_LE(s.at("latency_p99_ms").get<double>(), 50);
  EXPECT_GE(s.at("probes").size(), 1u);
  EXPECT_EQ(s.at("slo_p99_ms"), 50.0);
}

}  // namespace
}  // namespace benchfleet::worker
