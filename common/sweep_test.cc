#include "common/sweep.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

const char* kIssueSweep = R"({"name": "cpu-mlp",
  "select": {"device": "cpu"},
  "matrix": {"model": ["mlp"], "batch_size": [1, 16, 64], "threads": [1, 2],
             "dtype": ["fp32"], "mode": ["inference"]},
  "timing": {"warmup_s": 0.2, "min_time_s": 0.5, "max_time_s": 5, "target_iqr": 0.05}})";

TEST(SweepTest, ExpandsEveryCombination) {
  auto sweep = ParseSweepText(kIssueSweep);
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_EQ(sweep->name, "cpu-mlp");
  ASSERT_EQ(sweep->combination_count, 6u);
  EXPECT_EQ(sweep->placement, Placement::kEach);
  const json first = sweep->Combinations().front().Spec();
  EXPECT_EQ(first["model"], "mlp");
  EXPECT_EQ(first["batch_size"], 1);
  EXPECT_EQ(first["threads"], 1);
  EXPECT_EQ(first["device"], "cpu");
  EXPECT_EQ(sweep->Combinations().front().device, "cpu");
  EXPECT_DOUBLE_EQ(first["timing"]["min_time_s"].get<double>(), 0.5);
  EXPECT_EQ(sweep->Combinations().back().Spec()["batch_size"], 64);
  EXPECT_EQ(sweep->Combinations().back().Spec()["threads"], 2);
}

TEST(SweepTest, APipelineInsideOneProcessRunsWhereTheWorkerSeesAGpuPerStage) {
  auto sweep = ParseSweepText(R"({"name": "p", "placement": "any",
      "matrix": {"model": "mlp", "mode": "train", "batch_size": 8, "device": "cuda",
                 "parallel": [null, {"kind": "pipeline", "stages": 3, "micro_batches": 4, "in_process": true}]},
      "models": {"mlp": {"layers": [8, 8, 8, 8]}}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  // Stage s on cuda:s: three stages need what a job on cuda:2 needs.
  EXPECT_EQ(sweep->Devices(), (std::vector<std::string>{"cuda", "cuda:2"}));
  std::vector<std::string> devices;
  for (const Combination& c : sweep->Combinations()) devices.push_back(c.device);
  EXPECT_EQ(devices, sweep->Devices());
  // The job itself still says "cuda": the worker places the stages.
  EXPECT_EQ(sweep->Combinations()[1].Spec()["device"], "cuda");
}

TEST(SweepTest, ASliceOfTheCombinationsIsTheSameWhereverItStarts) {
  auto sweep = ParseSweepText(R"({"name": "s", "matrix": {"model": ["mlp", "transformer"],
      "batch_size": [1, 2, 3], "threads": [1, 2], "device": ["cpu", "cuda"]}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  const std::vector<Combination> all = sweep->Combinations();
  ASSERT_EQ(all.size(), 24u);
  for (size_t first : {0u, 1u, 5u, 11u, 23u}) {
    std::vector<std::string> slice;
    ASSERT_TRUE(sweep->ForEachCombination(first, 7, [&](const Combination& c) {
                  slice.push_back(c.spec);
                  return Status::Ok();
                }).ok());
    ASSERT_EQ(slice.size(), std::min<size_t>(7, 24 - first)) << first;
    for (size_t i = 0; i < slice.size(); ++i) EXPECT_EQ(slice[i], all[first + i].spec) << first + i;
  }
  // Past the end: nothing.
  int calls = 0;
  ASSERT_TRUE(sweep->ForEachCombination(24, 5, [&](const Combination&) {
                ++calls;
                return Status::Ok();
              }).ok());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(sweep->Devices(), (std::vector<std::string>{"cpu", "cuda"}));
}

TEST(SweepTest, ShapeFirstThenTheCombinationsASliceAtATime) {
  // Each value is fine alone; matmul in int8 (combinations 6 and 7) is not.
  const json document = json::parse(R"({"name": "s", "placement": "any",
      "matrix": {"model": ["mlp", "matmul"], "dtype": ["fp32", "int8"], "batch_size": [1, 2]}})");
  auto shape = ParseSweepShape(document);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->combination_count, 8u);
  EXPECT_TRUE(shape->CheckCombinations(0, 6).ok());
  Status bad = shape->CheckCombinations(6, 2);
  EXPECT_EQ(bad.message(), "matrix.dtype[1]: int8 dynamic quantization needs Linear layers; model matmul has none");
  EXPECT_EQ(ParseSweep(document).status().message(), bad.message());
  // What the shape alone refuses: a value no combination could take.
  EXPECT_FALSE(ParseSweepShape(json::parse(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": -1}})")).ok());
}

TEST(SweepTest, DefaultsApplyAndModelArgsTravelWithTheJob) {
  auto sweep = ParseSweepText(
      R"({"name":"x","placement":"any","matrix":{"model":"mlp","batch_size":[8]},
          "models":{"mlp":{"layers":[32,16,4]}},"seed":7})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 1u);
  const json job = sweep->Combinations()[0].Spec();
  EXPECT_EQ(job["threads"], 1);
  EXPECT_EQ(job["dtype"], "fp32");
  EXPECT_EQ(job["mode"], "inference");
  EXPECT_EQ(job["seed"], 7);
  EXPECT_EQ(job["model_args"]["layers"], json::parse("[32,16,4]"));
  EXPECT_EQ(sweep->placement, Placement::kAny);
  EXPECT_GT(JobTimeoutSeconds(*sweep), 5.0);
}

struct BadSweep {
  std::string text;
  std::string expected_words;
};

TEST(SweepTest, BadInputNamesTheField) {
  const std::vector<BadSweep> cases = {
      {"{not json", "not valid JSON"},
      {R"({"name":"x","seed":3.6E666666662,"matrix":{"model":["mlp"],"batch_size":[1]}})",
       "not valid JSON"},  // a number too large for a double must not throw
      {"[]", "JSON object"},
      {R"({"matrix":{"model":["mlp"],"batch_size":[1]}})", "name"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"colour":"red"})",
       "unknown key \"colour\""},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1, -4]}})", "matrix.batch_size[1]"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[0]}})", "matrix.batch_size[0]"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1.5]}})", "matrix.batch_size[0]"},
      {R"({"name":"x","matrix":{"model":["resnet9000"],"batch_size":[1]}})",
       "unknown model \"resnet9000\""},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1],"threads":[]}})",
       "matrix.threads: must not be empty"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1],"speed":[1]}})",
       "matrix: unknown key \"speed\""},
      {R"({"name":"x","matrix":{"model":["mlp"]}})", "matrix.batch_size: required"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1],"dtype":["fp64"]}})",
       "unknown dtype"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1],"device":["tpu"]}})",
       "unknown device"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"timing":{"min_time_s":-1}})",
       "timing.min_time_s"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"timing":{"min_time_s":9,"max_time_s":1}})",
       "timing.min_time_s (9.0) must not exceed"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"select":{"device":"fpga"}})",
       "select.device"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"placement":"all"})",
       "placement"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"models":{"mlp":{"layers":[4]}}})",
       "models.mlp.layers"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"models":{"mlp":{"layers":[4,-1]}}})",
       "models.mlp.layers[1]"},
      {R"({"name":"x","matrix":{"model":["mlp"],"batch_size":[1]},"timeout_s":0})", "timeout_s"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto sweep = ParseSweepText(c.text);
    ASSERT_FALSE(sweep.ok());
    EXPECT_EQ(sweep.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(sweep.status().message().find(c.expected_words), std::string::npos)
        << sweep.status().message();
  }
}


}  // namespace
}  // namespace benchfleet
