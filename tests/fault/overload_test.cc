// Fault test: a coordinator saturated by its fleet loses nothing. 300 simulated agents
// (bench_fleet_load: real sockets, the real protocol) with 100 ms heartbeats and a
// 300 ms liveness window answer 3,000 jobs at once: the coordinator, storing each
// result with a synchronous commit, falls behind its own queue by more than the
// window. It must not mistake that lag for the agents' silence: every job is done
// once, no attempt is lost, no agent is dropped.
#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/process.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;

TEST(OverloadFaultTest, ASaturatedCoordinatorBlamesNoAgentAndLosesNoJob) {
  std::string out, err;
  const int code = RunCommand({BENCHFLEET_FLEET_LOAD_BIN, "--agents", "300", "--jobs", "3000",
                               "--heartbeat-ms", "100", "--liveness", "3", "--timeout-s", "300"},
                              &out, &err);
  ASSERT_EQ(code, 0) << err;
  // The report is the last line of stdout.
  std::string line, last;
  std::istringstream lines(out);
  while (std::getline(lines, line)) {
    if (!line.empty()) last = line;
  }
  const json report = json::parse(last, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(report.is_object()) << out << err;
  std::cout << "FIGURE saturated coordinator, 300 agents, 3000 jobs, liveness 300 ms: "
            << report["jobs_per_s"] << " jobs/s, dispatch p50/p99 "
            << report["dispatch_latency_ms"]["p50"] << "/" << report["dispatch_latency_ms"]["p99"]
            << " ms, attempts lost " << report["attempts_lost"]
            << ", coordinator silences seen by agents " << report["coordinator_silences"] << "\n";
  EXPECT_EQ(report["jobs_done"], 3000) << err;
  EXPECT_EQ(report["jobs_failed"], 0) << err;
  EXPECT_EQ(report["result_rows_in_db"], 3000) << err;
  EXPECT_EQ(report["duplicate_answers"], 0) << err;
  EXPECT_EQ(report["attempts_lost"], 0) << err;
  EXPECT_EQ(report["counters"]["requeued_jobs"], 0) << err;
  EXPECT_EQ(report["counters"]["handler_exceptions"], 0) << err;
}

}  // namespace
}  // namespace benchfleet::testing
