// The benchmark engine end to end: one agent (calibrated at start where a test reads the
// host's peaks) runs every built-in model and a TorchScript file in inference and
// training, fp32, bf16 and int8 where it applies, at 1 and 2 threads; every row carries its
// statistics, memory, FLOP and accuracy columns. Bad jobs fail with a reason and the agent
// keeps serving.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "tests/fleet.h"
#include "tests/torchscript_fixture.h"
#include "worker/measure/steady_state.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const json kTiming = {
    {"warmup_s", 0.02}, {"min_time_s", 0.05}, {"max_time_s", 0.3}, {"target_ci", 0.2}};
const json kSmallModels = {
    {"matmul", {{"m", 128}, {"k", 128}, {"n", 128}}},
    {"mlp", {{"layers", {64, 64, 10}}}},
    {"cnn", {{"width", 8}, {"blocks", {1, 1, 1, 1}}, {"image_size", 32}, {"classes", 10}}},
    {"transformer", {{"hidden", 32}, {"heads", 4}, {"layers", 1}, {"ffn", 64}, {"seq_len", 16}}}};

json Sweep(const std::string& name, json models, json modes, json dtypes, json model_args) {
  return {{"name", name},
          {"matrix",
           {{"model", models},
            {"mode", modes},
            {"dtype", dtypes},
            {"batch_size", {4}},
            {"threads", {1, 2}}}},
          {"models", model_args},
          {"timing", kTiming}};
}

// A coordinator and one agent, calibrated at start or not; nullptr, with the fleet's logs
// in *error, when they did not come up.
std::unique_ptr<Fleet> StartEngineFleet(bool calibrated, std::string* error) {
  FleetOptions options;
  options.calibrate_agents = calibrated;
  auto fleet = std::make_unique<Fleet>(options);
  if (!fleet->StartCoordinator() || !fleet->StartAgent("engine") || !fleet->WaitForAgents(1, 60s)) {
    *error = fleet->Logs();
    return nullptr;
  }
  return fleet;
}

json RunSweepOn(Fleet& fleet, const json& sweep) {
  int64_t id = fleet.Submit(sweep);
  EXPECT_GT(id, 0) << sweep.dump();
  json done = fleet.WaitForSweep(id, 600s);
  EXPECT_TRUE(done.is_object()) << sweep["name"];
  return done;
}

// A fleet of its own for each test.
class EngineSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    fleet_ = StartEngineFleet(false, &error);
    ASSERT_TRUE(fleet_) << error;
  }
  void TearDown() override {
    if (HasFailure() && fleet_) std::cerr << fleet_->Logs();
  }
  json RunSweep(const json& sweep) { return RunSweepOn(*fleet_, sweep); }
  std::unique_ptr<Fleet> fleet_;
};

// The tests that read a fraction of the peak share one fleet whose agent calibrated its
// host at start (the host's GEMM peaks: tens of seconds on 2 CPUs), and each reads only
// its own sweeps. The binary is one ctest test (ONE_PROCESS in tests/CMakeLists.txt), so
// the suite's tests run in one process.
class CalibratedEngineSweepTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { shared_ = StartEngineFleet(true, &shared_error_); }
  static void TearDownTestSuite() { shared_.reset(); }
  void SetUp() override { ASSERT_TRUE(shared_) << shared_error_; }
  void TearDown() override {
    if (HasFailure() && shared_) std::cerr << shared_->Logs();
  }
  json RunSweep(const json& sweep) { return RunSweepOn(*shared_, sweep); }
  Fleet* fleet() { return shared_.get(); }
  static inline std::unique_ptr<Fleet> shared_;
  static inline std::string shared_error_;
};

TEST_F(CalibratedEngineSweepTest, EveryModelModeAndDtypeProducesAFullRow) {
  const std::string script = fleet()->dir("tiny.pt");
  ASSERT_TRUE(WriteTinyTorchScript(script));
  json torchscript_args = {{"torchscript", {{"path", script}, {"inputs", {{16}}}}}};
  // int8 applies to inference of models with Linear layers; the other sweeps cover the rest.
  std::vector<json> sweeps = {
      Sweep("inference", {"mlp", "cnn", "transformer"}, {"inference"}, {"fp32", "bf16", "int8"},
            kSmallModels),
      Sweep("train", {"matmul", "mlp", "cnn", "transformer"}, {"train"}, {"fp32", "bf16"},
            kSmallModels),
      Sweep("matmul", {"matmul"}, {"inference"}, {"fp32", "bf16"}, kSmallModels),
      Sweep("torchscript", {"torchscript"}, {"inference", "train"}, {"fp32", "bf16"},
            torchscript_args),
  };
  int expected = 0;
  std::string ours;  // this test's sweep ids, for the queries below
  for (const json& sweep : sweeps) {
    json done = RunSweep(sweep);
    ours += (ours.empty() ? "" : ", ") + done["sweep_id"].dump();
    int jobs = done["jobs"]["total"];
    expected += jobs;
    EXPECT_EQ(done["jobs"]["done"], jobs) << sweep["name"] << ": " << done.dump();
  }
  EXPECT_EQ(expected, 18 + 16 + 4 + 8);

  json rows = QueryRows(fleet()->db_path(),
                        "select * from result_summary where sweep_id in (" + ours + ")");
  ASSERT_EQ(rows.size(), static_cast<size_t>(expected));
  const bool calibrated =
      QueryValue(fleet()->db_path(), "select count(*) from calibrations") != json(0);
  if (!calibrated) {
    json refused = QueryValue(fleet()->db_path(),
                              "select error from job_failures where sweep = 'calibration'");
    ASSERT_TRUE(refused.is_string()) << "no calibration and no reason";
    std::cout << "calibration refused: " << refused.get<std::string>() << "\n";
  }
  std::set<std::string> combinations;
  for (const json& row : rows) {
    SCOPED_TRACE(row.dump());
    combinations.insert(row["model"].get<std::string>() + "/" + row["mode"].get<std::string>() +
                        "/" + row["dtype"].get<std::string>());
    for (const char* column :
         {"n", "median_ms", "mean_ms", "p90_ms", "p99_ms", "iqr_ms", "throughput_per_s",
          "effective_threads", "peak_rss_mb", "rss_before_model_mb", "param_bytes",
          "threads_mismatch", "model_build_s", "startup_s"}) {
      EXPECT_FALSE(row[column].is_null()) << column;
    }
    EXPECT_GE(row["n"].get<int>(), 1);
    const bool builtin = row["model"] != "torchscript";
    EXPECT_EQ(row["gflops"].is_null(), !builtin);
    // The agent calibrated its host: fp32 and bf16 rows of built-in models are read
    // against the peak of their dtype; int8 has no GEMM peak. A calibration refused as
    // noisy (a busy host) leaves every row without one, and says why in job_failures.
    const bool has_peak = builtin && row["dtype"] != "int8" && calibrated;
    EXPECT_EQ(row["fraction_of_peak"].is_null(), !has_peak);
    if (has_peak) {
      EXPECT_GT(row["fraction_of_peak"].get<double>(), 0);
    }
    const bool fp32 = row["dtype"] == "fp32";
    for (const char* column : {"max_abs_err", "mean_abs_err", "rel_err"}) {
      EXPECT_EQ(row[column].is_null(), fp32) << column;
    }
    if (row["dtype"] == "int8") {
      EXPECT_LT(row["rel_err"].get<double>(), 0.2);
    }
  }
  EXPECT_EQ(combinations.size(), 3u * 3 + 4 * 2 + 2 + 4);

  // The comparison views pair what they should.
  EXPECT_EQ(
      QueryValue(fleet()->db_path(),
                 "select count(*) from dtype_comparison where dtype = 'int8' and sweep_id in (" +
                     ours + ")"),
      6);
  EXPECT_GT(QueryValue(fleet()->db_path(),
                       "select count(*) from thread_scaling where threads = 2 "
                       "and speedup is not null and sweep_id in (" +
                           ours + ")")
                .get<int>(),
            0);
  EXPECT_EQ(QueryValue(fleet()->db_path(),
                       "select count(*) from host_calibration where "
                       "gemm_gflops_all > 0 and stream_triad_gbps_all > 0"),
            calibrated ? 1 : 0);
  json int8 = QueryRows(fleet()->db_path(),
                        "select speedup, rel_err, top1_agreement from dtype_comparison where "
                        "model = 'mlp' and dtype = 'int8' and threads = 1 and sweep_id in (" +
                            ours + ")");
  ASSERT_EQ(int8.size(), 1u);
  std::cout << "FIGURE engine sweep: " << expected << " jobs, " << combinations.size()
            << " model/mode/dtype combinations; tiny mlp int8 vs fp32 " << int8[0].dump() << "\n";
}

// Pruning and a reference model as sweep axes, through the coordinator, an agent and
// its workers into result_summary and the view prune_comparison.
TEST_F(EngineSweepTest, PrunedAndReferencedJobsLandInTheirColumnsAndView) {
  json prune = Sweep("prune", {"mlp", "cnn"}, {"inference"}, {"fp32"}, kSmallModels);
  prune["matrix"]["threads"] = 1;
  prune["matrix"]["prune"] = {nullptr,
                              {{"kind", "structured"}, {"ratio", 0.5}},
                              {{"kind", "magnitude"}, {"sparsity", 0.5}}};
  json done = RunSweep(prune);
  EXPECT_EQ(done["jobs"]["done"], 6) << done.dump();
  json rows =
      QueryRows(fleet_->db_path(),
                "select model, prune_kind, speedup, params_unpruned, params, weight_sparsity, "
                "top1_agreement from prune_comparison order by model, prune_kind");
  ASSERT_EQ(rows.size(), 4u);
  for (const json& row : rows) {
    SCOPED_TRACE(row.dump());
    EXPECT_GT(row["speedup"].get<double>(), 0);
    EXPECT_GE(row["top1_agreement"].get<double>(), 0);
    if (row["prune_kind"] == "structured") {
      EXPECT_LT(row["params"].get<int64_t>(), row["params_unpruned"].get<int64_t>());
      EXPECT_EQ(row["weight_sparsity"], 0.0);
    } else {
      EXPECT_EQ(row["params"], row["params_unpruned"]);
      EXPECT_NEAR(row["weight_sparsity"].get<double>(), 0.5, 0.01);
    }
  }

  // A student judged against a teacher: the accuracy columns against the reference.
  json reference = Sweep("reference", {"mlp"}, {"inference"}, {"fp32", "int8"}, kSmallModels);
  reference["matrix"]["threads"] = 1;
  reference["matrix"]["reference"] = {
      {{"model", "mlp"}, {"model_args", {{"layers", {64, 256, 10}}}}}};
  done = RunSweep(reference);
  EXPECT_EQ(done["jobs"]["done"], 2) << done.dump();
  rows = QueryRows(fleet_->db_path(),
                   "select dtype, reference_model, reference_params, rel_err, top1_agreement from "
                   "result_summary where sweep = 'reference'");
  ASSERT_EQ(rows.size(), 2u);
  for (const json& row : rows) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["reference_model"], "mlp");
    EXPECT_EQ(row["reference_params"], 64 * 256 + 256 + 256 * 10 + 10);
    EXPECT_GT(row["rel_err"].get<double>(), 0);
    EXPECT_FALSE(row["top1_agreement"].is_null());
  }
}

TEST_F(EngineSweepTest, BadJobsFailWithTheirReasonAndTheAgentKeepsServing) {
  // Refused at submission: nothing is enqueued.
  for (const auto& [sweep, words] : std::vector<std::pair<json, std::string>>{
           {Sweep("unknown", {"resnet9000"}, {"inference"}, {"fp32"}, json::object()),
            "unknown model \"resnet9000\""},
           {Sweep("int8-matmul", {"matmul"}, {"inference"}, {"int8"}, kSmallModels),
            "needs Linear layers; model matmul has none"},
           // A model file that is not there is never uploaded, so never run.
           {Sweep("missing", {"torchscript"}, {"inference"}, {"fp32"},
                  {{"torchscript", {{"path", fleet_->dir("nope.pt")}, {"inputs", {{16}}}}}}),
            "nope.pt"}}) {
    std::string error;
    EXPECT_EQ(fleet_->Submit(sweep, &error), -1);
    EXPECT_NE(error.find(words), std::string::npos) << error;
  }
  // Accepted, then failed by the worker with the reason.
  const std::string script = fleet_->dir("tiny.pt");
  ASSERT_TRUE(WriteTinyTorchScript(script));
  const std::string garbage = fleet_->dir("garbage.pt");
  std::ofstream(garbage) << "not a TorchScript file";
  json not_torchscript = Sweep("garbage", {"torchscript"}, {"inference"}, {"fp32"},
                               {{"torchscript", {{"path", garbage}, {"inputs", {{16}}}}}});
  json misfit = Sweep("misfit", {"torchscript"}, {"inference"}, {"fp32"},
                      {{"torchscript", {{"path", script}, {"inputs", {{7}}}}}});
  for (const auto& [sweep, words] : std::vector<std::pair<json, std::string>>{
           {not_torchscript, "is not a TorchScript file"}, {misfit, "does not fit the model"}}) {
    json done = RunSweep(sweep);
    EXPECT_EQ(done["jobs"]["failed"], 2) << done.dump();
    json errors = QueryRows(fleet_->db_path(), "select error from job_failures where sweep_id = " +
                                                   done["sweep_id"].dump());
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_NE(errors[0]["error"].get<std::string>().find(words), std::string::npos)
        << errors.dump();
  }
  // The agent is still there and still works.
  json fine = RunSweep(Sweep("fine", {"mlp"}, {"inference"}, {"fp32"}, kSmallModels));
  EXPECT_EQ(fine["jobs"]["done"], 2);
  EXPECT_TRUE(fleet_->agent("engine").running());
}

// How many CPUs this process gets now: two threads spin for `seconds` and their CPU
// time is divided by the wall time (2.0 on an idle 2-CPU host; less where the hypervisor
// or another process takes a CPU away).
double CpusGivenToTwoSpinningThreads(double seconds) {
  std::atomic<bool> stop{false};
  std::vector<double> cpu_s(2, 0);
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&stop, &cpu_s, t] {
      volatile std::uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      cpu_s[static_cast<std::size_t>(t)] =
          static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    });
  }
  // The measurement's window: how long the two busy threads run, on the real clock.
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& t : threads) t.join();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return (cpu_s[0] + cpu_s[1]) / wall;
}

// The thread sweep must tell the truth on this 2-core machine: for a GEMM-bound model two
// threads beat one (OpenMP and OpenBLAS coordinated), and one thread uses one core. A
// timing comparison, so a noisy run may repeat the sweep, at most three times; where
// every run lost and the host then gave two spinning threads less than 1.7 CPUs, the
// host had no second CPU to give and the claim cannot be tested: skipped, saying so.
TEST_F(EngineSweepTest, TwoThreadsBeatOneForGemm) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs";
  json sweep = {
      {"name", "gemm-threads"},
      {"matrix", {{"model", {"matmul"}}, {"batch_size", {1}}, {"threads", {1, 2}}}},
      {"models", {{"matmul", {{"m", 768}, {"k", 768}, {"n", 768}}}}},
      {"timing", {{"warmup_s", 0.2}, {"min_time_s", 1}, {"max_time_s", 3}, {"target_ci", 0.01}}}};
  json scaling;
  double most_cpus_given = 0;  // after each losing run
  for (int run = 0; run < 3; ++run) {
    json done = RunSweep(sweep);
    ASSERT_EQ(done["jobs"]["done"], 2);
    scaling = QueryRows(fleet_->db_path(),
                        "select threads, median_ms, effective_threads, speedup from thread_scaling "
                        "where sweep_id = " +
                            done["sweep_id"].dump() + " order by threads");
    ASSERT_EQ(scaling.size(), 2u);
    if (scaling[1]["speedup"].get<double>() > 1.2) break;
    most_cpus_given = std::max(most_cpus_given, CpusGivenToTwoSpinningThreads(0.5));
  }
  std::cout << "FIGURE matmul 768^3 thread scaling: " << scaling.dump() << "\n";
  if (scaling[1]["speedup"].get<double>() <= 1.2 && most_cpus_given < 1.7) {
    GTEST_SKIP() << "three runs found no gain from a second thread, and after each the host "
                    "gave two spinning threads at most "
                 << most_cpus_given << " CPUs: there was no second CPU to use (" << scaling.dump()
                 << ")";
  }
  EXPECT_GT(scaling[1]["speedup"].get<double>(), 1.2);
  EXPECT_NEAR(scaling[0]["effective_threads"].get<double>(), 1.0, 0.25);
  EXPECT_GT(scaling[1]["effective_threads"].get<double>(), 1.5);
}

// A GEMM whose first second runs slower (the host's memory management after the
// buffers are allocated) must not report a median that mixes the two paces: after a
// short warm-up it reports >= 0.9 of the calibrated peak, or says it is unsteady (or
// that the host was disturbed while it ran). A 2 s cap that fits fewer samples than
// a change needs to show is always unsteady.
TEST_F(CalibratedEngineSweepTest, MatmulAfterAShortWarmupReportsNearPeakOrIsFlagged) {
  json sweep = {
      {"name", "gemm-steady"},
      {"matrix", {{"model", {"matmul"}}, {"batch_size", {1}}, {"threads", {1}}}},
      {"timing", {{"warmup_s", 0.1}, {"min_time_s", 0.5}, {"max_time_s", 2}, {"target_ci", 0.01}}}};
  json done = RunSweep(sweep);
  ASSERT_EQ(done["jobs"]["done"], 1);
  const json row =
      QueryRows(fleet()->db_path(),
                "select fraction_of_peak, peak_gflops, gflops, unsteady, disturbed, n, "
                "discarded_samples, discarded_median_ms, median_ms from result_summary "
                "where sweep_id = " +
                    done["sweep_id"].dump())
          .at(0);
  std::cout << "FIGURE matmul 2048, warmup 0.1 s, max 2 s, 1 thread: " << row.dump() << "\n";
  if (row["n"].get<int>() < static_cast<int>(worker::kSamplesToSeeRegimeChange)) {
    EXPECT_EQ(row["unsteady"], 1) << row.dump();
  }
  if (row["fraction_of_peak"].is_null()) {
    // The only excuse for no peak: the calibration was refused as noisy, and says so.
    json refused = QueryValue(fleet()->db_path(),
                              "select error from job_failures where sweep = 'calibration'");
    ASSERT_TRUE(refused.is_string()) << row.dump();
    EXPECT_NE(refused.get<std::string>().find("noisy"), std::string::npos);
    return;
  }
  EXPECT_TRUE(row["fraction_of_peak"].get<double>() >= 0.9 || row["unsteady"] == 1 ||
              row["disturbed"] == 1)
      << row.dump();
}

}  // namespace
}  // namespace benchfleet::testing
