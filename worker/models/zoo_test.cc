// Every built-in model in every mode and dtype it supports, at tiny sizes, through
// the worker's job runner.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "worker/job_runner.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

json TinyArgs(const std::string& model) {
  if (model == "matmul") return {{"m", 16}, {"k", 24}, {"n", 8}};
  if (model == "mlp") return {{"layers", {32, 64, 10}}};
  if (model == "cnn") {
    return {{"width", 4},
            {"blocks", {1, 1, 1, 1}},
            {"image_size", 16},
            {"channels", 3},
            {"classes", 10}};
  }
  return {{"hidden", 16}, {"heads", 2}, {"layers", 2}, {"ffn", 32}, {"seq_len", 8}};
}

json TinyJob(const std::string& model, const std::string& mode, const std::string& dtype) {
  return {{"job_id", 5},
          {"model", model},
          {"model_args", TinyArgs(model)},
          {"mode", mode},
          {"dtype", dtype},
          {"device", "cpu"},
          {"batch_size", 2},
          {"threads", 1},
          {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.05}}}};
}

void ExpectMeasured(const json& r, const std::string& model, const std::string& mode,
                    const std::string& dtype) {
  ASSERT_TRUE(r.at("ok").get<bool>()) << r.dump();
  EXPECT_EQ(r.at("model"), model);
  EXPECT_EQ(r.at("mode"), mode);
  EXPECT_EQ(r.at("dtype"), dtype);
  EXPECT_EQ(r.at("device"), "cpu");
  EXPECT_EQ(r.at("batch_size"), 2);
  EXPECT_EQ(r.at("threads"), 1);
  EXPECT_EQ(r.at("interop_threads"), 1);
  const double median = r.at("stats").at("median_ms").get<double>();
  EXPECT_GT(median, 0);
  EXPECT_GE(r.at("stats").at("n").get<int>(), 1);
  EXPECT_GT(r.at("rss_before_model_mb").get<double>(), 0);
  EXPECT_GT(r.at("param_bytes").get<std::int64_t>(), 0);
  const double flops = r.at("flops_per_sample").get<double>();
  EXPECT_GT(flops, 0);
  EXPECT_NEAR(r.at("gflops").get<double>(), flops * 2 / (median * 1e6), 1e-9 * flops);
  EXPECT_TRUE(r.at("threads_mismatch").is_boolean());
  EXPECT_TRUE(r.at("gpu_telemetry").is_null());
  EXPECT_TRUE(r.at("runtime").at("onednn").get<bool>());
  if (dtype == "int8") {
    EXPECT_TRUE(r.at("runtime").at("qengine").is_string());
  } else {
    EXPECT_TRUE(r.at("runtime").at("qengine").is_null());
  }
  const json& accuracy = r.at("accuracy");
  if (dtype == "fp32") {
    EXPECT_TRUE(accuracy.is_null());
    return;
  }
  for (const char* key : {"max_abs_err", "mean_abs_err", "rel_err"}) {
    ASSERT_TRUE(accuracy.at(key).is_number()) << key << " " << accuracy.dump();
    EXPECT_GE(accuracy.at(key).get<double>(), 0) << key;
  }
  // Low precision changes the output, but not beyond recognition.
  EXPECT_LT(accuracy.at("rel_err").get<double>(), 0.5) << accuracy.dump();
  const bool classifier = model == "mlp" || model == "cnn";
  EXPECT_EQ(accuracy.at("top1_agreement").is_number(), classifier) << accuracy.dump();
}

TEST(ZooTest, EveryModelModeAndDtypeRuns) {
  for (const std::string model : {"matmul", "mlp", "cnn", "transformer"}) {
    for (const std::string mode : {"inference", "train"}) {
      for (const std::string dtype : {"fp32", "bf16", "int8"}) {
        if (dtype == "int8" && (mode == "train" || model == "matmul")) continue;
        SCOPED_TRACE(model + " " + mode + " " + dtype);
        const JobOutcome outcome = RunJob(TinyJob(model, mode, dtype));
        EXPECT_EQ(outcome.exit_code, kExitOk);
        ExpectMeasured(outcome.result, model, mode, dtype);
      }
    }
  }
}

TEST(ZooTest, MatmulParamBytesAreTheBOperand) {
  json job = TinyJob("matmul", "inference", "fp32");
  const JobOutcome outcome = RunJob(job);
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  EXPECT_EQ(outcome.result.at("param_bytes"), 2 * 24 * 8 * 4);
  EXPECT_EQ(outcome.result.at("flops_per_sample"), 2 * 16 * 24 * 8);
}

TEST(ZooTest, Int8MlpIsCloseToFp32) {
  json job = TinyJob("mlp", "inference", "int8");
  job["model_args"]["layers"] = {1024, 1024, 10};
  job["batch_size"] = 256;
  const JobOutcome outcome = RunJob(job);
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  const json& accuracy = outcome.result.at("accuracy");
  EXPECT_LT(accuracy.at("rel_err").get<double>(), 0.05) << accuracy.dump();
  EXPECT_GT(accuracy.at("top1_agreement").get<double>(), 0.9) << accuracy.dump();
  // int8 weights: one byte each, fp32 biases.
  EXPECT_EQ(outcome.result.at("param_bytes"), 1024 * 1024 + 1024 * 10 + (1024 + 10) * 4);
}

// Nanoseconds this process's threads have waited on a run queue for a CPU
// (second field of /proc/<pid>/task/<tid>/schedstat).
double RunQueueWaitSeconds() {
  double total_ns = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "schedstat");
    double running_ns = 0, waiting_ns = 0;
    if (in >> running_ns >> waiting_ns) total_ns += waiting_ns;
  }
  return total_ns * 1e-9;
}

TEST(ZooTest, OneThreadRunsOnOneThread) {
  json job = TinyJob("matmul", "inference", "fp32");
  job["timing"]["min_time_s"] = 0.3;
  job["timing"]["max_time_s"] = 1;
  const double wait_before = RunQueueWaitSeconds();
  const auto start = std::chrono::steady_clock::now();
  const JobOutcome outcome = RunJob(job);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double waited = RunQueueWaitSeconds() - wait_before;
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  const double effective = outcome.result.at("effective_threads").get<double>();
  EXPECT_LT(effective, 1.25);
  EXPECT_EQ(outcome.result.at("threads_mismatch").get<bool>(), std::abs(effective - 1) > 0.25);
  // Other processes can keep the one thread off the CPU; then it legitimately did
  // less than one CPU-second per second, and threads_mismatch says so.
  if (waited > 0.25 * wall) {
    GTEST_SKIP() << "the host is oversubscribed: the job waited " << waited << " s of " << wall
                 << " s for a CPU (effective_threads " << effective << ")";
  }
  EXPECT_GT(effective, 0.75);
  EXPECT_FALSE(outcome.result.at("threads_mismatch").get<bool>());
}

TEST(ZooTest, OnednnCanBeSwitchedOff) {
  json job = TinyJob("cnn", "inference", "fp32");
  job["onednn"] = false;
  const JobOutcome off = RunJob(job);
  ASSERT_EQ(off.exit_code, kExitOk) << off.result.dump();
  EXPECT_FALSE(off.result.at("runtime").at("onednn").get<bool>());
  job["onednn"] = true;
  const JobOutcome on = RunJob(job);
  ASSERT_EQ(on.exit_code, kExitOk) << on.result.dump();
  EXPECT_TRUE(on.result.at("runtime").at("onednn").get<bool>());
}

TEST(ZooTest, TheCnnRunsInChannelsLastOrder) {
  for (const std::string mode : {"inference", "train"}) {
    SCOPED_TRACE(mode);
    json job = TinyJob("cnn", mode, "fp32");
    job["model_args"]["memory_format"] = "channels_last";
    const JobOutcome outcome = RunJob(job);
    ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
    EXPECT_GT(outcome.result.at("stats").at("median_ms").get<double>(), 0);
  }
  json bad = TinyJob("cnn", "inference", "fp32");
  bad["model_args"]["memory_format"] = "nhwc";
  const JobOutcome refused = RunJob(bad);
  EXPECT_EQ(refused.exit_code, kExitRejected);
  EXPECT_NE(
      refused.result.value("error", "")
          .find("model_args.memory_format must be one of contiguous, channels_last, got \"nhwc\""),
      std::string::npos)
      << refused.result.dump();
}

struct BadJob {
  json job;
  std::string error;  // expected in the result's error
};

TEST(ZooTest, BadJobsFailNamingTheProblem) {
  const auto with = [](json job, const std::string& key, const json& value) {
    job[key] = value;
    return job;
  };
  const json mlp = TinyJob("mlp", "inference", "fp32");
  const std::vector<BadJob> cases = {
      {with(mlp, "model", "resnet"), "unknown model \"resnet\"; known models: matmul, mlp, cnn"},
      {TinyJob("matmul", "inference", "int8"),
       "int8 dynamic quantization needs Linear layers; model matmul has none"},
      {TinyJob("mlp", "train", "int8"), "mode \"inference\" only"},
      {with(TinyJob("matmul", "inference", "fp32"), "model_args", {{"m", 0}}),
       "model_args.m must be an integer in [1, 1048576], got 0"},
      {with(mlp, "model_args", {{"width", 4}}), "unknown key \"width\" in model_args"},
      {with(TinyJob("cnn", "inference", "fp32"), "model_args", {{"blocks", {1, 1, 1}}}),
       "model_args.blocks"},
      {with(TinyJob("transformer", "inference", "fp32"), "model_args",
            {{"hidden", 16}, {"heads", 5}}),
       "model_args.hidden (16) must be divisible by model_args.heads (5)"},
      {with(with(mlp, "model", "torchscript"), "model_args",
            {{"path", "/nonexistent/benchfleet/model.pt"}, {"inputs", {{32}}}}),
       "cannot read TorchScript file /nonexistent/benchfleet/model.pt"},
      {with(with(mlp, "model", "torchscript"), "model_args",
            {{"path", "model.pt"}, {"inputs", {{32}}}}),
       "model_args.path must be the absolute path"},
      {with(with(with(mlp, "model", "torchscript"), "model_args",
                 {{"path", "/tmp/model.pt"}, {"inputs", {{32}}}}),
            "dtype", "int8"),
       "needs Linear layers"},
      {with(mlp, "onednn", "yes"), "onednn must be true or false"},
  };
  for (const BadJob& c : cases) {
    SCOPED_TRACE(c.job.dump());
    const JobOutcome outcome = RunJob(c.job);
    EXPECT_EQ(outcome.exit_code, kExitRejected);
    EXPECT_FALSE(outcome.result.at("ok").get<bool>());
    EXPECT_NE(outcome.result.value("error", "").find(c.error), std::string::npos)
        << outcome.result.value("error", "");
  }
}

TEST(ZooTest, GpuDeviceFailsFastWithTheReason) {
  json job = TinyJob("mlp", "inference", "fp32");
  job["device"] = "cuda:7";
  const JobOutcome outcome = RunJob(job);
  if (outcome.exit_code == kExitOk) GTEST_SKIP() << "this host has a GPU 7";
  const std::string error = outcome.result.value("error", "");
  EXPECT_TRUE(error.find("this LibTorch build has no CUDA support") != std::string::npos ||
              error.find("no GPU is usable on this host (this LibTorch has CUDA ") !=
                  std::string::npos ||
              error.find("no GPU 7 on this host") != std::string::npos)
      << error;
}

}  // namespace
}  // namespace benchfleet::worker
