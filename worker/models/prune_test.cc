// Pruning (the job's `prune`) and a reference model (`reference`) through the worker's
// job runner, on tiny built-in models.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "worker/job_runner.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// mlp 32 -> 64 -> 64 -> 10: 2112 + 4160 + 650 parameters.
constexpr std::int64_t kMlpParams = 6922;

json MlpJob(const json& layers = {32, 64, 64, 10}) {
  return {{"job_id", 3},
          {"model", "mlp"},
          {"model_args", {{"layers", layers}}},
          {"mode", "inference"},
          {"dtype", "fp32"},
          {"device", "cpu"},
          {"batch_size", 8},
          {"threads", 1},
          {"seed", 11},
          {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.05}}}};
}

json CnnJob() {
  json job = MlpJob();
  job["model"] = "cnn";
  job["model_args"] = {{"width", 4}, {"blocks", {1, 1, 1, 1}}, {"image_size", 16}, {"classes", 10}};
  return job;
}

json RunOk(const json& job) {
  const JobOutcome outcome = RunJob(job);
  EXPECT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  return outcome.result;
}

std::string ErrorOf(const json& job) {
  const JobOutcome outcome = RunJob(job);
  EXPECT_EQ(outcome.exit_code, kExitRejected) << outcome.result.dump();
  return outcome.result.value("error", "");
}

TEST(PruneTest, UnprunedResultsCountTheirParametersAndHaveNoAccuracy) {
  const json r = RunOk(MlpJob());
  EXPECT_EQ(r.at("params"), kMlpParams);
  EXPECT_TRUE(r.at("accuracy").is_null());
  EXPECT_FALSE(r.contains("prune"));
  EXPECT_FALSE(r.contains("reference"));
}

TEST(PruneTest, StructuredPruningShrinksTheMlpsHiddenLayers) {
  json job = MlpJob();
  job["prune"] = {{"kind", "structured"}, {"ratio", 0.5}};
  const json r = RunOk(job);
  // 32 -> 32 -> 32 -> 10: half the neurons of each hidden layer, and the next layer's inputs.
  EXPECT_EQ(r.at("params"), (32 * 32 + 32) + (32 * 32 + 32) + (32 * 10 + 10));
  const json& prune = r.at("prune");
  EXPECT_EQ(prune.at("kind"), "structured");
  EXPECT_EQ(prune.at("ratio"), 0.5);
  EXPECT_EQ(prune.at("params_unpruned"), kMlpParams);
  EXPECT_EQ(prune.at("layers"), 2);
  EXPECT_EQ(prune.at("weight_sparsity"), 0.0);  // smaller, not sparse
  EXPECT_FALSE(prune.contains("sparsity"));
  // Against the unpruned model on the same inputs: changed, and still a classifier.
  const json& accuracy = r.at("accuracy");
  EXPECT_GT(accuracy.at("rel_err").get<double>(), 0);
  EXPECT_GE(accuracy.at("top1_agreement").get<double>(), 0);
  EXPECT_LE(accuracy.at("top1_agreement").get<double>(), 1);

  // Ratio 0 keeps every neuron in its order: the unpruned model's outputs.
  job["prune"]["ratio"] = 0;
  const json same = RunOk(job);
  EXPECT_EQ(same.at("params"), kMlpParams);
  EXPECT_LT(same.at("accuracy").at("max_abs_err").get<double>(), 1e-6);
  EXPECT_EQ(same.at("accuracy").at("top1_agreement"), 1.0);
}

TEST(PruneTest, MagnitudePruningZeroesWeightsAndKeepsTheShape) {
  json job = MlpJob();
  job["prune"] = {{"kind", "magnitude"}, {"sparsity", 0.5}};
  const json r = RunOk(job);
  EXPECT_EQ(r.at("params"), kMlpParams);  // zeros are still parameters
  EXPECT_EQ(r.at("prune").at("params_unpruned"), kMlpParams);
  EXPECT_EQ(r.at("prune").at("layers"), 3);
  // Half of every weight matrix (2048, 4096, 640 entries): exactly half of them all.
  EXPECT_DOUBLE_EQ(r.at("prune").at("weight_sparsity").get<double>(), 0.5);
  EXPECT_GT(r.at("accuracy").at("max_abs_err").get<double>(), 0);
  EXPECT_EQ(r.at("param_bytes"), kMlpParams * 4);
}

TEST(PruneTest, StructuredPruningOfTheCnnKeepsItsResidualShapes) {
  for (const std::string mode : {"inference", "train"}) {
    SCOPED_TRACE(mode);
    json job = CnnJob();
    job["mode"] = mode;
    const std::int64_t unpruned = RunOk(job).at("params").get<std::int64_t>();
    job["prune"] = {{"kind", "structured"}, {"ratio", 0.5}};
    const json r = RunOk(job);
    EXPECT_EQ(r.at("prune").at("layers"), 4);  // one BasicBlock per stage
    EXPECT_EQ(r.at("prune").at("params_unpruned"), unpruned);
    // The block of stage s (c = 4 << s channels, `in` entering it) loses half of conv1's
    // 3x3 filters over `in` channels, their BatchNorm weight and bias, and half of
    // conv2's input channels: c/2 x (9 in + 2 + 9 c) parameters.
    std::int64_t removed = 0;
    for (const auto& [in, c] :
         {std::pair<std::int64_t, std::int64_t>{4, 4}, {4, 8}, {8, 16}, {16, 32}}) {
      removed += c / 2 * (9 * in + 2 + 9 * c);
    }
    EXPECT_EQ(r.at("params"), unpruned - removed);
    EXPECT_FALSE(r.at("accuracy").is_null());
  }
}

TEST(PruneTest, PrunedThenQuantizedIsComparedWithTheUnprunedFp32Model) {
  json job = MlpJob();
  job["dtype"] = "int8";
  const json int8_only = RunOk(job);
  job["prune"] = {{"kind", "structured"}, {"ratio", 0.5}};
  const json both = RunOk(job);
  EXPECT_EQ(both.at("params"), (32 * 32 + 32) * 2 + (32 * 10 + 10));
  EXPECT_GT(both.at("accuracy").at("rel_err").get<double>(),
            int8_only.at("accuracy").at("rel_err").get<double>());
  json transformer = job;
  transformer["model"] = "transformer";
  transformer["model_args"] = {
      {"hidden", 16}, {"heads", 2}, {"layers", 2}, {"ffn", 32}, {"seq_len", 8}};
  transformer["prune"] = {{"kind", "magnitude"}, {"sparsity", 0.25}};
  const json t = RunOk(transformer);
  EXPECT_EQ(t.at("prune").at("layers"), 8);  // qkv, out, ffn1, ffn2 per layer
  EXPECT_TRUE(t.at("accuracy").at("top1_agreement").is_null());
}

TEST(ReferenceTest, ABuiltInReferenceOnTheSameInputs) {
  json job = MlpJob({32, 64, 10});
  // The same model from the same seed: nothing differs.
  job["reference"] = {{"model", "mlp"}, {"model_args", {{"layers", {32, 64, 10}}}}};
  json r = RunOk(job);
  EXPECT_EQ(r.at("accuracy").at("max_abs_err"), 0.0);
  EXPECT_EQ(r.at("accuracy").at("top1_agreement"), 1.0);
  EXPECT_EQ(r.at("reference").at("model"), "mlp");
  EXPECT_EQ(r.at("reference").at("params"), 32 * 64 + 64 + 64 * 10 + 10);
  // A smaller student against a larger teacher.
  job["reference"]["model_args"]["layers"] = {32, 256, 10};
  r = RunOk(job);
  EXPECT_GT(r.at("accuracy").at("rel_err").get<double>(), 0);
  EXPECT_EQ(r.at("reference").at("params"), 32 * 256 + 256 + 256 * 10 + 10);
  EXPECT_EQ(r.at("params"), 32 * 64 + 64 + 64 * 10 + 10);
  // int8 applies to the job's model only: the student in int8 against its fp32 teacher.
  job["dtype"] = "int8";
  EXPECT_FALSE(RunOk(job).at("accuracy").is_null());
}

TEST(ReferenceTest, AReferenceMustTakeTheJobsInputsAndGiveItsShape) {
  json job = MlpJob({32, 64, 10});
  job["reference"] = {{"model", "mlp"}, {"model_args", {{"layers", {32, 64, 7}}}}};
  EXPECT_EQ(ErrorOf(job),
            "reference: reference model mlp gives outputs of shape [8,7], the job's model [8,10]; "
            "they must "
            "match to be compared");
  job["reference"]["model_args"]["layers"] = {16, 64, 10};
  EXPECT_EQ(ErrorOf(job),
            "reference: reference model mlp takes inputs of shape [[8,16]], the job's are "
            "[[8,32]]; a reference "
            "must take the same inputs (set reference.model_args to match)");
  job["reference"] = {{"model", "torchscript"},
                      {"model_args", {{"path", "/nonexistent/teacher.pt"}}}};
  EXPECT_EQ(
      ErrorOf(job).rfind(
          "reference.model_args.path: cannot read TorchScript file /nonexistent/teacher.pt", 0),
      0u);
}

}  // namespace
}  // namespace benchfleet::worker
