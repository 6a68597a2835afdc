// The technique axis and AOTInductor packages end to end (schemas/worker.md, Technique;
// schemas/sweep.md, Models by content): one sweep times a zoo model eager, traced to
// TorchScript and compiled into a package on the agent's host, beside a user's package
// that `benchfleet submit` uploads and the agent fetches by its sha256; each row has its
// interval, and `--view technique` sets them side by side. A package the coordinator
// can tell is wrong is refused at submit; one only the worker can tell fails its job once,
// with its reason, and the agent goes on.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/sha256.h"
#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

class CompiledSweepTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::string(kTorchPython).empty()) return;
    const std::string command = std::string(kTorchPython) + " " + BENCHFLEET_SOURCE_DIR +
                                "/tests/make_aoti_packages.py " + Packages() + " > /dev/null 2>&1";
    made_ = std::system(command.c_str()) == 0;
  }
  static std::string Packages() { return std::string(kTestPackageCache) + "/test-packages"; }

  void SetUp() override {
    if (std::string(kTorchPython).empty())
      GTEST_SKIP() << "built without BENCHFLEET_TORCH_PYTHON: nothing compiles";
    ASSERT_TRUE(made_) << "tests/make_aoti_packages.py failed";
    fleet_ = std::make_unique<Fleet>();
    ASSERT_TRUE(fleet_->StartCoordinator());
    ASSERT_TRUE(fleet_->StartAgent("compiler", {"--models-dir", Packages()}));
    ASSERT_TRUE(fleet_->WaitForAgents(1, 60s)) << fleet_->Logs();
    client_dir_ = fleet_->dir("client");
    fs::create_directories(client_dir_);
  }
  void TearDown() override {
    if (HasFailure() && fleet_) std::cerr << fleet_->Logs();
  }
  // `benchfleet submit` of `sweep` from the client's directory, with the package files it
  // names copied beside it; the exit code.
  int Submit(const json& sweep, std::string* err, const std::vector<std::string>& files = {}) {
    for (const std::string& file : files) {
      fs::copy_file(Packages() + "/" + file, client_dir_ + "/" + file,
                    fs::copy_options::overwrite_existing);
    }
    const std::string path = client_dir_ + "/sweep.json";
    std::ofstream(path, std::ios::trunc) << sweep.dump(2);
    std::string out;
    return RunCommand(
        {kCliBin, "--coordinator", fleet_->clients_endpoint(), "submit", path, "--wait"}, &out,
        err);
  }
  static json Timing() { return {{"warmup_s", 0.05}, {"min_time_s", 0.3}, {"max_time_s", 1}}; }
  int64_t LastSweep() {
    return QueryValue(fleet_->db_path(), "SELECT max(sweep_id) FROM sweeps").get<int64_t>();
  }

  std::unique_ptr<Fleet> fleet_;
  std::string client_dir_;
  static inline bool made_ = false;
};

TEST_F(CompiledSweepTest, EagerTorchScriptAndAotiInOneTableEachWithItsInterval) {
  const json sweep = {
      {"name", "techniques"},
      {"matrix",
       {{"model", {"mlp", "aoti"}},
        {"batch_size", 4},
        {"technique", {"eager", "torchscript", "aoti"}}}},
      {"models",
       {{"mlp", {{"layers", {32, 32, 4}}}}, {"aoti", {{"path", "mlp.pt2"}, {"inputs", {{32}}}}}}},
      {"exclude",
       {{{"model", "aoti"}, {"technique", "torchscript"}},
        {{"model", "aoti"}, {"technique", "aoti"}}}},
      {"timing", Timing()}};
  std::string err;
  ASSERT_EQ(Submit(sweep, &err, {"mlp.pt2"}), 0) << err;
  auto package = Sha256OfFile(Packages() + "/mlp.pt2");
  ASSERT_TRUE(package.ok());
  EXPECT_NE(err.find("uploaded, sha256 " + package->sha256), std::string::npos) << err;
  const int64_t sweep_id = LastSweep();
  const json rows = QueryRows(
      fleet_->db_path(),
      "SELECT model, coalesce(technique, 'eager') AS technique, median_ms, median_ci_low_ms, "
      "median_ci_high_ms, compile_s, model_args, torch_version FROM result_summary "
      "WHERE sweep_id = " +
          std::to_string(sweep_id) + " ORDER BY job_id");
  ASSERT_EQ(rows.size(), 4u) << rows.dump();
  for (const json& row : rows) {
    EXPECT_GT(row["median_ms"].get<double>(), 0) << row.dump();
    EXPECT_FALSE(row["median_ci_low_ms"].is_null()) << row.dump();
    EXPECT_LE(row["median_ci_low_ms"].get<double>(), row["median_ms"].get<double>()) << row.dump();
    EXPECT_GE(row["median_ci_high_ms"].get<double>(), row["median_ms"].get<double>()) << row.dump();
  }
  // The user's package: shipped by its sha256, run as a package.
  EXPECT_EQ(rows[3]["model"], "aoti");
  EXPECT_EQ(rows[3]["technique"], "aoti");
  EXPECT_NE(rows[3]["model_args"].get<std::string>().find(package->sha256), std::string::npos);
  EXPECT_TRUE(fs::exists(fleet_->dir("agent-compiler/models/" + package->sha256)));
  // The zoo model compiled on the agent's host.
  EXPECT_TRUE(rows[2]["compile_s"].is_number()) << rows[2].dump();

  const json side = QueryRows(fleet_->db_path(),
                              "SELECT variant, baseline, speedup, baseline_ci_low_ms, "
                              "median_ci_low_ms, max_abs_err FROM technique_comparison "
                              "WHERE technique = 'technique' ORDER BY variant");
  ASSERT_EQ(side.size(), 2u) << side.dump();
  EXPECT_EQ(side[0]["variant"], "aoti");
  EXPECT_EQ(side[1]["variant"], "torchscript");
  for (const json& row : side) {
    EXPECT_EQ(row["baseline"], "eager");
    EXPECT_GT(row["speedup"].get<double>(), 0);
    EXPECT_LT(row["max_abs_err"].get<double>(), 1e-5) << row.dump();
  }
  std::string out;
  ASSERT_EQ(RunCommand({kCliBin, "--coordinator", fleet_->clients_endpoint(), "results", "--view",
                        "technique", "--sweep", std::to_string(sweep_id)},
                       &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("torchscript"), std::string::npos) << out;
  EXPECT_NE(out.find("median_ci_low_ms"), std::string::npos) << out;
}

TEST_F(CompiledSweepTest, APackageTheCoordinatorCanTellIsWrongIsRefusedAtSubmit) {
  struct Case {
    std::string file;
    std::string device;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"not_zip.pt2", "cpu", "models.aoti.sha256: "},
           {"cuda.pt2", "cpu", "matrix.device[0]: the AOTInductor package "},
           {"newer.pt2", "cpu",
            "the package was made by torch 99.0.0 and needs a worker of that torch or newer"},
       }) {
    const json sweep = {{"name", "bad"},
                        {"matrix", {{"model", "aoti"}, {"batch_size", 4}, {"device", c.device}}},
                        {"models", {{"aoti", {{"path", c.file}, {"inputs", {{32}}}}}}},
                        {"timing", Timing()}};
    std::string err;
    EXPECT_NE(Submit(sweep, &err, {c.file}), 0) << c.file;
    EXPECT_NE(err.find(c.error), std::string::npos) << c.file << ": " << err;
  }
  EXPECT_EQ(QueryValue(fleet_->db_path(), "SELECT count(*) FROM sweeps"), 0);
}

TEST_F(CompiledSweepTest, APackageOnlyTheWorkerCanTellIsWrongFailsItsJobOnceAndTheAgentGoesOn) {
  // Files on the agent's host (its --models-dir): nothing of them reaches the coordinator.
  for (const char* file : {"broken_so.pt2", "arm.pt2", "newer.pt2"}) {
    const json sweep = {
        {"name", std::string("local ") + file},
        {"matrix", {{"model", "aoti"}, {"batch_size", 4}}},
        {"models", {{"aoti", {{"agent_path", Packages() + "/" + file}, {"inputs", {{32}}}}}}},
        {"timing", Timing()}};
    std::string err;
    Submit(sweep, &err);
    const json job =
        QueryRows(fleet_->db_path(), "SELECT state, attempts, error FROM jobs WHERE sweep_id = " +
                                         std::to_string(LastSweep()));
    ASSERT_EQ(job.size(), 1u) << job.dump();
    EXPECT_EQ(job[0]["state"], "failed") << file;
    EXPECT_EQ(job[0]["attempts"], 1) << file << ": no retry can help";
    const std::string why = job[0]["error"].is_string() ? job[0]["error"].get<std::string>() : "";
    EXPECT_NE(why.find(std::string(file) == "broken_so.pt2" ? "compiled library does not load"
                       : std::string(file) == "arm.pt2"     ? "compiled for aarch64"
                                                            : "made by torch 99.0.0"),
              std::string::npos)
        << file << ": " << why;
  }
  // The agent still serves: a good package runs.
  const json good = {
      {"name", "good"},
      {"matrix", {{"model", "aoti"}, {"batch_size", 4}}},
      {"models", {{"aoti", {{"agent_path", Packages() + "/mlp.pt2"}, {"inputs", {{32}}}}}}},
      {"timing", Timing()}};
  std::string err;
  ASSERT_EQ(Submit(good, &err), 0) << err;
  EXPECT_EQ(QueryValue(fleet_->db_path(), "SELECT count(*) FROM results WHERE ok AND sweep_id = " +
                                              std::to_string(LastSweep())),
            1);
}

}  // namespace
}  // namespace benchfleet::testing
