// AOTInductor packages and the technique axis through the worker library: a user's
// package checked and run (and each bad one refused with its reason before anything of it
// runs), and a zoo model compiled by the python of the worker's torch into TorchScript
// and into a package, with the worker's own weights, cached by content.
#include "worker/models/compiled_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "worker/job_runner.h"
#include "worker/models/aoti_model.h"
#include "worker/models/cuda_graph.h"

#ifndef BENCHFLEET_TORCH_PYTHON
#define BENCHFLEET_TORCH_PYTHON ""
#endif

namespace benchfleet::worker {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json Timing() {
  return {{"warmup_s", 0.05}, {"min_time_s", 0.2}, {"max_time_s", 1}, {"target_ci", 0.05}};
}

class CompiledModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One cache for every run of these tests (and the fleets' agents): a package is
    // compiled once per content, not once per run.
    setenv(kPackageCacheVariable, BENCHFLEET_TEST_PACKAGE_CACHE, /*overwrite=*/1);
    if (std::string(BENCHFLEET_TORCH_PYTHON).empty() || !AotiSupported()) return;
    const std::string command = std::string(BENCHFLEET_TORCH_PYTHON) + " " + BENCHFLEET_SOURCE_DIR +
                                "/tests/make_aoti_packages.py " + Packages() + " > /dev/null 2>&1";
    made_ = std::system(command.c_str()) == 0;
  }
  void SetUp() override {
    if (std::string(BENCHFLEET_TORCH_PYTHON).empty()) {
      GTEST_SKIP() << "the worker was built without BENCHFLEET_TORCH_PYTHON: no torch python to "
                      "compile with";
    }
    if (!AotiSupported())
      GTEST_SKIP() << "this LibTorch has no AOTInductor package loader (2.6 or newer has)";
    ASSERT_TRUE(made_) << "tests/make_aoti_packages.py failed";
  }
  static std::string Packages() {
    return std::string(BENCHFLEET_TEST_PACKAGE_CACHE) + "/test-packages";
  }

  static json PackageJob(const std::string& file, const json& patch = json::object()) {
    json job = {{"job_id", 1},
                {"model", "aoti"},
                {"model_args", {{"path", Packages() + "/" + file}, {"inputs", {{32}}}}},
                {"mode", "inference"},
                {"dtype", "fp32"},
                {"device", "cpu"},
                {"batch_size", 4},
                {"threads", 1},
                {"timing", Timing()}};
    job.merge_patch(patch);
    return job;
  }
  static json ZooJob(const std::string& technique, const json& patch = json::object()) {
    json job = {
        {"job_id", 2},         {"model", "mlp"},  {"model_args", {{"layers", {64, 64, 10}}}},
        {"mode", "inference"}, {"dtype", "fp32"}, {"device", "cpu"},
        {"batch_size", 8},     {"threads", 1},    {"technique", technique},
        {"timing", Timing()}};
    job.merge_patch(patch);
    return job;
  }
  static inline bool made_ = false;
};

TEST_F(CompiledModelTest, AUsersPackageRunsAtTheBatchesItAllows) {
  for (int batch : {2, 4, 64}) {
    const JobOutcome outcome = RunJob(PackageJob("mlp.pt2", {{"batch_size", batch}}));
    ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
    EXPECT_GT(outcome.result["stats"]["median_ms"].get<double>(), 0);
    EXPECT_EQ(outcome.result["compile"]["technique"], "aoti");
    EXPECT_FALSE(outcome.result.contains("params"));  // constants inside the package
  }
  // A package that does not say which torch made it runs too.
  EXPECT_EQ(RunJob(PackageJob("no_version.pt2")).exit_code, kExitOk);
}

TEST_F(CompiledModelTest, EachBadPackageIsRefusedWithItsReasonBeforeItRuns) {
  struct Case {
    json job;
    std::string error;
  };
  const std::vector<Case> cases = {
      {PackageJob("not_zip.pt2"), "not_zip.pt2 is not an AOTInductor package"},
      {PackageJob("broken_so.pt2"), "the package's compiled library does not load in this worker"},
      {PackageJob("arm.pt2"), "the package was compiled for aarch64 and this host is "},
      {PackageJob("cuda.pt2"), "the package was compiled for cuda, not for device cpu"},
      {PackageJob("newer.pt2"),
       "the package was made by torch 99.0.0, newer than this worker's LibTorch"},
      {PackageJob("missing.pt2"), "cannot read the package"},
      // What the package checks of its inputs, once loaded.
      {PackageJob("mlp.pt2", {{"model_args", {{"inputs", {{16}}}}}}),
       "model_args.inputs: the input shape [[16]] (batch_size 4 prepended) does not fit the model: "
       "input_handles[0]: unmatched dim value at 1, expected: 32, but got: 16"},
      {PackageJob("mlp.pt2", {{"batch_size", 65}}),
       "dim value is too large at 0, expected to be <= 64"},
      {PackageJob("mlp.pt2", {{"dtype", "bf16"}}), "unmatched dtype"},
  };
  for (const Case& c : cases) {
    const JobOutcome outcome = RunJob(c.job);
    EXPECT_EQ(outcome.exit_code, kExitRejected) << outcome.result.dump();
    EXPECT_FALSE(outcome.result["ok"].get<bool>());
    EXPECT_NE(outcome.result.value("error", "").find(c.error), std::string::npos)
        << c.job["model_args"].dump() << ": " << outcome.result.value("error", "");
  }
}

TEST_F(CompiledModelTest, AZooModelCompiledEitherWayComputesWhatTheEagerOneDoesAndIsCached) {
  const JobOutcome eager = RunJob(ZooJob("eager"));
  ASSERT_EQ(eager.exit_code, kExitOk) << eager.result.dump();
  EXPECT_FALSE(eager.result.contains("compile"));
  json traced;
  for (const char* technique : {"torchscript", "aoti"}) {
    const JobOutcome first = RunJob(ZooJob(technique));
    ASSERT_EQ(first.exit_code, kExitOk) << first.result.dump();
    const json& compile = first.result["compile"];
    EXPECT_EQ(compile["technique"], technique);
    EXPECT_EQ(compile["package_sha256"].get<std::string>().size(), 64u) << compile.dump();
    EXPECT_GE(compile["compile_s"].get<double>(), 0);
    EXPECT_GT(compile["export_s"].get<double>(), 0);
    // The worker's own weights, loaded into the compiler's module: the same outputs.
    EXPECT_LT(first.result["accuracy"]["max_abs_err"].get<double>(), 1e-5)
        << first.result["accuracy"].dump();
    EXPECT_EQ(first.result["accuracy"]["top1_agreement"], 1.0);
    // The same model, weights and torch again: the cached file, with the figures of its making.
    const JobOutcome again = RunJob(ZooJob(technique));
    ASSERT_EQ(again.exit_code, kExitOk) << again.result.dump();
    EXPECT_TRUE(again.result["compile"]["cached"].get<bool>());
    EXPECT_EQ(again.result["compile"]["package_sha256"], compile["package_sha256"]);
    EXPECT_EQ(again.result["compile"]["compile_s"], compile["compile_s"]);
    if (std::string(technique) == "torchscript") traced = compile;
  }
  // Another seed draws other weights: another file.
  const JobOutcome reseeded = RunJob(ZooJob("torchscript", {{"seed", 7}}));
  ASSERT_EQ(reseeded.exit_code, kExitOk) << reseeded.result.dump();
  EXPECT_NE(reseeded.result["compile"]["package_sha256"], traced["package_sha256"]);
}

TEST_F(CompiledModelTest, Int8GoesThroughPt2eIntoAPackageAndSaysSo) {
  const JobOutcome eager = RunJob(ZooJob("eager", {{"dtype", "int8"}}));
  ASSERT_EQ(eager.exit_code, kExitOk) << eager.result.dump();
  EXPECT_EQ(eager.result["quantization"], kEagerInt8Path);
  const JobOutcome pt2e = RunJob(ZooJob("aoti", {{"dtype", "int8"}}));
  ASSERT_EQ(pt2e.exit_code, kExitOk) << pt2e.result.dump();
  EXPECT_EQ(pt2e.result["quantization"], kPt2eInt8Path);
  EXPECT_EQ(pt2e.result["compile"]["inductor_configs"]["freezing"], true);
  // 7-bit activations where the CPU has no int32 dot product (AVX2 hosts), 8 elsewhere.
  const json settings = pt2e.result["compile"]["quantization_config"];
  EXPECT_EQ(settings["is_dynamic"], true) << settings.dump();
  EXPECT_TRUE(settings["reduce_range"].is_boolean()) << settings.dump();
  // int8 against the fp32 model: close, as the eager path's is.
  EXPECT_LT(pt2e.result["accuracy"]["rel_err"].get<double>(), 0.05)
      << pt2e.result["accuracy"].dump();
  EXPECT_EQ(pt2e.result["accuracy"]["top1_agreement"], 1.0);
}

TEST_F(CompiledModelTest, TheProbeSaysWhichTechniquesThisWorkerRuns) {
  std::vector<std::string> expected = {"eager", "torchscript", "aoti"};
  if (CudaGraphSupported()) expected.push_back("cuda_graph");
  EXPECT_EQ(SupportedTechniques(), expected);
}

// One forward pass captured into a CUDA graph and replayed: the same outputs as eager.
TEST(CudaGraphTest, ACapturedStepComputesWhatTheEagerOneDoes) {
  if (!CudaGraphSupported())
    GTEST_SKIP() << "no CUDA device here (or a LibTorch without CUDA): nothing to capture";
  json job = {{"job_id", 3},
              {"model", "mlp"},
              {"model_args", {{"layers", {256, 256, 10}}}},
              {"mode", "inference"},
              {"dtype", "fp32"},
              {"device", "cuda"},
              {"batch_size", 32},
              {"threads", 1},
              {"technique", "cuda_graph"},
              {"timing", {{"warmup_s", 0.05}, {"min_time_s", 0.2}, {"max_time_s", 1}}}};
  const JobOutcome outcome = RunJob(job);
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  EXPECT_EQ(outcome.result["compile"]["technique"], "cuda_graph");
  EXPECT_LT(outcome.result["accuracy"]["max_abs_err"].get<double>(), 1e-5);
}

}  // namespace
}  // namespace benchfleet::worker
