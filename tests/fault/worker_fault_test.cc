// Fault test: the worker process fails in each way a process can: it writes a failed
// result, it crashes, it hangs past the job's timeout. Each job ends failed with its
// reason, the agent goes on serving, and the jobs whose worker did its work are done.
// The worker is the result worker (tests/result_worker.cc), told what to do per job.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <iostream>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

TEST(WorkerFaultTest, AFailedCrashedOrHungWorkerFailsItsJobWithTheReasonAndTheAgentGoesOn) {
  // The agent's environment reaches its workers: batch 2 fails, 3 crashes, 4 hangs.
  ASSERT_EQ(setenv("BENCHFLEET_RESULT_WORKER", "fail@2,crash@3,hang@4", 1), 0);
  FleetOptions options;
  options.worker = kResultWorkerBin;
  options.coordinator_flags = {"--max-attempts", "1"};
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator());
  ASSERT_TRUE(fleet.StartAgent("a"));
  unsetenv("BENCHFLEET_RESULT_WORKER");
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  const json sweep = {{"name", "worker-faults"},
                      {"matrix", {{"model", {"mlp"}}, {"batch_size", {1, 2, 3, 4, 5}}}},
                      {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.1}, {"max_time_s", 0.2}}},
                      {"timeout_s", 2}};
  const int64_t sweep_id = fleet.Submit(sweep);
  ASSERT_GT(sweep_id, 0);
  const json done = fleet.WaitForSweep(sweep_id, 120s);
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], 2) << done.dump();
  EXPECT_EQ(done["jobs"]["failed"], 3) << done.dump();
  EXPECT_TRUE(fleet.agent("a").running());

  const json failures =
      QueryRows(fleet.db_path(),
                "select spec ->> '$.batch_size' as batch, error from job_failures "
                "where sweep_id = " +
                    std::to_string(sweep_id) + " order by batch");
  ASSERT_EQ(failures.size(), 3u) << failures.dump();
  const std::vector<std::string> reasons = {"told to fail", "signal", "timed out"};
  for (size_t i = 0; i < reasons.size(); ++i) {
    EXPECT_EQ(failures[i]["batch"], static_cast<int>(i) + 2) << failures.dump();
    EXPECT_NE(failures[i]["error"].get<std::string>().find(reasons[i]), std::string::npos)
        << failures.dump();
  }
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "select count(*) from results r join jobs j using (job_id) "
                       "where r.ok and j.sweep_id = " +
                           std::to_string(sweep_id)),
            2);
  std::cout << "FIGURE worker faults: " << failures.dump() << "\n";
}

}  // namespace
}  // namespace benchfleet::testing
