// Agents that leave by themselves (--exit-when-idle, --max-jobs), as a batch job's agent
// does to give its allocation back: real coordinator and agent processes, the result
// worker. The agent exits 0 once its results are acknowledged, the coordinator lists it
// as departed with the reason at once, and nothing is requeued or lost.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json ShortJobs(int count) {
  json batches = json::array();
  for (int i = 1; i <= count; ++i) batches.push_back(i);
  return {{"name", "exit"},
          {"placement", "any"},
          {"matrix", {{"model", {"mlp"}}, {"batch_size", batches}, {"threads", {1}}}},
          {"models", {{"mlp", {{"layers", {16, 16, 10}}}}}},
          {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.05}, {"max_time_s", 0.1}}}};
}

FleetOptions ResultWorkerFleet() {
  FleetOptions options;
  options.worker = kResultWorkerBin;
  return options;
}

// The reason `status_reply.departed` gives for `agent`, once it lists it (its `leave` may
// still be on its way when the agent's process has ended); "" when it does not in time.
std::string DepartedReason(Fleet& fleet, const std::string& agent) {
  std::string reason;
  WaitFor(
      [&] {
        const json status = fleet.Status();
        for (const json& departed : status.value("departed", json::array())) {
          if (departed["agent"] == agent) reason = departed["reason"];
        }
        return !reason.empty();
      },
      10s);
  return reason;
}

void ExpectExitedCleanly(Fleet& fleet, const std::string& agent) {
  const int status = fleet.agent(agent).Wait(30s);
  ASSERT_NE(status, -1) << agent << " did not leave\n" << fleet.Logs();
  ASSERT_TRUE(WIFEXITED(status)) << fleet.Logs();
  EXPECT_EQ(WEXITSTATUS(status), 0) << fleet.Logs();
}

TEST(AgentExitTest, AnIdleAgentLeavesAfterItsJobsAndNothingIsRequeued) {
  Fleet fleet(ResultWorkerFleet());
  ASSERT_TRUE(fleet.StartCoordinator());
  ASSERT_TRUE(fleet.StartAgent("batch", {"--exit-when-idle", "2"}));
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  const int64_t sweep_id = fleet.Submit(ShortJobs(3));
  ASSERT_GT(sweep_id, 0);
  const json done = fleet.WaitForSweep(sweep_id, 120s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], 3);
  ExpectExitedCleanly(fleet, "batch");
  EXPECT_EQ(DepartedReason(fleet, "batch"), "left: idle for 2 s (--exit-when-idle)");
  const json status = fleet.Status();
  EXPECT_TRUE(status["agents"].empty()) << status.dump();
  EXPECT_EQ(status["counters"]["requeued_jobs"], 0);
  EXPECT_EQ(fleet.SpooledResults("batch"), 0u);
}

// One agent takes a single job and goes; the other runs the rest. Offers that reached the
// first after its job went back without costing an attempt.
TEST(AgentExitTest, AnAgentLeavesAfterMaxJobsAndTheOthersRunTheRest) {
  Fleet fleet(ResultWorkerFleet());
  ASSERT_TRUE(fleet.StartCoordinator());
  ASSERT_TRUE(fleet.StartAgent("once", {"--max-jobs", "1"}));
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  const int64_t sweep_id = fleet.Submit(ShortJobs(4));
  ASSERT_GT(sweep_id, 0);
  ExpectExitedCleanly(fleet, "once");
  EXPECT_EQ(DepartedReason(fleet, "once"), "left: ran 1 job (--max-jobs)");
  ASSERT_TRUE(fleet.StartAgent("rest"));
  const json done = fleet.WaitForSweep(sweep_id, 120s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], 4);
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select count(*) from results r join hosts h using (host_id) "
                       "where h.name = 'once'"),
            1);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select max(attempts) from jobs"), 1);
  EXPECT_EQ(fleet.Status()["counters"]["requeued_jobs"], 0);
}

}  // namespace
}  // namespace benchfleet::testing
