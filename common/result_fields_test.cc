#include "common/result_fields.h"

#include <gtest/gtest.h>

#include <set>

#include "common/worker_result.h"

namespace benchfleet {
namespace {

using nlohmann::json;

json GoodResult() {
  return json::parse(R"({"ok": true, "job_id": 4, "attempt": 1, "device": "cpu", "model": "mlp",
    "mode": "inference", "dtype": "fp32", "batch_size": 8, "threads": 1,
    "stats": {"n": 12, "median_ms": 1.5, "mean_ms": 1.6, "stdev_ms": 0.1, "min_ms": 1.4,
              "max_ms": 2.0, "p90_ms": 1.8, "p99_ms": 1.9, "q1_ms": 1.45, "q3_ms": 1.55,
              "iqr_ms": 0.1, "noisy": false},
    "samples_ms": [1.5, 1.4], "throughput_per_s": 5333.3, "gflops": 1.2,
    "accuracy": null, "gpu_telemetry": null, "peak_rss_mb": 200.5, "worker_wall_s": 1.1})");
}

TEST(ResultFieldsTest, TheTableIsWellFormedAndNamesUniqueColumns) {
  ASSERT_FALSE(ResultFields().empty());
  ASSERT_FALSE(CalibrationFields().empty());
  std::set<std::string> columns;
  for (const ResultField& field : ResultFields()) {
    EXPECT_FALSE(field.doc.empty()) << field.path << " has no doc";
    if (!field.column.empty()) {
      EXPECT_TRUE(columns.insert(field.column).second) << field.column;
    }
  }
  for (const char* column : {"n", "median_ms", "noisy", "throughput_per_s", "peak_rss_mb"}) {
    EXPECT_TRUE(columns.count(column)) << column;
  }
}

TEST(ResultFieldsTest, AGoodResultParsesIntoTypedValues) {
  auto parsed = ParseWorkerResult(GoodResult());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_TRUE(parsed->ok);
  EXPECT_EQ(*parsed->echo.model, "mlp");
  EXPECT_EQ(*parsed->echo.batch_size, 8);
  EXPECT_EQ(ResultValue(*parsed, "median_ms"), 1.5);
  EXPECT_EQ(ResultValue(*parsed, "noisy"), false);
  EXPECT_TRUE(ResultValue(*parsed, "max_abs_err").is_null());
  EXPECT_EQ(parsed->samples_ms.size(), 2u);
  EXPECT_FALSE(parsed->detail.contains("samples_ms"));
}

TEST(ResultFieldsTest, WrongTypesAtAnyDepthAreErrorsNamingTheField) {
  struct Case {
    const char* pointer;
    json value;
    const char* names;
  };
  for (const Case& c :
       std::vector<Case>{{"/ok", 1, "result.ok"},
                         {"/stats", "fast", "result.stats"},
                         {"/stats/median_ms", "1.5", "result.stats.median_ms"},
                         {"/stats/median_ms", -1.0, "result.stats.median_ms"},
                         {"/stats/noisy", 0, "result.stats.noisy"},
                         {"/stats/n", 1.5, "result.stats.n"},
                         {"/accuracy", json::array(), "result.accuracy"},
                         {"/gpu_telemetry", 3, "result.gpu_telemetry"},
                         {"/samples_ms", json::object(), "result.samples_ms"},
                         {"/samples_ms/0", "x", "result.samples_ms[0]"},
                         {"/model", 7, "result.model"},
                         {"/batch_size", "8", "result.batch_size"},
                         {"/job_id", json::object(), "result.job_id"},
                         {"/peak_rss_mb", true, "result.peak_rss_mb"},
                         // The agent's words for how the worker ended, never a bare exit code.
                         {"/exit", 2, "result.exit"}}) {
    json result = GoodResult();
    result[json::json_pointer(c.pointer)] = c.value;
    auto parsed = ParseWorkerResult(result);
    ASSERT_FALSE(parsed.ok()) << c.pointer;
    EXPECT_NE(parsed.status().message().find(c.names), std::string::npos)
        << c.pointer << ": " << parsed.status().message();
  }
}

TEST(ResultFieldsTest, ASuccessfulResultMustCarryItsStatisticsAndAFailureItsReason) {
  auto empty = ParseWorkerResult(json{{"ok", true}});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("result.stats.n: missing"), std::string::npos)
      << empty.status().message();
  json no_median = GoodResult();
  no_median["stats"].erase("median_ms");
  EXPECT_FALSE(ParseWorkerResult(no_median).ok());
  auto silent_failure = ParseWorkerResult(json{{"ok", false}});
  ASSERT_FALSE(silent_failure.ok());
  EXPECT_NE(silent_failure.status().message().find("result.error"), std::string::npos);
  auto failure = ParseWorkerResult(json{{"ok", false}, {"error", "worker killed by signal 9"}});
  ASSERT_TRUE(failure.ok());
  EXPECT_EQ(failure->error, "worker killed by signal 9");
}

TEST(ResultFieldsTest, CalibrationsAreCheckedAgainstTheirOwnTable) {
  json calibration = {{"ok", true},
                      {"kind", "calibration"},
                      {"calibration",
                       {{"cpu", {{"gemm_gflops_all", 190.5}, {"gemm_threads_all", 2}}},
                        {"gpus", json::array({{{"sgemm_gflops", 50000.0}}})}}}};
  auto parsed = ParseWorkerResult(calibration);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->gpu_sgemm_gflops.size(), 1u);
  calibration["calibration"]["cpu"]["gemm_gflops_all"] = "fast";
  EXPECT_FALSE(ParseWorkerResult(calibration).ok());
  calibration["calibration"]["cpu"]["gemm_gflops_all"] = 190.5;
  calibration["calibration"]["gpus"][0]["sgemm_gflops"] = json::array();
  EXPECT_FALSE(ParseWorkerResult(calibration).ok());
}

}  // namespace
}  // namespace benchfleet
