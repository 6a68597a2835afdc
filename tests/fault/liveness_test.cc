// Fault tests 1, 2 and 4: agents killed, paused and cut off mid-job. Every job ends
// with exactly one result; late results are fenced; spooled results survive.
#include <gtest/gtest.h>
#include <signal.h>

#include <iostream>

#include "tests/fleet.h"
#include "tests/tcp_proxy.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kHeartbeatMs = 500;
constexpr int kLiveness = 3;
// The promise under test: a dead agent's job is handed out again within this.
constexpr auto kRequeueBound = std::chrono::milliseconds(kHeartbeatMs * kLiveness + 1000);

// Jobs that run ~4 s, long enough to be caught mid-job.
json LongJobs(int count) {
  json batches = json::array();
  for (int i = 1; i <= count; ++i) batches.push_back(i);
  return {
      {"name", "fault"},
      {"placement", "any"},
      {"matrix", {{"model", {"mlp"}}, {"batch_size", batches}, {"threads", {1}}}},
      {"models", {{"mlp", {{"layers", {128, 128, 10}}}}}},
      {"timing", {{"warmup_s", 0.05}, {"min_time_s", 4}, {"max_time_s", 4.5}, {"target_ci", 0.5}}}};
}

FleetOptions FaultOptions() {
  FleetOptions options;
  options.heartbeat_ms = kHeartbeatMs;
  options.liveness = kLiveness;
  options.coordinator_flags = {"--max-attempts", "50"};
  options.worker = kResultWorkerBin;
  return options;
}

// The first busy agent and its job, waiting up to `timeout`.
bool WaitForBusyAgent(Fleet& fleet, std::string* agent, int64_t* job,
                      std::chrono::seconds timeout) {
  return WaitFor(
      [&] {
        json status = fleet.Status();
        for (const json& a : status.value("agents", json::array())) {
          if (a["state"] == "busy") {
            *agent = a["agent"];
            *job = a["job_id"];
            return true;
          }
        }
        return false;
      },
      timeout);
}

void ExpectOneResultPerJob(Fleet& fleet, int64_t sweep_id, int jobs) {
  const std::string sweep = std::to_string(sweep_id);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from jobs where sweep_id = " + sweep +
                                            " and state = 'done'"),
            jobs);
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select count(*) from results r join jobs j using (job_id) "
                       "where j.sweep_id = " +
                           sweep),
            jobs);
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select count(*) from (select job_id from results group by "
                       "job_id having count(*) > 1)"),
            0);
  EXPECT_EQ(QueryValue(fleet.db_path(), "PRAGMA integrity_check"), "ok");
}

TEST(LivenessFaultTest, KilledAgentsJobsAreRequeuedAndCompleteElsewhere) {
  Fleet fleet(FaultOptions());
  ASSERT_TRUE(fleet.StartCoordinator());
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(fleet.StartAgent(name));
  ASSERT_TRUE(fleet.WaitForAgents(3, 60s)) << fleet.Logs();
  constexpr int kJobs = 10;
  int64_t sweep_id = fleet.Submit(LongJobs(kJobs));
  ASSERT_GT(sweep_id, 0);

  std::vector<double> requeue_s;
  for (int kill = 0; kill < 10; ++kill) {
    std::string victim;
    int64_t job = 0;
    ASSERT_TRUE(WaitForBusyAgent(fleet, &victim, &job, 60s)) << fleet.Logs();
    fleet.agent(victim).Signal(SIGKILL);
    auto killed_at = Clock::now();
    std::string next;
    ASSERT_TRUE(WaitFor(
        [&] {
          next = fleet.AgentRunning(job);
          return !next.empty() && next != victim;
        },
        30s))
        << "job " << job << " was not handed out again\n"
        << fleet.Logs();
    requeue_s.push_back(std::chrono::duration<double>(Clock::now() - killed_at).count());
    EXPECT_LE(Clock::now() - killed_at, kRequeueBound) << "kill " << kill;
    fleet.agent(victim).Wait(10s);
    ASSERT_TRUE(fleet.StartAgent(victim));  // the host comes back
  }
  json done = fleet.WaitForSweep(sweep_id, 300s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], kJobs);
  ExpectOneResultPerJob(fleet, sweep_id, kJobs);
  std::sort(requeue_s.begin(), requeue_s.end());
  std::cout << "FIGURE kill -9 agent x10: requeued after median " << requeue_s[5] << " s, max "
            << requeue_s.back() << " s (bound " << kRequeueBound.count() / 1000.0 << " s)\n";
}

TEST(LivenessFaultTest, PausedAgentsLateResultIsFencedAsStale) {
  Fleet fleet(FaultOptions());
  ASSERT_TRUE(fleet.StartCoordinator());
  ASSERT_TRUE(fleet.StartAgent("a"));
  ASSERT_TRUE(fleet.StartAgent("b"));
  ASSERT_TRUE(fleet.WaitForAgents(2, 60s)) << fleet.Logs();
  int64_t sweep_id = fleet.Submit(LongJobs(1));
  ASSERT_GT(sweep_id, 0);
  std::string paused;
  int64_t job = 0;
  ASSERT_TRUE(WaitForBusyAgent(fleet, &paused, &job, 60s));
  fleet.agent(paused).Signal(SIGSTOP);  // its worker runs on and finishes meanwhile
  ASSERT_TRUE(WaitFor(
      [&] {
        std::string now = fleet.AgentRunning(job);
        return !now.empty() && now != paused;
      },
      30s))
      << fleet.Logs();
  fleet.agent(paused).Signal(SIGCONT);
  ASSERT_TRUE(fleet.WaitForSweep(sweep_id, 120s).is_object());
  // The paused agent comes back, registers again and delivers its spooled result: it is
  // acknowledged and recorded as stale, never as a second result.
  ASSERT_TRUE(WaitFor(
      [&] {
        return QueryValue(fleet.db_path(), "select count(*) from stale_results where job_id = " +
                                               std::to_string(job)) == 1;
      },
      60s))
      << fleet.Logs();
  ASSERT_TRUE(WaitFor([&] { return fleet.SpooledResults(paused) == 0; }, 30s));
  ExpectOneResultPerJob(fleet, sweep_id, 1);
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select attempt from results where job_id = " + std::to_string(job)),
            2);
  std::cout << "FIGURE SIGSTOP past lease: 1 stale result fenced, 0 duplicate rows\n";
}

TEST(LivenessFaultTest, PartitionedAgentSpoolsResultsAndDeliversAfterHealing) {
  Fleet fleet(FaultOptions());
  ASSERT_TRUE(fleet.StartCoordinator());
  TcpProxy link(fleet.agents_endpoint());
  ASSERT_TRUE(link.ok());
  ASSERT_TRUE(fleet.StartAgent("far", {}, link.endpoint()));
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  int64_t sweep_id = fleet.Submit(LongJobs(3));
  ASSERT_GT(sweep_id, 0);
  std::string agent;
  int64_t job = 0;
  ASSERT_TRUE(WaitForBusyAgent(fleet, &agent, &job, 60s));
  link.SetBlocked(true);
  auto cut_at = Clock::now();
  // The coordinator loses the agent and its lease; the agent finishes the job and keeps
  // the result in its spool.
  ASSERT_TRUE(WaitFor(
      [&] {
        json status = fleet.Status();
        return status.is_object() && status["agents"].empty();
      },
      30s));
  ASSERT_TRUE(WaitFor([&] { return fleet.SpooledResults("far") >= 1; }, 60s)) << fleet.Logs();
  EXPECT_GT(Clock::now() - cut_at, std::chrono::milliseconds(kHeartbeatMs * kLiveness));
  link.SetBlocked(false);
  json done = fleet.WaitForSweep(sweep_id, 180s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], 3);
  ASSERT_TRUE(WaitFor([&] { return fleet.SpooledResults("far") == 0; }, 30s));
  ExpectOneResultPerJob(fleet, sweep_id, 3);
  // The job that finished during the partition kept its first attempt's result.
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select attempt from results where job_id = " + std::to_string(job)),
            1);
  std::cout << "FIGURE partition longer than the lease: 3/3 results delivered, 0 lost\n";
}

}  // namespace
}  // namespace benchfleet::testing
