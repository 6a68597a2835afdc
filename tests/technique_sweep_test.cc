// The CPU-acceleration toolbox end to end: one sweep through a real coordinator, agent
// and workers crosses the techniques on the mlp, the cnn and a TorchScript cnn —
// pruning (magnitude and structured), checkpointing in train, the cnn's memory format,
// the TorchScript jit modes, replicas and a profile of every job — with "invalid":
// "skip" leaving out the combinations the job rules refuse. Every row must carry the
// figures of the techniques it ran, and each comparison view must pair them.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <thread>

#include "tests/fleet.h"
#include "tests/process.h"
#include "tests/torchscript_fixture.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class TechniqueSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet_ = std::make_unique<Fleet>();
    ASSERT_TRUE(fleet_->StartCoordinator());
    ASSERT_TRUE(fleet_->StartAgent("toolbox"));
    ASSERT_TRUE(fleet_->WaitForAgents(1, 60s)) << fleet_->Logs();
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << fleet_->Logs();
  }
  json Rows(const std::string& sql) { return QueryRows(fleet_->db_path(), sql); }
  std::unique_ptr<Fleet> fleet_;
};

TEST_F(TechniqueSweepTest, OneSweepCrossesEveryTechniqueAndEveryRowHasItsFigures) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "replicas 2 × threads 1 need 2 CPUs";
  const std::string script = fleet_->dir("cnn.pt");
  ASSERT_TRUE(WriteTorchScriptCnn(script, 4));
  const json sweep = {
      {"name", "toolbox"},
      {"invalid", "skip"},
      {"matrix",
       {{"model", {"mlp", "cnn", "torchscript"}},
        {"mode", {"inference", "train"}},
        {"batch_size", 4},
        {"threads", 1},
        {"profile", true},
        {"checkpointing", {false, true}},
        {"prune",
         {nullptr,
          {{"kind", "structured"}, {"ratio", 0.5}},
          {{"kind", "magnitude"}, {"sparsity", 0.5}}}},
        {"replicas", {1, 2}}}},
      // Replicas with the unpruned, uncheckpointed jobs only: enough to pair them.
      {"exclude",
       {{{"replicas", 2}, {"checkpointing", true}},
        {{"replicas", 2}, {"prune", {{"kind", "structured"}, {"ratio", 0.5}}}},
        {{"replicas", 2}, {"prune", {{"kind", "magnitude"}, {"sparsity", 0.5}}}}}},
      {"models",
       {{"mlp", {{"layers", {64, 64, 10}}}},
        {"cnn",
         {{"width", 8},
          {"blocks", {1, 1, 1, 1}},
          {"image_size", 32},
          {"classes", 10},
          {"memory_format", {"contiguous", "channels_last"}}}},
        {"torchscript",
         {{"path", script}, {"inputs", {{3, 16, 16}}}, {"jit", {"none", "freeze", "optimize"}}}}}},
      {"timing",
       {{"warmup_s", 0.02}, {"min_time_s", 0.05}, {"max_time_s", 0.2}, {"target_ci", 0.2}}}};
  std::string error;
  const int64_t id = fleet_->Submit(sweep, &error);
  ASSERT_GT(id, 0) << error;
  const json done = fleet_->WaitForSweep(id, 600s);
  ASSERT_TRUE(done.is_object());
  const int jobs = done["jobs"]["total"];
  EXPECT_EQ(done["jobs"]["done"], jobs) << done.dump();

  const json rows = Rows("select * from result_summary where sweep = 'toolbox'");
  ASSERT_EQ(rows.size(), static_cast<size_t>(jobs));
  std::map<std::string, int> seen;  // technique -> rows
  for (const json& row : rows) {
    SCOPED_TRACE(row.dump());
    const json args = json::parse(row["model_args"].get<std::string>());
    const json spec =
        json::parse(Rows("select spec from jobs where job_id = " + row["job_id"].dump())[0]["spec"]
                        .get<std::string>());
    // The figures every row has.
    for (const char* column : {"median_ms", "throughput_per_s", "peak_rss_mb", "params"}) {
      EXPECT_FALSE(row[column].is_null()) << column;
    }
    // Energy: measured, or null with the reason (this VM has no powercap).
    EXPECT_TRUE(!row["energy_cpu_j"].is_null() || row["energy_note"].is_string());
    // Every job was profiled: its operators are in op_profile.
    EXPECT_GT(
        Rows("select count(*) as n from op_profile where job_id = " + row["job_id"].dump())[0]["n"]
            .get<int>(),
        0);
    ++seen["profile"];
    if (!row["prune_kind"].is_null()) {
      ++seen["prune " + row["prune_kind"].get<std::string>()];
      EXPECT_FALSE(row["params_unpruned"].is_null());
      EXPECT_FALSE(row["rel_err"].is_null());
      EXPECT_FALSE(row["top1_agreement"].is_null());
      if (row["prune_kind"] == "structured") {
        EXPECT_LT(row["params"].get<int64_t>(), row["params_unpruned"].get<int64_t>());
      }
    }
    if (spec.value("checkpointing", json(false)) == true) {
      ++seen["checkpointing"];
      EXPECT_EQ(row["mode"], "train");
      EXPECT_FALSE(row["step_peak_alloc_mb"].is_null());
    }
    if (spec.value("replicas", 1) == 2) {
      ++seen["replicas"];
      EXPECT_EQ(row["replicas"], 2);
      EXPECT_GT(row["aggregate_throughput_per_s"].get<double>(), 0);
      EXPECT_EQ(Rows("select count(*) as n from result_ranks where job_id = " +
                     row["job_id"].dump())[0]["n"],
                2);
    }
    if (row["model"] == "cnn") ++seen["cnn " + args.value("memory_format", "contiguous")];
    if (row["model"] == "torchscript") {
      const std::string jit = args.value("jit", "none");
      ++seen["jit " + jit];
      // A compiled module is checked against the module as saved.
      if (jit != "none") {
        EXPECT_FALSE(row["max_abs_err"].is_null());
      }
    }
  }
  for (const char* technique :
       {"profile", "prune structured", "prune magnitude", "checkpointing", "replicas",
        "cnn contiguous", "cnn channels_last", "jit none", "jit freeze", "jit optimize"}) {
    EXPECT_GT(seen[technique], 0) << technique;
  }
  // Each comparison view pairs what it should.
  EXPECT_GT(Rows("select count(*) as n from prune_comparison where sweep_id = " +
                 std::to_string(id))[0]["n"]
                .get<int>(),
            0);
  EXPECT_GT(Rows("select count(*) as n from checkpointing_comparison where sweep_id = " +
                 std::to_string(id))[0]["n"]
                .get<int>(),
            0);
  EXPECT_GT(Rows("select count(*) as n from technique_comparison where sweep_id = " +
                 std::to_string(id))[0]["n"]
                .get<int>(),
            0);
  EXPECT_GT(Rows("select count(*) as n from replica_scaling where replicas = 2 and sweep_id = " +
                 std::to_string(id))[0]["n"]
                .get<int>(),
            0);
  EXPECT_GT(
      Rows("select count(*) as n from op_comparison where sweep_id = " + std::to_string(id))[0]["n"]
          .get<int>(),
      0);
  std::cout << "FIGURE technique sweep: " << jobs << " jobs";
  for (const auto& [technique, n] : seen) std::cout << ", " << technique << " " << n;
  std::cout << "\n";
}

// `benchfleet recommend` on a real sweep: fp32 and int8, two batch sizes and two thread
// counts of the mlp on a priced host. It returns a best configuration and the Pareto
// rows behind it, each a result of the sweep; an accuracy limit of 0 leaves only fp32.
// The serving scenarios through the real fleet: coordinator, agent, worker. A server run
// with an SLO lands in the serving view with its rate and p99 from arrival, and
// recommend weighs it by that rate and that latency.
TEST_F(TechniqueSweepTest, ServingScenariosRunThroughTheFleetAndRecommendWeighsThemByTheirSlo) {
  const json sweep = {
      {"name", "serve"},
      {"matrix",
       {{"model", "mlp"},
        {"batch_size", 1},  // single_stream's; the server batches up to its max_batch
        {"threads", 1},
        {"scenario",
         {json{{"kind", "single_stream"}, {"min_duration_s", 0.1}, {"min_queries", 50}},
          json{{"kind", "server"},
               {"qps", 200},
               {"max_batch", 8},
               {"max_wait_ms", 1},
               {"slo_p99_ms", 50},
               {"min_duration_s", 0.1},
               {"min_queries", 30},
               {"max_duration_s", 5}}}}}},
      {"models", {{"mlp", {{"layers", {64, 128, 10}}}}}},
      {"timing",
       {{"warmup_s", 0.02}, {"min_time_s", 0.05}, {"max_time_s", 0.2}, {"target_ci", 0.2}}}};
  std::string error;
  const int64_t id = fleet_->Submit(sweep, &error);
  ASSERT_GT(id, 0) << error;
  ASSERT_TRUE(fleet_->WaitForSweep(id, 300s).is_object());
  const json rows = Rows(
      "select scenario, achieved_qps, p99_ms, slo_p99_ms, max_qps_within_slo, queries "
      "from serving where sweep_id = " +
      std::to_string(id) + " order by scenario");
  ASSERT_EQ(rows.size(), 2u) << rows.dump() << fleet_->Logs();
  const json& server = rows[0];
  const json& single = rows[1];
  EXPECT_EQ(server["scenario"], "server");
  EXPECT_EQ(server["slo_p99_ms"], 50.0);
  ASSERT_TRUE(server["max_qps_within_slo"].is_number()) << server.dump();
  EXPECT_GE(server["max_qps_within_slo"].get<double>(), 200.0)
      << "200 qps is far below this mlp's capacity";
  EXPECT_LE(server["p99_ms"].get<double>(), 50.0);
  EXPECT_EQ(single["scenario"], "single_stream");
  EXPECT_GE(single["queries"].get<int64_t>(), 50);
  // result_capacity weighs the server run by its rate within the SLO and its p99 from
  // arrival.
  const json capacity = Rows(
      "select capacity_per_s, latency_p99_ms from result_capacity where scenario = 'server' "
      "and sweep_id = " +
      std::to_string(id));
  ASSERT_EQ(capacity.size(), 1u);
  EXPECT_EQ(capacity[0]["capacity_per_s"], server["max_qps_within_slo"]);
  EXPECT_EQ(capacity[0]["latency_p99_ms"], server["p99_ms"]);

  std::string out, err;
  ASSERT_EQ(RunCommand({kCliBin, "--coordinator", fleet_->clients_endpoint(), "recommend",
                        "--model", "mlp", "--slo-p99-ms", "50", "--format", "json"},
                       &out, &err),
            0)
      << err;
  const json answer = json::parse(out);
  ASSERT_EQ(answer.size(), 1u) << out;
  ASSERT_TRUE(answer[0]["best"].is_object()) << out;
  EXPECT_LE(answer[0]["best"]["p99_ms"].get<double>(), 50.0);
  std::cout << "FIGURE serving through the fleet: " << rows.dump() << "\n";
}

TEST_F(TechniqueSweepTest, RecommendOnARealSweepNamesAConfigurationAndTheRowsBehindIt) {
  const json sweep = {
      {"name", "decide"},
      {"matrix",
       {{"model", "mlp"},
        {"dtype", {"fp32", "int8"}},
        {"batch_size", {1, 32}},
        {"threads", {1, 2}}}},
      {"models", {{"mlp", {{"layers", {128, 128, 10}}}}}},
      {"timing",
       {{"warmup_s", 0.02}, {"min_time_s", 0.05}, {"max_time_s", 0.2}, {"target_ci", 0.2}}}};
  std::string error;
  const int64_t id = fleet_->Submit(sweep, &error);
  ASSERT_GT(id, 0) << error;
  ASSERT_TRUE(fleet_->WaitForSweep(id, 300s).is_object());
  auto cli = [&](std::vector<std::string> args, std::string* out) {
    std::vector<std::string> argv = {kCliBin, "--coordinator", fleet_->clients_endpoint()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string err;
    const int status = RunCommand(argv, out, &err);
    EXPECT_EQ(status, 0) << err;
    return status;
  };
  std::string out;
  cli({"host", "set-price", "toolbox", "0.40"}, &out);
  cli({"recommend", "--model", "mlp", "--by", "cost", "--format", "json"}, &out);
  const json answer = json::parse(out);
  ASSERT_EQ(answer.size(), 1u) << out;
  EXPECT_EQ(answer[0]["host"], "toolbox");
  ASSERT_TRUE(answer[0]["best"].is_object()) << out;
  EXPECT_TRUE(answer[0]["best"]["cost_per_1m_samples"].is_number());
  std::set<int64_t> jobs;
  for (const json& row : Rows("select job_id from result_summary where sweep = 'decide'"))
    jobs.insert(row["job_id"].get<int64_t>());
  EXPECT_EQ(jobs.size(), 8u);
  EXPECT_TRUE(jobs.count(answer[0]["best"]["job_id"].get<int64_t>()));
  ASSERT_FALSE(answer[0]["pareto"].empty());
  for (const json& row : answer[0]["pareto"])
    EXPECT_TRUE(jobs.count(row["job_id"].get<int64_t>())) << row.dump();
  // No accuracy may be lost: the best is an fp32 configuration.
  cli({"recommend", "--model", "mlp", "--max-accuracy-drop", "0", "--format", "json"}, &out);
  const json exact = json::parse(out);
  ASSERT_TRUE(exact[0]["best"].is_object()) << out;
  EXPECT_EQ(exact[0]["best"]["dtype"], "fp32");
  // The report carries the same decision: by throughput, the best row marked.
  cli({"recommend", "--model", "mlp", "--format", "json"}, &out);
  const json fastest = json::parse(out);
  const std::string page = fleet_->dir("report.html");
  cli({"report", "--sweep", std::to_string(id), "--out", page}, &out);
  std::ifstream file(page);
  const std::string html((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t section = html.find("<h2>Recommendation: mlp");
  ASSERT_NE(section, std::string::npos);
  EXPECT_NE(html.find("<td>best</td><td class=\"num\">" +
                          std::to_string(fastest[0]["best"]["job_id"].get<int64_t>()) + "</td>",
                      section),
            std::string::npos);
  std::cout << "FIGURE recommend (mlp 128-128-10, cheapest): " << answer[0]["best"].dump() << "\n";
}

}  // namespace
}  // namespace benchfleet::testing
