// Two LibTorch versions on one agent, end to end: the agent carries the worker of the
// torch wheel and one built against Debian's 1.13 (deploy/build-worker.sh legacy),
// probes and registers both, and a sweep with a `torch` axis runs each configuration on
// each version, interleaved; `benchfleet results --view torch` puts them side by side,
// and each version's results are a series of their own. A version no agent has is
// refused at submit, naming the versions the fleet has.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class TorchAxisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(kSecondWorkerBin).empty()) {
      GTEST_SKIP() << "no second worker: configure with -DBENCHFLEET_SECOND_WORKER=PATH "
                      "(deploy/test.sh builds Debian's LibTorch 1.13 one with "
                      "deploy/build-worker.sh legacy)";
    }
    ASSERT_TRUE(std::filesystem::exists(kSecondWorkerBin)) << kSecondWorkerBin;
    fleet_ = std::make_unique<Fleet>();
    ASSERT_TRUE(fleet_->StartCoordinator());
    ASSERT_TRUE(fleet_->StartAgent("two-torches", {"--worker", kSecondWorkerBin}));
    ASSERT_TRUE(fleet_->WaitForAgents(1, 60s)) << fleet_->Logs();
  }
  void TearDown() override {
    if (HasFailure() && fleet_) std::cerr << fleet_->Logs();
  }
  // `benchfleet ARGS...` against the fleet; its exit code, its output in *out.
  int Cli(std::vector<std::string> args, std::string* out, std::string* err) {
    args.insert(args.begin(), {kCliBin, "--coordinator", fleet_->clients_endpoint()});
    return RunCommand(args, out, err);
  }
  std::unique_ptr<Fleet> fleet_;
};

TEST_F(TorchAxisTest, EachVersionRunsOnItsWorkerAndTheyStandSideBySide) {
  // Both workers registered, each with its torch, BLAS and techniques.
  const json workers = json::parse(
      QueryValue(fleet_->db_path(), "SELECT json_extract(capabilities, '$.workers') FROM hosts")
          .get<std::string>());
  ASSERT_EQ(workers.size(), 2u) << workers.dump();
  EXPECT_EQ(workers[0]["torch_version"].get<std::string>().substr(0, 2), "2.");
  EXPECT_EQ(workers[0]["blas"], "mkl");
  EXPECT_EQ(workers[1]["torch_version"].get<std::string>().substr(0, 5), "1.13.");
  EXPECT_EQ(workers[1]["blas"], "openblas");
  EXPECT_EQ(workers[1]["techniques"], json({"eager"}));

  const json sweep = {{"name", "upgrade"},
                      {"matrix",
                       {{"model", "mlp"},
                        {"batch_size", 8},
                        {"dtype", {"fp32", "int8"}},
                        {"torch", {"2", "1.13"}}}},
                      {"models", {{"mlp", {{"layers", {64, 64, 10}}}}}},
                      {"timing", {{"warmup_s", 0.05}, {"min_time_s", 0.2}, {"max_time_s", 0.5}}}};
  std::string error;
  const int64_t sweep_id = fleet_->Submit(sweep, &error);
  ASSERT_GT(sweep_id, 0) << error;
  const json done = fleet_->WaitForSweep(sweep_id, 180s);
  ASSERT_EQ(done["jobs"]["done"], 4) << done.dump();

  const json rows = QueryRows(
      fleet_->db_path(),
      "SELECT dtype, torch_version, quantization, json_extract(detail, '$.runtime.blas') AS blas, "
      "series, fingerprint FROM results WHERE sweep_id = " +
          std::to_string(sweep_id) + " AND ok ORDER BY job_id");
  ASSERT_EQ(rows.size(), 4u) << rows.dump();
  std::set<std::string> series, fingerprints;
  for (const json& row : rows) {
    series.insert(row["series"].get<std::string>());
    fingerprints.insert(row["fingerprint"].get<std::string>());
    const bool old = row["torch_version"].get<std::string>().rfind("1.13.", 0) == 0;
    EXPECT_EQ(row["blas"], old ? "openblas" : "mkl") << row.dump();
    if (row["dtype"] == "int8") {
      EXPECT_EQ(row["quantization"], "eager_dynamic") << row.dump();
    }
  }
  // Interleaved: each dtype's versions one after the other.
  EXPECT_EQ(rows[0]["dtype"], rows[1]["dtype"]);
  EXPECT_NE(rows[0]["torch_version"], rows[1]["torch_version"]);
  // Each version's results are a series, and a fingerprint, of their own.
  EXPECT_EQ(series.size(), 4u);
  EXPECT_EQ(fingerprints.size(), 2u);

  std::string out, err;
  ASSERT_EQ(Cli({"results", "--view", "torch", "--sweep", std::to_string(sweep_id)}, &out, &err), 0)
      << err;
  EXPECT_NE(out.find("base_torch"), std::string::npos) << out;
  EXPECT_NE(out.find("1.13."), std::string::npos) << out;
  EXPECT_NE(out.find("speedup"), std::string::npos) << out;
  const json side = QueryRows(fleet_->db_path(),
                              "SELECT dtype, base_torch, torch, speedup, base_ci_low_ms, "
                              "median_ci_high_ms FROM torch_comparison ORDER BY dtype");
  ASSERT_EQ(side.size(), 2u) << side.dump();
  for (const json& row : side) {
    EXPECT_EQ(row["base_torch"].get<std::string>().substr(0, 5), "1.13.") << row.dump();
    EXPECT_EQ(row["torch"].get<std::string>().substr(0, 2), "2.") << row.dump();
    EXPECT_GT(row["speedup"].get<double>(), 0);
  }
}

TEST_F(TorchAxisTest, AVersionNoAgentHasIsRefusedAtSubmitNamingTheFleetsVersions) {
  const std::string file = fleet_->dir("nope.json");
  std::ofstream(file) << json({{"name", "nope"},
                               {"matrix",
                                {{"model", "mlp"}, {"batch_size", 8}, {"torch", {"2", "2.9"}}}}})
                             .dump();
  std::string out, err;
  EXPECT_NE(Cli({"submit", file}, &out, &err), 0);
  EXPECT_NE(err.find("matrix.torch[1]: no agent has a worker of torch 2.9"), std::string::npos)
      << err;
  EXPECT_NE(err.find("1.13."), std::string::npos) << err;
  EXPECT_EQ(QueryValue(fleet_->db_path(), "SELECT count(*) FROM sweeps"), 0);
  // aoti on the 1.13 worker: no worker of the fleet runs it.
  std::ofstream(file, std::ios::trunc)
      << json({{"name", "old-aoti"},
               {"matrix",
                {{"model", "mlp"}, {"batch_size", 8}, {"technique", "aoti"}, {"torch", "1.13"}}}})
             .dump();
  EXPECT_NE(Cli({"submit", file}, &out, &err), 0);
  EXPECT_NE(err.find("that runs technique aoti"), std::string::npos) << err;
}

}  // namespace
}  // namespace benchfleet::testing
