// Repeats in fresh processes (schemas/sweep.md, Processes), through the coordinator in
// process: a job handed out once per process to the agent that ran its first, rounds
// interleaved, its one result made across them; a precision that stops at the least
// processes or at its cap; what a sweep may not ask.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "coordinator/coordinator_fixture.h"
#include "coordinator/core/process_stats.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;
using testing_fixture::Capabilities;

class ProcessesTest : public CoordinatorTest {
 protected:
  // A worker's result with median `median_ms` and its own interval of +-0.5%.
  static json ResultWith(const json& spec, double median_ms) {
    json result = GoodResult(spec);
    result["stats"]["median_ms"] = median_ms;
    result["stats"]["mean_ms"] = median_ms;
    result["stats"]["min_ms"] = median_ms * 0.9;
    result["stats"]["max_ms"] = median_ms * 1.2;
    result["stats"]["median_ci_low_ms"] = median_ms * 0.995;
    result["stats"]["median_ci_high_ms"] = median_ms * 1.005;
    result["stats"]["n"] = 100;
    result["stats"]["timed_s"] = 0.5;
    result["worker_wall_s"] = 2.5;
    result["throughput_per_s"] = spec.value("batch_size", 1) * 1000.0 / median_ms;
    return result;
  }
  // Answers every offer `peer` gets, in order, with median(job, process) until none
  // comes; returns the job ids in the order they were handed out.
  std::vector<int64_t> RunAll(const std::string& peer,
                              const std::function<double(int64_t, int)>& median) {
    std::vector<int64_t> order;
    std::map<int64_t, int> processes;
    coordinator_->Tick();
    for (size_t answered = 0; answered < 200; ++answered) {
      std::vector<json> offers = OffersTo(peer);
      if (offers.size() <= answered) break;
      const json& offer = offers[answered];
      const int64_t job = offer["job_id"];
      order.push_back(job);
      FromAgent(peer, {{"v", 1},
                       {"type", "result"},
                       {"job_id", job},
                       {"attempt", offer["attempt"]},
                       {"result", ResultWith(offer["spec"], median(job, processes[job]++))}});
      coordinator_->Tick();
    }
    return order;
  }
  std::set<std::string>
      answered_;  // job/attempt answered by LaterProcessesGoToTheAgentThatRanTheFirst
};

TEST_F(ProcessesTest, AJobRunsInItsProcessesInterleavedWithTheOthersAndItsIntervalIsAcrossThem) {
  Register("node-a");
  Submit(json::parse(R"({"name": "repeats", "processes": 3,
                         "matrix": {"model": ["mlp"], "batch_size": [1, 2, 4, 8]}})"));
  // Each process of a job reads 1, 1.1, 0.9 times its job's base.
  const double kFactor[] = {1.0, 1.1, 0.9};
  const std::vector<int64_t> order =
      RunAll("node-a/1", [&](int64_t job, int p) { return job * kFactor[p]; });
  ASSERT_EQ(order.size(), 12u);
  // Round by round: every job's first process, then each later round holds every job
  // once, in an order of its own.
  std::vector<std::vector<int64_t>> rounds = {{order.begin(), order.begin() + 4},
                                              {order.begin() + 4, order.begin() + 8},
                                              {order.begin() + 8, order.end()}};
  EXPECT_EQ(rounds[0], (std::vector<int64_t>{1, 2, 3, 4}));
  for (auto& round : rounds) {
    EXPECT_EQ(std::set<int64_t>(round.begin(), round.end()), (std::set<int64_t>{1, 2, 3, 4}));
  }
  EXPECT_TRUE(rounds[1] != rounds[0] || rounds[2] != rounds[0])
      << "later rounds keep the first's order";

  json rows = Query(
      "SELECT job_id, processes, median_ms, median_ci_low_ms, median_ci_high_ms, within_ci_low_ms, "
      "within_ci_high_ms, between_process_sd_ms, throughput_per_s, batch_size, attempt FROM "
      "results ORDER BY job_id");
  ASSERT_EQ(rows.size(), 4u);
  // The geometric mean of 1, 1.1 and 0.9, and the spread of their logs.
  const double logs[] = {0, std::log(1.1), std::log(0.9)};
  const double mean_log = (logs[0] + logs[1] + logs[2]) / 3;
  double squares = 0;
  for (double l : logs) squares += (l - mean_log) * (l - mean_log);
  const double sd_log = std::sqrt(squares / 2);
  for (const json& row : rows) {
    const double base = row[0].get<double>();
    EXPECT_EQ(row[1], 3);
    EXPECT_NEAR(row[2].get<double>(), base * std::exp(mean_log), 1e-9);
    // exp(mean log +- t(2) * sd * sqrt(2/3)): on the log scale, never below 0.
    const double half = 4.303 * sd_log * std::sqrt(2.0 / 3.0);
    EXPECT_NEAR(row[3].get<double>(), base * std::exp(mean_log - half), 1e-3 * base);
    EXPECT_NEAR(row[4].get<double>(), base * std::exp(mean_log + half), 1e-3 * base);
    // The process nearest the mean is the first: its own interval is kept beside.
    EXPECT_NEAR(row[5].get<double>(), base * 0.995, 1e-9);
    EXPECT_NEAR(row[6].get<double>(), base * 1.005, 1e-9);
    EXPECT_GT(row[7].get<double>(), 0.09 * base);
    // At the estimate: the representative process's throughput scaled to it.
    EXPECT_NEAR(row[8].get<double>(), row[9].get<double>() * 1000 / row[2].get<double>(), 1e-6);
    EXPECT_EQ(row[10], 3);  // the third hand-out delivered it
  }
  json kept = Query(
      "SELECT job_id, count(*), count(DISTINCT host_id), min(process), max(process) "
      "FROM result_processes GROUP BY job_id ORDER BY job_id");
  ASSERT_EQ(kept.size(), 4u);
  for (const json& row : kept) EXPECT_EQ(row, (json{row[0], 3, 1, 0, 2}));
  EXPECT_EQ(Query("SELECT state FROM sweeps")[0][0], "done");
}

TEST_F(ProcessesTest, LaterProcessesGoToTheAgentThatRanTheFirst) {
  Register("node-a");
  Register("node-b");
  Submit(json::parse(R"({"name": "two", "processes": 2, "placement": "any",
                         "matrix": {"model": ["mlp"], "batch_size": [1, 2]}})"));
  coordinator_->Tick();
  ASSERT_EQ(OffersTo("node-a/1").size() + OffersTo("node-b/1").size(), 2u);
  std::map<std::string, std::set<int64_t>> ran;
  for (int step = 0; step < 10; ++step) {
    bool answered = false;
    for (const std::string peer : {"node-a/1", "node-b/1"}) {
      for (const json& offer : OffersTo(peer)) {
        const std::string key = std::to_string(offer["job_id"].get<int64_t>()) + "/" +
                                std::to_string(offer["attempt"].get<int>());
        if (!answered_.insert(key).second) continue;
        ran[peer].insert(offer["job_id"].get<int64_t>());
        FromAgent(peer, {{"v", 1},
                         {"type", "result"},
                         {"job_id", offer["job_id"]},
                         {"attempt", offer["attempt"]},
                         {"result", ResultWith(offer["spec"], 2.0)}});
        answered = true;
      }
    }
    coordinator_->Tick();
    if (!answered) break;
  }
  EXPECT_EQ(answered_.size(), 4u);
  // No job ran on both agents.
  for (int64_t job : ran["node-a/1"]) EXPECT_EQ(ran["node-b/1"].count(job), 0u) << job;
  json hosts = Query("SELECT count(DISTINCT host_id) FROM result_processes GROUP BY job_id");
  for (const json& row : hosts) EXPECT_EQ(row[0], 1);
}

TEST_F(ProcessesTest, APrecisionStopsWhereItIsReachedOrSaysItWasNot) {
  Register("node-a");
  // Job 1's processes agree to 0.1%: three (the pilot) reach +-1%. Job 2's spread 30%:
  // at its cap of 5 it has not, and says so.
  Submit(json::parse(R"({"name": "precise", "precision": 0.01, "processes": 5,
                         "matrix": {"model": ["mlp"], "batch_size": [1, 2]}})"));
  const double kTight[] = {1.0, 1.001, 0.999, 1.0, 1.0};
  const double kWide[] = {1.0, 1.3, 0.7, 1.2, 0.8};
  RunAll("node-a/1", [&](int64_t job, int p) { return job == 1 ? kTight[p] : kWide[p]; });
  json rows = Query(
      "SELECT job_id, processes, precision_target, precision_met, precision_reached, detail "
      "FROM results ORDER BY job_id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][1], 3);
  EXPECT_EQ(rows[0][2], 0.01);
  EXPECT_EQ(rows[0][3], 1);
  EXPECT_LE(rows[0][4].get<double>(), 0.01);
  EXPECT_EQ(rows[1][1], 5);
  EXPECT_EQ(rows[1][3], 0);
  EXPECT_GT(rows[1][4].get<double>(), 0.01);
  const json detail = json::parse(rows[1][5].get<std::string>());
  EXPECT_EQ(detail["precision"].value("stopped", ""), "cap");
  EXPECT_NE(detail["precision"].value("why", "").find("cap is 5 processes"), std::string::npos);
}

TEST_F(ProcessesTest, APrecisionChoosesTheSamplesOfTheLaterProcesses) {
  Register("node-a");
  Submit(json::parse(R"({"name": "chosen", "precision": 0.001,
                         "timing": {"min_time_s": 0.5, "max_time_s": 5},
                         "matrix": {"model": ["mlp"], "batch_size": [1]}})"));
  const double kMedians[] = {1.0, 1.05, 0.95, 1.02};
  RunAll("node-a/1", [&](int64_t, int p) { return kMedians[p % 4]; });
  // The fourth offer (after the pilot of 3) samples as long as was chosen: processes
  // cost 2 s, a sample 5 ms with an sd of 0.025 ms, the processes' medians 0.05 ms: Kalibera
  // and Jones' sqrt(2 x 0.025^2 / (0.005 x 0.05^2)) = 10 samples, 0.05 s.
  const std::vector<json> offers = OffersTo("node-a/1");
  ASSERT_GE(offers.size(), 4u);
  EXPECT_EQ(offers[0]["spec"]["timing"]["min_time_s"], 0.5);
  EXPECT_NEAR(offers[3]["spec"]["timing"]["min_time_s"].get<double>(), 0.05, 0.003);
  EXPECT_EQ(offers[3]["spec"]["timing"]["max_time_s"], offers[3]["spec"]["timing"]["min_time_s"]);
  const json detail = json::parse(Query("SELECT detail FROM results")[0][0].get<std::string>());
  // The result says what was chosen, from every process by its end.
  EXPECT_GE(detail["precision"].value("samples_per_process", 0), 10) << detail["precision"].dump();
  EXPECT_EQ(detail["precision"].value("stopped", ""), "cap");
  // Its series is the sweep's job, whatever the later processes sampled.
  json spec = Query("SELECT json_extract(spec, '$.timing.min_time_s') FROM jobs")[0][0];
  EXPECT_EQ(spec, 0.5);
}

TEST_F(ProcessesTest, AResentProcessIsADuplicateAndAddsNothing) {
  Register("node-a");
  Submit(json::parse(
      R"({"name": "resent", "processes": 2, "matrix": {"model": ["mlp"], "batch_size": [1]}})"));
  coordinator_->Tick();
  const json offer = OffersTo("node-a/1").at(0);
  const json message = {{"v", 1},
                        {"type", "result"},
                        {"job_id", offer["job_id"]},
                        {"attempt", offer["attempt"]},
                        {"result", ResultWith(offer["spec"], 1.0)}};
  FromAgent("node-a/1", message);
  EXPECT_EQ(LastTo("node-a/1", "ack")->message.body["outcome"], "stored");
  FromAgent("node-a/1", message);
  EXPECT_EQ(LastTo("node-a/1", "ack")->message.body["outcome"], "duplicate");
  EXPECT_EQ(Query("SELECT count(*) FROM result_processes")[0][0], 1);
  EXPECT_EQ(Query("SELECT count(*) FROM results")[0][0], 0);
}

TEST_F(ProcessesTest, ALostHandOutOfALaterProcessIsNotCountedAgainstTheProcessesDone) {
  Register("node-a");
  Submit(json::parse(
      R"({"name": "lost", "processes": 4, "matrix": {"model": ["mlp"], "batch_size": [1]}})"));
  // Three processes come back, then two hand-outs are lost (their results refused: a
  // negative median), then the fourth process: 6 hand-outs, 2 lost, under the 3 a job
  // may lose (max_attempts), so it is done.
  RunAll("node-a/1", [](int64_t, int p) { return p == 3 || p == 4 ? -1.0 : 1.0; });
  EXPECT_EQ(Query("SELECT state, attempts FROM jobs")[0], (json{"done", 6}));
  EXPECT_EQ(Query("SELECT count(*) FROM result_processes")[0][0], 4);
  EXPECT_EQ(Query("SELECT processes FROM results")[0][0], 4);
}

TEST_F(ProcessesTest, WhatASweepMayNotAskIsRefusedNamingTheField) {
  struct Case {
    const char* sweep;
    const char* field;
  };
  const Case cases[] = {
      {R"({"name": "x", "processes": 0, "matrix": {"model": ["mlp"], "batch_size": [1]}})",
       "processes"},
      {R"({"name": "x", "processes": 51, "matrix": {"model": ["mlp"], "batch_size": [1]}})",
       "processes"},
      {R"({"name": "x", "processes": 2.5, "matrix": {"model": ["mlp"], "batch_size": [1]}})",
       "processes"},
      {R"({"name": "x", "precision": 0, "matrix": {"model": ["mlp"], "batch_size": [1]}})",
       "precision"},
      {R"({"name": "x", "precision": 1, "matrix": {"model": ["mlp"], "batch_size": [1]}})",
       "precision"},
      {R"({"name": "x", "precision": -0.01, "matrix": {"model": ["mlp"], "batch_size": [1]}})",
       "precision"},
      {R"({"name": "x", "precision": "1%", "matrix": {"model": ["mlp"], "batch_size": [1]}})",
       "precision"},
      {R"({"name": "x", "processes": 3, "matrix": {"model": ["mlp"], "batch_size": [4], "mode": ["train"],
           "parallel": [{"kind": "data", "world_size": 2}]}})",
       "processes"},
  };
  for (const Case& c : cases) {
    Message reply = Request({{"type", "submit"}, {"sweep", json::parse(c.sweep)}});
    EXPECT_EQ(reply.type, "error") << c.sweep;
    EXPECT_NE(reply.body.value("message", "").find(c.field), std::string::npos)
        << reply.body.dump();
  }
}

TEST(ProcessStatsTest, TheIntervalIsWhereARepeatRunOfAsManyProcessesLandsOnTheLogScale) {
  std::vector<ProcessFigures> processes;
  const std::vector<double> medians = {10.0, 11.0, 9.0, 10.5, 9.5};
  for (double m : medians) processes.push_back({m, m * 0.99, m * 1.01, 100, 1, 2});
  const AcrossProcesses across = Summarize(processes);
  double log_sum = 0;
  for (double m : medians) log_sum += std::log(m);
  const double mean_log = log_sum / 5;
  EXPECT_NEAR(across.mean_ms, std::exp(mean_log), 1e-12);  // the geometric mean
  double squares = 0;
  for (double m : medians) squares += (std::log(m) - mean_log) * (std::log(m) - mean_log);
  const double sd_log = std::sqrt(squares / 4);
  // Where a repeat run of 5 lands: exp(mean log +- t(4) x sd x sqrt(1/5 + 1/5)).
  const double half = 2.776 * sd_log * std::sqrt(2.0 / 5.0);
  EXPECT_NEAR(std::log(*across.ci_high_ms), mean_log + half, 1e-3);
  EXPECT_NEAR(std::log(*across.ci_low_ms), mean_log - half, 1e-3);
  EXPECT_EQ(across.representative, 0u);
  // Between: the logs' variance less a median's own (its interval's relative sd squared),
  // in ms at the estimate.
  const double within_rel = 0.02 / (2 * 1.959963984540054);
  EXPECT_NEAR(across.sd_between_ms,
              across.mean_ms * std::sqrt(sd_log * sd_log - within_rel * within_rel), 1e-9);
  EXPECT_NEAR(*across.sd_within_ms, within_rel * 10, 0.01);
  // One process: its own median, no interval across.
  EXPECT_FALSE(Summarize({processes[0]}).ci_low_ms);
  // Processes that spread by ratios: the interval stays above 0 ms.
  std::vector<ProcessFigures> wide;
  for (double m : {0.03, 0.2, 0.09}) wide.push_back({m, m * 0.99, m * 1.01, 100, 1, 2});
  const AcrossProcesses spread = Summarize(wide);
  ASSERT_TRUE(spread.ci_low_ms.has_value());
  EXPECT_GT(*spread.ci_low_ms, 0);
}

}  // namespace
}  // namespace benchfleet
