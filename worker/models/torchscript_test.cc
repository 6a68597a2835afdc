// TorchScript jobs on modules written here with LibTorch (no Python needed).
#include <gtest/gtest.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/types.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "worker/job_runner.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

std::string ScratchPath(const std::string& name) {
  return testing::TempDir() + "torchscript_test_" + std::to_string(getpid()) + "_" + name;
}

// x [batch, 4] -> [batch, 3]; `define` needs the trailing newline.
std::string SaveAffine() {
  const std::string path = ScratchPath("affine.pt");
  torch::jit::Module m("Affine");
  m.register_parameter("weight", torch::randn({4, 3}), /*is_buffer=*/false);
  m.register_parameter("bias", torch::randn({3}), /*is_buffer=*/false);
  m.define("def forward(self, x):\n    return torch.matmul(x, self.weight) + self.bias\n");
  m.save(path);
  return path;
}

// Two inputs, no parameters.
std::string SaveParameterFree() {
  const std::string path = ScratchPath("add.pt");
  torch::jit::Module m("Add");
  m.define("def forward(self, x, y):\n    return torch.relu(x) + y\n");
  m.save(path);
  return path;
}

// A small convolutional net, x [batch, 3, 16, 16] -> [batch, 8]: what freezing and
// optimize_for_inference (conv folding, oneDNN prepacking) work on.
std::string SaveConvNet() {
  const std::string path = ScratchPath("conv.pt");
  torch::jit::Module m("ConvNet");
  m.register_parameter("w1", torch::randn({8, 3, 3, 3}) * 0.2, /*is_buffer=*/false);
  m.register_parameter("b1", torch::zeros({8}), /*is_buffer=*/false);
  m.register_parameter("w2", torch::randn({8, 8, 3, 3}) * 0.2, /*is_buffer=*/false);
  m.register_parameter("b2", torch::zeros({8}), /*is_buffer=*/false);
  m.define(
      "def forward(self, x):\n"
      "    y = torch.relu(torch.conv2d(x, self.w1, self.b1, [1, 1], [1, 1]))\n"
      "    y = torch.relu(torch.conv2d(y, self.w2, self.b2, [1, 1], [1, 1]))\n"
      "    return torch.mean(y, [2, 3])\n");
  m.save(path);
  return path;
}

json Job(const std::string& path, const json& inputs, const std::string& mode = "inference",
         const std::string& dtype = "fp32", const std::string& jit = "none") {
  return {{"job_id", 9},
          {"model", "torchscript"},
          {"model_args", {{"path", path}, {"inputs", inputs}, {"jit", jit}}},
          {"mode", mode},
          {"dtype", dtype},
          {"device", "cpu"},
          {"batch_size", 3},
          {"threads", 1},
          {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.05}}}};
}

class TorchScriptTest : public testing::Test {
 protected:
  void SetUp() override {
    affine_ = SaveAffine();
    parameter_free_ = SaveParameterFree();
  }
  void TearDown() override {
    std::remove(affine_.c_str());
    std::remove(parameter_free_.c_str());
  }
  std::string affine_;
  std::string parameter_free_;
};

TEST_F(TorchScriptTest, InferenceTrainAndBf16Run) {
  for (const auto& [mode, dtype] : {std::pair<std::string, std::string>{"inference", "fp32"},
                                    {"train", "fp32"},
                                    {"inference", "bf16"},
                                    {"train", "bf16"}}) {
    SCOPED_TRACE(mode + " " + dtype);
    const JobOutcome outcome = RunJob(Job(affine_, {{4}}, mode, dtype));
    ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
    const json& r = outcome.result;
    EXPECT_GT(r.at("stats").at("median_ms").get<double>(), 0);
    EXPECT_TRUE(r.at("flops_per_sample").is_null());
    EXPECT_TRUE(r.at("gflops").is_null());
    EXPECT_EQ(r.at("param_bytes"), (4 * 3 + 3) * (dtype == "fp32" ? 4 : 2));
    EXPECT_EQ(r.at("accuracy").is_null(), dtype == "fp32");
    if (dtype == "bf16") {
      EXPECT_TRUE(r.at("accuracy").at("top1_agreement").is_null());
      EXPECT_LT(r.at("accuracy").at("rel_err").get<double>(), 0.05);
    }
  }
}

TEST_F(TorchScriptTest, FrozenAndOptimizedModulesRunAndKeepTheirOutputs) {
  const std::string conv = SaveConvNet();
  for (const std::string jit : {"none", "freeze", "optimize"}) {
    SCOPED_TRACE(jit);
    const JobOutcome outcome = RunJob(Job(conv, {{3, 16, 16}}, "inference", "fp32", jit));
    ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
    const json& r = outcome.result;
    EXPECT_GT(r.at("stats").at("median_ms").get<double>(), 0);
    // Compiled: its outputs against the module as saved, on the same inputs.
    EXPECT_EQ(r.at("accuracy").is_null(), jit == "none") << r.dump();
    if (jit != "none") {
      EXPECT_LT(r.at("accuracy").at("max_abs_err").get<double>(), 1e-3) << r.dump();
    }
    std::cout << "FIGURE torchscript conv jit " << jit << ": median " << r["stats"]["median_ms"]
              << " ms\n";
  }
  // A frozen module has nothing to train.
  const JobOutcome train = RunJob(Job(conv, {{3, 16, 16}}, "train", "fp32", "freeze"));
  std::remove(conv.c_str());
  EXPECT_EQ(train.exit_code, kExitRejected);
  EXPECT_NE(train.result.value("error", "")
                .find("model_args.jit \"freeze\" runs in mode \"inference\" only"),
            std::string::npos)
      << train.result.dump();
}

TEST_F(TorchScriptTest, SeveralInputs) {
  const JobOutcome outcome = RunJob(Job(parameter_free_, {{2, 5}, {2, 5}}));
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  EXPECT_EQ(outcome.result.at("param_bytes"), 0);
}

TEST_F(TorchScriptTest, ShapeThatDoesNotFitIsNamed) {
  const JobOutcome outcome = RunJob(Job(affine_, {{5}}));
  EXPECT_EQ(outcome.exit_code, kExitRejected);
  const std::string error = outcome.result.value("error", "");
  EXPECT_NE(error.find("the input shape [[5]] (batch_size 3 prepended) does not fit the model"),
            std::string::npos)
      << error;
}

TEST_F(TorchScriptTest, TrainWithoutParametersIsRefused) {
  const JobOutcome outcome = RunJob(Job(parameter_free_, {{2}, {2}}, "train"));
  EXPECT_EQ(outcome.exit_code, kExitRejected);
  EXPECT_NE(outcome.result.value("error", "").find("needs a model with parameters"),
            std::string::npos)
      << outcome.result.dump();
}

TEST_F(TorchScriptTest, FileThatIsNotTorchScriptIsNamed) {
  const std::string path = ScratchPath("garbage.pt");
  std::ofstream(path) << "not a zip archive";
  const JobOutcome outcome = RunJob(Job(path, {{4}}));
  std::remove(path.c_str());
  EXPECT_EQ(outcome.exit_code, kExitRejected);
  EXPECT_NE(outcome.result.value("error", "").find(path + " is not a TorchScript file"),
            std::string::npos)
      << outcome.result.dump();
}

// A user's student judged against its teacher: the job's module against a second
// TorchScript file (or a built-in model) on the same inputs.
TEST_F(TorchScriptTest, AStudentIsComparedWithItsTeacher) {
  json job = Job(affine_, {{4}});
  job["reference"] = {{"model", "torchscript"}, {"model_args", {{"path", affine_}}}};
  JobOutcome outcome = RunJob(job);
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  EXPECT_EQ(outcome.result.at("accuracy").at("max_abs_err"), 0.0);  // itself
  EXPECT_EQ(outcome.result.at("reference").at("path"), affine_);
  EXPECT_EQ(outcome.result.at("reference").at("params"), 4 * 3 + 3);

  const std::string teacher = ScratchPath("teacher.pt");
  {
    torch::jit::Module m("Teacher");
    m.register_parameter("w1", torch::randn({4, 16}), /*is_buffer=*/false);
    m.register_parameter("w2", torch::randn({16, 3}), /*is_buffer=*/false);
    m.define(
        "def forward(self, x):\n    return torch.matmul(torch.relu(torch.matmul(x, self.w1)), "
        "self.w2)\n");
    m.save(teacher);
  }
  job["reference"]["model_args"]["path"] = teacher;
  outcome = RunJob(job);
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  const json& accuracy = outcome.result.at("accuracy");
  EXPECT_GT(accuracy.at("rel_err").get<double>(), 0);
  EXPECT_TRUE(accuracy.at("top1_agreement").is_null());  // a module's outputs are not known labels
  EXPECT_EQ(outcome.result.at("reference").at("params"), 4 * 16 + 16 * 3);

  // A teacher whose outputs have another shape cannot judge it.
  json wide = Job(parameter_free_, {{2}, {2}});
  wide["reference"] = {{"model", "torchscript"}, {"model_args", {{"path", teacher}}}};
  outcome = RunJob(wide);
  std::remove(teacher.c_str());
  EXPECT_EQ(outcome.exit_code, kExitRejected);
  EXPECT_EQ(outcome.result.value("error", "")
                .rfind("reference: reference " + teacher + " failed on the job's inputs", 0),
            0u)
      << outcome.result.dump();

  // A built-in classifier as the teacher: top-1 agreement is its labels'.
  job["reference"] = {{"model", "mlp"}, {"model_args", {{"layers", {4, 32, 3}}}}};
  outcome = RunJob(job);
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  const double top1 = outcome.result.at("accuracy").at("top1_agreement").get<double>();
  EXPECT_GE(top1, 0);
  EXPECT_LE(top1, 1);
}

}  // namespace
}  // namespace benchfleet::worker
