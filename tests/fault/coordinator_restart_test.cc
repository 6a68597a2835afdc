// Fault test 3: the coordinator is killed with SIGKILL at random moments during a sweep,
// 20 times, and restarted each time. The sweep completes with every result stored
// exactly once and an intact database.
#include <gtest/gtest.h>
#include <signal.h>

#include <iostream>
#include <random>
#include <thread>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

TEST(CoordinatorRestartFaultTest, TwentyKillsLoseAndDuplicateNothing) {
  FleetOptions options;
  options.heartbeat_ms = 500;
  options.liveness = 3;
  options.coordinator_flags = {"--max-attempts", "50"};
  options.worker = kResultWorkerBin;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator());
  ASSERT_TRUE(fleet.StartAgent("a"));
  ASSERT_TRUE(fleet.StartAgent("b"));
  ASSERT_TRUE(fleet.WaitForAgents(2, 60s)) << fleet.Logs();

  constexpr int kJobs = 30;
  json batches = json::array();
  for (int i = 1; i <= kJobs; ++i) batches.push_back(i);
  json sweep = {
      {"name", "restarts"},
      {"placement", "any"},
      {"matrix", {{"model", {"mlp"}}, {"batch_size", batches}}},
      {"models", {{"mlp", {{"layers", {64, 64, 10}}}}}},
      {"timing", {{"warmup_s", 0.02}, {"min_time_s", 0.5}, {"max_time_s", 1}, {"target_ci", 0.5}}}};
  int64_t sweep_id = fleet.Submit(sweep);
  ASSERT_GT(sweep_id, 0);

  // The kill schedule is random but reproducible: a fixed seed.
  std::mt19937 random(20261129);
  std::uniform_int_distribution<int> delay_ms(200, 2000);
  int kills = 0;
  for (; kills < 20; ++kills) {
    // The fault schedule itself, not a wait for a condition: kill after a random time.
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));
    fleet.coordinator().Signal(SIGKILL);
    ASSERT_NE(fleet.coordinator().Wait(10s), -1);
    ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  }
  json done = fleet.WaitForSweep(sweep_id, 600s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], kJobs)
      << QueryRows(fleet.db_path(), "select job_id, attempts, error from job_failures").dump();
  ASSERT_TRUE(
      WaitFor([&] { return fleet.SpooledResults("a") + fleet.SpooledResults("b") == 0; }, 60s));

  const std::string where = " where sweep_id = " + std::to_string(sweep_id);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from result_summary" + where), kJobs);
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select count(*) from (select job_id from results group by "
                       "job_id having count(*) > 1)"),
            0);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from jobs" + where), kJobs);
  EXPECT_EQ(QueryValue(fleet.db_path(), "PRAGMA integrity_check"), "ok");
  json attempts = QueryValue(fleet.db_path(), "select sum(attempts) from jobs" + where);
  std::cout << "FIGURE kill -9 coordinator x" << kills << ": " << kJobs << "/" << kJobs
            << " results, 0 duplicates, integrity ok, " << attempts << " hand-outs for " << kJobs
            << " jobs\n";
}

// A large sweep is answered once checked and committed, and its jobs are stored a slice
// per round after: a coordinator killed while storing them goes on after its restart
// from where it stopped, so every combination is stored once, in order.
TEST(CoordinatorRestartFaultTest, KilledWhileStoringALargeSweepStoresEveryJobOnce) {
  Fleet fleet;
  ASSERT_TRUE(fleet.StartCoordinator());
  constexpr int kJobs = 60000;
  json batches = json::array();
  for (int i = 1; i <= kJobs; ++i) batches.push_back(i);
  // No agent: the jobs are only stored, never run.
  json sweep = {{"name", "large"},
                {"placement", "any"},
                {"matrix", {{"model", {"mlp"}}, {"batch_size", batches}}}};
  const int64_t sweep_id = fleet.Submit(sweep);
  ASSERT_GT(sweep_id, 0) << fleet.Logs();
  auto storing = [&]() -> int64_t {
    json status = fleet.Status();
    if (!status.is_object()) return -1;
    for (const json& s : status["sweeps"]) {
      if (s["sweep_id"] == sweep_id) return s["jobs"]["storing"].get<int64_t>();
    }
    return -1;
  };
  int kills = 0;
  for (int i = 0; i < 3; ++i) {
    const int64_t left = storing();
    ASSERT_GE(left, 0) << fleet.Logs();
    if (left == 0) break;  // stored before the next kill: nothing left to interrupt
    fleet.coordinator().Signal(SIGKILL);
    ASSERT_NE(fleet.coordinator().Wait(10s), -1);
    ++kills;
    ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  }
  ASSERT_TRUE(WaitFor([&] { return storing() == 0; }, 300s)) << fleet.Logs();
  const std::string where = " where sweep_id = " + std::to_string(sweep_id);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from jobs" + where), kJobs);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(distinct spec) from jobs" + where), kJobs);
  // In matrix order: the job ids follow the batch sizes.
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from jobs" + where +
                                            " and json_extract(spec, '$.batch_size') != job_id - "
                                            "(select min(job_id) from jobs" +
                                            where + ") + 1"),
            0);
  EXPECT_EQ(QueryValue(fleet.db_path(), "PRAGMA integrity_check"), "ok");
  EXPECT_GE(kills, 1) << "the jobs were all stored before the first kill";
  std::cout << "FIGURE kill -9 coordinator x" << kills << " while storing a " << kJobs
            << "-job sweep: " << kJobs << " jobs stored once each, in order\n";
}

}  // namespace
}  // namespace benchfleet::testing
