// Fault test 8: an agent is killed (SIGKILL) while its spool holds a finished result the
// coordinator never acknowledged, and restarted with the same state directory. The
// restarted agent delivers the spooled result; every job ends with exactly one result
// and nothing runs twice.
#include <gtest/gtest.h>
#include <signal.h>

#include <iostream>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kHeartbeatMs = 500;
constexpr int kLiveness = 3;
constexpr int kJobs = 3;

// Jobs of ~3 s: long enough that the agent notices the paused coordinator (liveness x
// interval = 1.5 s) before the job ends, so the result is only in the spool, never sent
// on the old connection.
json ThreeSecondJobs() {
  json batches = json::array();
  for (int i = 1; i <= kJobs; ++i) batches.push_back(i);
  return {
      {"name", "agent-restart"},
      {"placement", "any"},
      {"matrix", {{"model", {"mlp"}}, {"batch_size", batches}, {"threads", {1}}}},
      {"models", {{"mlp", {{"layers", {128, 128, 10}}}}}},
      {"timing", {{"warmup_s", 0.05}, {"min_time_s", 3}, {"max_time_s", 3.5}, {"target_ci", 0.5}}}};
}

TEST(AgentRestartFaultTest, SpooledResultIsDeliveredAfterKillAndRestart) {
  FleetOptions options;
  options.heartbeat_ms = kHeartbeatMs;
  options.liveness = kLiveness;
  options.coordinator_flags = {"--max-attempts", "50"};
  options.worker = kResultWorkerBin;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator());
  ASSERT_TRUE(fleet.StartAgent("a"));
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  int64_t sweep_id = fleet.Submit(ThreeSecondJobs());
  ASSERT_GT(sweep_id, 0);

  // The first job starts; the coordinator is paused before it can acknowledge anything.
  int64_t job = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        json status = fleet.Status();
        for (const json& agent : status.value("agents", json::array())) {
          if (agent["state"] == "busy") {
            job = agent["job_id"];
            return true;
          }
        }
        return false;
      },
      60s))
      << fleet.Logs();
  fleet.coordinator().Signal(SIGSTOP);
  // The worker finishes; the agent spools its result and can deliver it to no one.
  bool spooled = WaitFor([&] { return fleet.SpooledResults("a") == 1; }, 60s);
  if (!spooled) fleet.coordinator().Signal(SIGCONT);
  ASSERT_TRUE(spooled) << fleet.Logs();
  fleet.agent("a").Signal(SIGKILL);
  ASSERT_NE(fleet.agent("a").Wait(10s), -1);
  fleet.coordinator().Signal(SIGCONT);

  // Same name, same --state-dir: the restarted agent finds the result in its spool.
  ASSERT_EQ(fleet.SpooledResults("a"), 1u);
  auto restarted_at = Clock::now();
  ASSERT_TRUE(fleet.StartAgent("a"));
  const std::string job_results =
      "select count(*) from results where job_id = " + std::to_string(job);
  ASSERT_TRUE(WaitFor([&] { return QueryValue(fleet.db_path(), job_results) == 1; }, 60s))
      << fleet.Logs();
  double delivered_s = std::chrono::duration<double>(Clock::now() - restarted_at).count();
  EXPECT_NE(ReadFile(fleet.agent("a").log_path()).find("1 spooled results to deliver"),
            std::string::npos)
      << fleet.Logs();

  json done = fleet.WaitForSweep(sweep_id, 180s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], kJobs);
  ASSERT_TRUE(WaitFor([&] { return fleet.SpooledResults("a") == 0; }, 30s)) << fleet.Logs();

  // Exactly one result per job; the paused job's is its first (spooled) attempt's, and no
  // job was handed out twice, so nothing ran twice.
  const std::string sweep = std::to_string(sweep_id);
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select count(*) from results r join jobs j using (job_id) "
                       "where j.sweep_id = " +
                           sweep),
            kJobs);
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select count(*) from (select job_id from results group by "
                       "job_id having count(*) > 1)"),
            0);
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select attempt from results where job_id = " + std::to_string(job)),
            1);
  json handouts =
      QueryValue(fleet.db_path(), "select sum(attempts) from jobs where sweep_id = " + sweep);
  EXPECT_EQ(handouts, kJobs);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from stale_results"), 0);
  EXPECT_EQ(QueryValue(fleet.db_path(), "PRAGMA integrity_check"), "ok");
  std::cout << "FIGURE kill -9 agent holding 1 spooled result, restarted: delivered " << delivered_s
            << " s after restart, " << kJobs << "/" << kJobs << " results, " << handouts
            << " hand-outs for " << kJobs << " jobs, 0 duplicates\n";
}

}  // namespace
}  // namespace benchfleet::testing
