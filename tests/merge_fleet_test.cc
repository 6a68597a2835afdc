// `benchfleet merge` end to end (docs/sites.md): two fleets, each a real coordinator with
// an agent of the same name on this machine, run a sweep each; the store a coordinator
// still serves is refused; once they stopped, their stores merge, and the read commands
// answer from the merged store, comparing a sweep of one site with one of the other.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

struct CliRun {
  int code;
  std::string out, err;
};

CliRun Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kCliBin};
  argv.insert(argv.end(), args.begin(), args.end());
  CliRun run;
  run.code = RunCommand(argv, &run.out, &run.err);
  return run;
}

TEST(MergeFleetTest, TwoFleetsStoresMergeAndTheirSweepsCompare) {
  FleetOptions options;
  options.worker = kResultWorkerBin;  // about the stores, not about what LibTorch measures
  Fleet berlin(options), boston(options);
  const json sweep = {
      {"name", "nightly"},
      {"placement", "any"},
      {"matrix", {{"model", {"mlp"}}, {"batch_size", {1, 8}}}},
      {"timing",
       {{"warmup_s", 0.01}, {"min_time_s", 0.2}, {"max_time_s", 0.5}, {"target_ci", 0.5}}}};
  for (Fleet* fleet : {&berlin, &boston}) {
    ASSERT_TRUE(fleet->StartCoordinator()) << fleet->Logs();
    ASSERT_TRUE(fleet->StartAgent("node-1")) << fleet->Logs();
    ASSERT_TRUE(fleet->WaitForAgents(1, 60s)) << fleet->Logs();
    const int64_t id = fleet->Submit(sweep);
    ASSERT_EQ(id, 1);
    const json done = fleet->WaitForSweep(id, 120s);
    ASSERT_TRUE(done.is_object() && done["jobs"]["done"] == 2) << done.dump() << fleet->Logs();
  }
  TempDir dir("bf-merge");
  const std::string merged = dir / "merged.db";
  // Both stores are results.db: each site is named on the command line.
  const std::vector<std::string> merge = {"merge", merged, "berlin=" + berlin.db_path(),
                                          "boston=" + boston.db_path()};

  // A store its coordinator still serves is refused, naming the process.
  CliRun served = Cli(merge);
  EXPECT_EQ(served.code, 2) << served.out << served.err;
  EXPECT_NE(served.err.find(berlin.db_path() + " is open in process " +
                            std::to_string(berlin.coordinator().pid())),
            std::string::npos)
      << served.err;
  EXPECT_FALSE(std::filesystem::exists(merged));

  for (Fleet* fleet : {&berlin, &boston}) fleet->coordinator().Stop();
  CliRun first = Cli(merge);
  ASSERT_EQ(first.code, 0) << first.err;
  // One host: node-1 on this machine, seen by both fleets.
  EXPECT_NE(first.out.find("merged.db: 2 site(s), 2 sweep(s), 1 host(s), 4 result(s)"),
            std::string::npos)
      << first.out;

  // Sweep 1 is berlin's, sweep 2 boston's (each was sweep 1 at its site).
  CliRun compared = Cli({"compare", "1", "2", "--db", merged, "--format", "json"});
  ASSERT_EQ(compared.code, 0) << compared.err;
  const json rows = json::parse(compared.out, nullptr, false);
  ASSERT_TRUE(rows.is_array() && rows.size() == 2) << compared.out;
  for (const json& row : rows) {
    EXPECT_EQ(row["host"], "node-1");
    EXPECT_TRUE(row["a_median_ms"].is_number() && row["b_median_ms"].is_number()) << row.dump();
    EXPECT_EQ(row["a_samples"], row["b_samples"]) << row.dump();
  }
  CliRun sites = Cli({"query", "--db", merged, "--format", "csv",
                      "select site, sweep_id, count(*) as n from result_summary group by 1, 2"});
  ASSERT_EQ(sites.code, 0) << sites.err;
  EXPECT_EQ(sites.out, "site,sweep_id,n\nberlin,1,2\nboston,2,2\n");
  CliRun results = Cli({"results", "--db", merged});
  EXPECT_EQ(results.code, 0) << results.err;
  EXPECT_EQ(results.out.rfind("site", 0), 0u) << results.out;
  EXPECT_EQ(Cli({"regressions", "--db", merged}).code, 0);
  CliRun report = Cli({"report", "--db", merged, "--out", dir / "report.html"});
  EXPECT_EQ(report.code, 0) << report.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "report.html"));

  // Again: nothing new, the same counts.
  CliRun again = Cli(merge);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("site berlin (" + berlin.db_path() +
                           "): nothing new; 1 sweep(s) merged before"),
            std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("merged.db: 2 site(s), 2 sweep(s), 1 host(s), 4 result(s)"),
            std::string::npos)
      << again.out;
}

}  // namespace
}  // namespace benchfleet::testing
