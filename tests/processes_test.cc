// Repeats in fresh processes and the host check, end to end: a real coordinator at its
// default --processes, a real agent and real workers. Each job runs in fresh worker
// processes, the jobs' processes interleaved on the agent, and its result is made
// across them; the agent checks the host before each worker starts, records it with the
// result, and refuses a job that asks it to on a busy host; each result says where its
// threads went (thread_placement) and the host's pace before it ran.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>

#include "common/limits.h"
#include "tests/fleet.h"
#include "tests/process.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json SmallSweep(const json& extra = json::object()) {
  json sweep = json::parse(R"({
      "name": "small", "placement": "any",
      "matrix": {"model": "mlp", "batch_size": [1, 4], "threads": 1},
      "models": {"mlp": {"layers": [64, 64, 10]}},
      "timing": {"warmup_s": 0.02, "min_time_s": 0.05, "max_time_s": 0.2, "target_ci": 0.05}})");
  sweep.update(extra);
  return sweep;
}

class ProcessesFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fleet_.StartCoordinator()) << fleet_.Logs();
    ASSERT_TRUE(fleet_.StartAgent("agent1")) << fleet_.Logs();
    ASSERT_TRUE(fleet_.WaitForAgents(1, 60s)) << fleet_.Logs();
  }
  json Run(const json& sweep) {
    std::string error;
    const int64_t id = fleet_.Submit(sweep, &error);
    EXPECT_GT(id, 0) << error;
    const json status = fleet_.WaitForSweep(id, 600s);
    EXPECT_EQ(status.value("state", ""), "done") << status.dump() << fleet_.Logs();
    sweep_id_ = id;
    return status;
  }
  static FleetOptions AtTheDefault() {
    FleetOptions options;
    options.processes = 0;  // the coordinator's own --processes
    return options;
  }
  Fleet fleet_{AtTheDefault()};
  int64_t sweep_id_ = 0;
};

TEST_F(ProcessesFleetTest, EachJobRunsInFreshInterleavedProcessesAndItsIntervalIsAcrossThem) {
  Run(SmallSweep());
  const json results =
      QueryRows(fleet_.db_path(),
                "SELECT job_id, processes, median_ms, median_ci_low_ms, median_ci_high_ms, "
                "within_ci_low_ms, between_process_sd_ms, host_check, detail FROM results "
                "WHERE sweep_id = " +
                    std::to_string(sweep_id_) + " ORDER BY job_id");
  ASSERT_EQ(results.size(), 2u);
  for (const json& row : results) {
    EXPECT_EQ(row["processes"], kDefaultProcesses);
    const json medians = json::parse(row["detail"].get<std::string>())["processes"]["medians_ms"];
    ASSERT_EQ(medians.size(), static_cast<size_t>(kDefaultProcesses));
    // The geometric mean of the process medians (docs/results.md, Processes).
    double log_sum = 0;
    for (const json& m : medians) log_sum += std::log(m.get<double>());
    EXPECT_NEAR(row["median_ms"].get<double>(), std::exp(log_sum / kDefaultProcesses), 1e-9);
    EXPECT_LT(row["median_ci_low_ms"].get<double>(), row["median_ms"].get<double>());
    EXPECT_GT(row["median_ci_high_ms"].get<double>(), row["median_ms"].get<double>());
    // The interval within is the representative process's own: null only where that
    // process's samples gave none (too few effective samples), never lost on the way.
    const json details = json::parse(row["detail"].get<std::string>())["processes"];
    const json own = QueryRows(
        fleet_.db_path(),
        "SELECT median_ci_low_ms FROM result_processes WHERE job_id = " + row["job_id"].dump() +
            " AND process = " + details["representative"].dump());
    ASSERT_EQ(own.size(), 1u) << row.dump();
    EXPECT_EQ(row["within_ci_low_ms"], own[0]["median_ci_low_ms"]) << row.dump();
    // The host check ran before each worker; on a host without cpufreq it cannot say "ok".
    EXPECT_TRUE(row["host_check"].is_string()) << row.dump();
  }
  // Every process its own hand-out, in a worker of its own; the two jobs' processes
  // interleave: both first processes come back before either job's second.
  const json processes =
      QueryRows(fleet_.db_path(),
                "SELECT job_id, process, attempt, json_extract(detail, '$.pid') AS pid "
                "FROM result_processes ORDER BY received_at, job_id");
  ASSERT_EQ(processes.size(), 2u * kDefaultProcesses);
  EXPECT_EQ(processes[0]["process"], 0);
  EXPECT_EQ(processes[1]["process"], 0);
  std::set<std::string> pids;
  for (const json& p : processes) {
    EXPECT_EQ(p["attempt"], p["process"].get<int>() + 1) << p.dump();
    if (p["pid"].is_number()) pids.insert(p["pid"].dump());
  }
  if (!pids.empty()) {
    EXPECT_EQ(pids.size(), processes.size());
  }
}

TEST_F(ProcessesFleetTest, ABusyHostRefusesAJobThatAsksAndIsRecordedForOneThatDoesNot) {
  // Another process keeps a CPU busy.
  ChildProcess busy;
  ASSERT_TRUE(busy.Start({"/bin/sh", "-c", "while :; do :; done"}, fleet_.dir("busy.log")));
  Run(SmallSweep({{"name", "refused"}, {"processes", 1}, {"host_check", "refuse"}}));
  const json refused =
      QueryRows(fleet_.db_path(), "SELECT error, host_check FROM results WHERE sweep_id = " +
                                      std::to_string(sweep_id_));
  ASSERT_EQ(refused.size(), 2u);
  for (const json& row : refused) {
    EXPECT_NE(row["error"].get<std::string>().find("the host is busy: other processes kept"),
              std::string::npos)
        << row.dump();
    EXPECT_EQ(row["host_check"], "busy");
  }
  Run(SmallSweep({{"name", "recorded"}, {"processes", 1}}));
  const json recorded =
      QueryRows(fleet_.db_path(), "SELECT ok, host_check, detail FROM results WHERE sweep_id = " +
                                      std::to_string(sweep_id_));
  ASSERT_EQ(recorded.size(), 2u);
  for (const json& row : recorded) {
    EXPECT_EQ(row["ok"], 1);
    EXPECT_EQ(row["host_check"], "busy");
    const json check = json::parse(row["detail"].get<std::string>())["host_check"];
    EXPECT_GT(check["busy_cpus"].get<double>(), 0.5) << check.dump();
    EXPECT_EQ(check["policy"], "record");
  }
  busy.Stop(2s);
}

TEST_F(ProcessesFleetTest, ASweepAskingWhatCannotBeIsRefusedAtSubmitNamingTheField) {
  for (const json& extra :
       {json{{"processes", 0}}, json{{"processes", kMaxJobProcesses + 1}}, json{{"precision", 0}},
        json{{"precision", 1}}, json{{"host_check", "sometimes"}}}) {
    std::string error;
    EXPECT_LT(fleet_.Submit(SmallSweep(extra), &error), 0) << extra.dump();
    EXPECT_NE(error.find(extra.begin().key()), std::string::npos) << error;
  }
  // A placement no host can give a job: smt for one thread, any but the default for a gang.
  for (const json& matrix :
       {json{{"model", "mlp"}, {"batch_size", 1}, {"threads", 1}, {"thread_placement", "smt"}},
        json{{"model", "mlp"},
             {"batch_size", 1},
             {"replicas", 2},
             {"thread_placement", "spread"}}}) {
    std::string error;
    EXPECT_LT(fleet_.Submit(SmallSweep({{"matrix", matrix}}), &error), 0) << matrix.dump();
    EXPECT_NE(error.find("thread_placement"), std::string::npos) << error;
  }
}

// Where the threads went and the host's pace, with every result: each placement this
// host can give pins the worker where it says; smt, on a host without SMT, fails its job
// with the reason.
TEST_F(ProcessesFleetTest, EachResultSaysWhereItsThreadsWentAndTheHostsPace) {
  // The agent told the coordinator its CPUs' shape when it registered: smt is refused at
  // submit on a host without SMT, and taken where the host has it.
  const json shape =
      QueryRows(fleet_.db_path(),
                "SELECT json_extract(capabilities, '$.cpu_shape.cpus') AS cpus, "
                "json_extract(capabilities, '$.cpu_shape.threads_per_core') AS smt FROM hosts");
  ASSERT_EQ(shape.size(), 1u) << shape.dump();
  ASSERT_GE(shape[0]["cpus"].get<int64_t>(), 1) << shape.dump();
  const bool smt = shape[0]["smt"].get<int64_t>() >= 2;
  json placements = {"cores", "spread", "os"};
  if (smt) {
    placements.push_back("smt");
  } else {
    std::string error;
    EXPECT_EQ(fleet_.Submit(SmallSweep({{"processes", 1},
                                        {"matrix",
                                         {{"model", "mlp"},
                                          {"batch_size", 1},
                                          {"threads", 2},
                                          {"thread_placement", {"smt"}}}}}),
                            &error),
              -1);
    EXPECT_NE(error.find(
                  "matrix.thread_placement[0]: no registered agent can place 2 threads by \"smt\""),
              std::string::npos)
        << error;
  }
  Run(SmallSweep(
      {{"processes", 1},
       {"matrix",
        {{"model", "mlp"}, {"batch_size", 1}, {"threads", 2}, {"thread_placement", placements}}}}));
  const json rows = QueryRows(
      fleet_.db_path(),
      "SELECT json_extract(j.spec, '$.thread_placement') AS asked, r.ok, r.error, "
      "r.thread_placement, r.placement_cpus, r.placement_cores, r.placement_smt_shared, "
      "r.host_pace_ms FROM jobs j JOIN results r ON r.job_id = j.job_id WHERE j.sweep_id = " +
          std::to_string(sweep_id_) + " ORDER BY j.job_id");
  ASSERT_EQ(rows.size(), placements.size()) << rows.dump();
  for (const json& row : rows) {
    // Each placement asked is one this host gives (the test's hosts have two cores or
    // more), so every result says where its threads went.
    EXPECT_EQ(row["ok"], 1) << row.dump();
    EXPECT_EQ(row["thread_placement"], row["asked"]) << row.dump();
    EXPECT_FALSE(row["placement_cpus"].get<std::string>().empty()) << row.dump();
    EXPECT_GE(row["placement_cores"].get<int64_t>(), 1) << row.dump();
    EXPECT_GT(row["host_pace_ms"].get<double>(), 0) << row.dump();
    if (row["asked"] != "os") {
      // smt pairs two threads on a core; cores and spread give each its own.
      EXPECT_EQ(row["placement_smt_shared"], row["asked"] == "smt" ? 1 : 0) << row.dump();
    }
  }
}

}  // namespace
}  // namespace benchfleet::testing
