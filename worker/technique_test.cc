// profile and checkpointing on real zoo models: checkpointed gradients equal plain ones,
// both techniques run as sweep axes through the job runner, a profile's operators pass
// the coordinator's parser and a profile on a GPU is refused; and where the cnn's
// BatchNorm statistics are calibrated.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/op_profile.h"
#include "common/sweep.h"
#include "common/worker_result.h"
#include "worker/host/torch_runtime.h"
#include "worker/job_runner.h"
#include "worker/measure/profile.h"
#include "worker/models/model.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

json TinyArgs(const std::string& model) {
  if (model == "mlp") return {{"layers", {32, 64, 48, 10}}};
  if (model == "cnn")
    return {{"width", 4}, {"blocks", {1, 2, 1, 1}}, {"image_size", 16}, {"classes", 10}};
  return {{"hidden", 16}, {"heads", 2}, {"layers", 3}, {"ffn", 32}, {"seq_len", 8}};
}

json TrainJob(const std::string& model, bool checkpointing) {
  return {{"job_id", 3},
          {"model", model},
          {"model_args", TinyArgs(model)},
          {"mode", "train"},
          {"dtype", "fp32"},
          {"device", "cpu"},
          {"batch_size", 4},
          {"threads", 1},
          {"seed", 11},
          {"checkpointing", checkpointing},
          {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.05}}}};
}

// The output and every parameter's gradient of one training-mode forward and backward.
std::vector<torch::Tensor> OutputAndGradients(const std::string& model, bool checkpointing) {
  JobSpecError error;
  const std::optional<JobSpec> spec = ParseJobSpec(TrainJob(model, checkpointing), &error);
  EXPECT_TRUE(spec) << error.message;
  torch::manual_seed(spec->seed);
  BuiltModel built = BuildZooModel(*spec);
  built.model->SetTraining(true);
  std::vector<torch::Tensor> params = built.model->Parameters();
  for (torch::Tensor& p : params) p.requires_grad_(true);
  const torch::Tensor out = built.model->Forward(built.inputs);
  (out - 0.5).pow(2).mean().backward();
  std::vector<torch::Tensor> got = {out.detach()};
  for (const torch::Tensor& p : params) {
    EXPECT_TRUE(p.grad().defined());
    got.push_back(p.grad().clone());
  }
  return got;
}

TEST(CheckpointingTest, GradientsEqualThoseWithoutOnEachModel) {
  for (const std::string model : {"mlp", "cnn", "transformer"}) {
    SCOPED_TRACE(model);
    const std::vector<torch::Tensor> plain = OutputAndGradients(model, false);
    const std::vector<torch::Tensor> checkpointed = OutputAndGradients(model, true);
    ASSERT_EQ(plain.size(), checkpointed.size());
    ASSERT_GT(plain.size(), 2u);
    for (size_t i = 0; i < plain.size(); ++i) {
      SCOPED_TRACE(i);
      ASSERT_EQ(plain[i].sizes(), checkpointed[i].sizes());
      // The same operations on the same numbers: equal up to summation order.
      EXPECT_TRUE(torch::allclose(plain[i], checkpointed[i], /*rtol=*/1e-5, /*atol=*/1e-7))
          << "max |diff| " << (plain[i] - checkpointed[i]).abs().max().item<double>();
    }
  }
}

TEST(CheckpointingTest, RunsAsASweepAxisAndKeepsLessInMemory) {
  auto sweep =
      ParseSweepText(R"({"name": "ckpt", "matrix": {"model": "transformer", "mode": "train",
      "batch_size": 8, "checkpointing": [false, true]},
      "models": {"transformer": {"hidden": 64, "heads": 4, "layers": 6, "ffn": 256, "seq_len": 64}},
      "timing": {"warmup_s": 0.01, "min_time_s": 0.01, "max_time_s": 0.1}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 2u);
  std::vector<double> peak_mb;
  for (const auto& combination : sweep->Combinations()) {
    json job = combination.Spec();
    job["job_id"] = 1;
    const JobOutcome outcome = RunJob(job);
    ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
    EXPECT_GT(outcome.result.at("stats").at("median_ms").get<double>(), 0);
    peak_mb.push_back(outcome.result.at("step_peak_alloc_mb").get<double>());
    std::cout << "FIGURE transformer train checkpointing " << job["checkpointing"] << ": median "
              << outcome.result["stats"]["median_ms"] << " ms, step_peak_alloc_mb "
              << peak_mb.back() << "\n";
  }
  // Six layers' activations kept (plain) against six layers' inputs and one layer's
  // activations at a time (checkpointed): allocation sizes, not timing.
  EXPECT_GT(peak_mb[0], 0);
  EXPECT_LT(peak_mb[1], peak_mb[0]);
}

TEST(CheckpointingTest, InferenceIsRefusedNamingTheField) {
  json job = TrainJob("cnn", true);
  job["mode"] = "inference";
  const JobOutcome outcome = RunJob(job);
  EXPECT_EQ(outcome.exit_code, kExitRejected);
  EXPECT_NE(outcome.result.value("error", "").find("checkpointing trades recomputation"),
            std::string::npos)
      << outcome.result.dump();
}

TEST(ProfileTest, SelfTimeExcludesNestedCallsOnTheSameThread) {
  const std::vector<ProfiledCall> calls = {
      {"aten::linear", 1, 100, 50, {{4, 8}, {16, 8}, {16}}},
      {"aten::addmm", 1, 110, 30, {{16}, {4, 8}, {8, 16}}},
      {"aten::t", 1, 101, 5, {{16, 8}}},
      {"aten::relu", 1, 160, 10, {{4, 16}}},
      {"aten::addmm", 2, 105, 20, {{16}, {2, 8}, {8, 16}}},  // another thread: nested in nothing
      {"aten::linear", 1, 200, 40, {{4, 8}, {16, 8}, {16}}},
  };
  const json top = TopOperators(calls, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0]["op"], "aten::linear");  // 50 - 5 - 30 of its own, then 40
  EXPECT_EQ(top[0]["calls"], 2);
  EXPECT_DOUBLE_EQ(top[0]["self_us"].get<double>(), 55);
  EXPECT_DOUBLE_EQ(top[0]["total_us"].get<double>(), 90);
  EXPECT_EQ(top[1]["op"], "aten::addmm");
  EXPECT_DOUBLE_EQ(top[1]["self_us"].get<double>(), 30 + 20);
  EXPECT_EQ(top[1]["input_shapes"], json::parse("[[16], [4, 8], [8, 16]]"));  // the costlier calls'
  EXPECT_EQ(top[2]["op"], "aten::relu");  // aten::t (5 µs) is left out
}

TEST(ProfileTest, TheBlockIsTheTimedOneLastingAtLeastAFifthOfASecondAtMostAHundred) {
  EXPECT_EQ(ProfileIterations(1, 500), 1);   // one slow iteration
  EXPECT_EQ(ProfileIterations(1, 30), 7);    // 0.2 s at 30 ms
  EXPECT_EQ(ProfileIterations(12, 30), 12);  // the timed block, if longer
  EXPECT_EQ(ProfileIterations(400, 0.01), kMaxProfileIterations);
}

TEST(ProfileTest, AProfiledJobReportsItsTopOperatorsOutsideTheSamples) {
  for (const std::string mode : {"inference", "train"}) {
    SCOPED_TRACE(mode);
    json job = TrainJob("transformer", false);
    job["mode"] = mode;
    job["profile"] = true;
    const JobOutcome outcome = RunJob(job);
    ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
    const json& r = outcome.result;
    EXPECT_EQ(r.at("samples_ms").size(), r.at("stats").at("n").get<size_t>());
    const int64_t iterations = r.at("profile_iterations").get<int64_t>();
    EXPECT_EQ(iterations, ProfileIterations(r["stats"]["iters_per_sample"].get<int64_t>(),
                                            r["stats"]["median_ms"].get<double>()));
    const json& ops = r.at("op_profile");
    ASSERT_TRUE(ops.is_array());
    ASSERT_GE(ops.size(), 5u);
    EXPECT_LE(ops.size(), kOpProfileRows);
    bool matmul = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i > 0) {
        EXPECT_GE(ops[i - 1]["self_us"].get<double>(), ops[i]["self_us"].get<double>());
      }
      EXPECT_GE(ops[i]["calls"].get<int64_t>(), iterations)
          << ops[i].dump();  // once per iteration at least
      const std::string op = ops[i]["op"];
      matmul = matmul || op == "aten::addmm" || op == "aten::mm" || op == "aten::bmm";
    }
    EXPECT_TRUE(matmul) << ops.dump();
    if (mode == "train")
      std::cout << "FIGURE tiny transformer train top operators: " << ops.dump() << "\n";
    // What the coordinator's edge makes of it.
    const auto parsed = ParseWorkerResult(r);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->op_profile.size(), ops.size());
    EXPECT_FALSE(parsed->detail.contains("op_profile"));
  }
  // A job that does not ask is not profiled.
  const JobOutcome plain = RunJob(TrainJob("mlp", false));
  ASSERT_EQ(plain.exit_code, kExitOk) << plain.result.dump();
  EXPECT_FALSE(plain.result.contains("op_profile"));
}

// Refused by the job's validation (common/job_spec.cc), before any device is looked at:
// the same answer with or without a GPU.
// The running means of every BatchNorm of a cnn built for `device`, on the CPU.
std::vector<torch::Tensor> CnnRunningMeans(const std::string& device, torch::Device* weights_on) {
  json job = TrainJob("cnn", false);
  job["mode"] = "inference";
  job["device"] = device;
  JobSpecError error;
  const std::optional<JobSpec> spec = ParseJobSpec(job, &error);
  EXPECT_TRUE(spec) << error.message;
  torch::manual_seed(spec->seed);
  BuiltModel built = BuildZooModel(*spec);
  *weights_on = built.model->Parameters().front().device();
  EXPECT_EQ(built.inputs.front().device(), torch::Device(torch::kCPU));  // inputs stay on the CPU
  std::vector<torch::Tensor> means;
  for (const auto& buffer : built.model->Root()->named_buffers()) {
    if (buffer.key().find("running_mean") != std::string::npos)
      means.push_back(buffer.value().cpu());
  }
  return means;
}

TEST(CnnCalibrationTest, BatchNormStatisticsComeFromAPassOnTheJobsDevice) {
  torch::Device on_cpu(torch::kCPU);
  const std::vector<torch::Tensor> cpu = CnnRunningMeans("cpu", &on_cpu);
  EXPECT_EQ(on_cpu, torch::Device(torch::kCPU));
  ASSERT_GT(cpu.size(), 4u);
  // Calibrated: not BatchNorm's initial zeros.
  for (const torch::Tensor& mean : cpu) EXPECT_GT(mean.abs().max().item<double>(), 0);
  if (!CudaAvailable()) {
    GTEST_SKIP() << "this LibTorch build or host has no CUDA device: only the CPU's calibration "
                    "was checked; on a GPU the pass runs there, after the move";
  }
  torch::Device on_gpu(torch::kCPU);
  const std::vector<torch::Tensor> gpu = CnnRunningMeans("cuda", &on_gpu);
  EXPECT_TRUE(on_gpu.is_cuda());
  ASSERT_EQ(gpu.size(), cpu.size());
  // The same pass on the same numbers: equal up to the devices' rounding (cuDNN's
  // convolutions may use TF32, 10 bits of mantissa), relative to each layer's scale.
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double scale = cpu[i].abs().max().item<double>();
    EXPECT_LT((gpu[i] - cpu[i]).abs().max().item<double>(), 1e-2 * scale) << "layer " << i;
  }
}

}  // namespace
}  // namespace benchfleet::worker
