#include "coordinator/metrics/exposition.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

namespace benchfleet {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines of one family: its HELP, TYPE and samples (those of `name` and of name_*).
std::vector<std::string> FamilyLines(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  for (const std::string& line : Lines(text)) {
    if (line == "# HELP " + name || line.rfind("# HELP " + name + " ", 0) == 0 ||
        line.rfind("# TYPE " + name + " ", 0) == 0 || line.rfind(name + " ", 0) == 0 ||
        line.rfind(name + "{", 0) == 0 || line.rfind(name + "_bucket", 0) == 0 ||
        line.rfind(name + "_sum ", 0) == 0 || line.rfind(name + "_count ", 0) == 0) {
      out.push_back(line);
    }
  }
  return out;
}

MetricsSnapshot SmallSnapshot() {
  MetricsSnapshot snapshot;
  snapshot.agents_by_state = {{"idle", 2}, {"busy", 1}};
  snapshot.jobs_queued = {{"{gpu_model: H100}", 5}, {"{}", 0}};
  snapshot.jobs_running = {{"{gpu_model: H100}", 1}, {"{}", 3}};
  snapshot.counters.results_stored = 7;
  snapshot.counters.store_errors = 1;
  snapshot.version = "0.2.0";
  snapshot.start_time_s = 1700000000.5;
  return snapshot;
}

TEST(ExpositionTest, GaugesByLabelInKeyOrder) {
  const std::string text = RenderExposition(SmallSnapshot());
  EXPECT_EQ(FamilyLines(text, "benchfleet_agents"),
            (std::vector<std::string>{
                "# HELP benchfleet_agents Registered agents by state, as status shows them.",
                "# TYPE benchfleet_agents gauge", "benchfleet_agents{state=\"busy\"} 1",
                "benchfleet_agents{state=\"idle\"} 2"}));
  const auto running = FamilyLines(text, "benchfleet_jobs_running");
  ASSERT_EQ(running.size(), 4u);
  EXPECT_EQ(running[1], "# TYPE benchfleet_jobs_running gauge");
  EXPECT_EQ(running[2], "benchfleet_jobs_running{requirement=\"{gpu_model: H100}\"} 1");
  EXPECT_EQ(running[3], "benchfleet_jobs_running{requirement=\"{}\"} 3");
}

TEST(ExpositionTest, EveryCounterOfTheTableEndsInTotal) {
  const std::string text = RenderExposition(SmallSnapshot());
  EXPECT_EQ(FamilyLines(text, "benchfleet_results_stored_total"),
            (std::vector<std::string>{"# HELP benchfleet_results_stored_total Results stored.",
                                      "# TYPE benchfleet_results_stored_total counter",
                                      "benchfleet_results_stored_total 7"}));
  for (const auto& [name, value] : CoordinatorCounters().Named()) {
    const std::string family = std::string("benchfleet_") + name + "_total";
    EXPECT_NE(text.find("# TYPE " + family + " counter\n"), std::string::npos) << family;
    EXPECT_NE(std::string(CoordinatorCounters::Meaning(name)), "") << name;
  }
  EXPECT_EQ(text.find("_total_total"), std::string::npos);
}

// The scrape names the job counts it read by the loop's names, and shows the agents able
// to run each requirement with queued jobs: a requirement with running jobs only, or one
// the loop did not count, shows none.
TEST(ExpositionTest, JobCountsAndMatchingAgentsPerRequirement) {
  MetricsSnapshot snapshot;
  snapshot.requirement_names = {{1, "{gpu_model: H100}"}, {2, "{}"}, {3, "{}"}, {4, "{x: y}"}};
  snapshot.matching_agents = {{1, 0}, {2, 3}, {3, 5}, {4, 2}};
  AddJobCounts({{1, 4, 0}, {2, 1, 1}, {3, 2, 0}, {4, 0, 2}, {9, 1, 0}}, &snapshot);
  EXPECT_EQ(snapshot.jobs_queued,
            (std::map<std::string, int64_t>{
                {"{gpu_model: H100}", 4}, {"{}", 3}, {"{x: y}", 0}, {"requirement 9", 1}}));
  EXPECT_EQ(snapshot.jobs_running,
            (std::map<std::string, int64_t>{
                {"{gpu_model: H100}", 0}, {"{}", 1}, {"{x: y}", 2}, {"requirement 9", 0}}));
  EXPECT_EQ(snapshot.requirement_agents,
            (std::map<std::string, int64_t>{{"{gpu_model: H100}", 0}, {"{}", 5}}));
  const auto lines = FamilyLines(RenderExposition(snapshot), "benchfleet_requirement_agents");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1], "# TYPE benchfleet_requirement_agents gauge");
  EXPECT_EQ(lines[2], "benchfleet_requirement_agents{requirement=\"{gpu_model: H100}\"} 0");
  EXPECT_EQ(lines[3], "benchfleet_requirement_agents{requirement=\"{}\"} 5");
}

TEST(ExpositionTest, BothHistogramsAreRendered) {
  MetricsSnapshot snapshot;
  snapshot.loop_iteration.Record(0.003);
  snapshot.store_commit.Record(0.02);
  snapshot.store_commit.Record(0.03);
  const std::string text = RenderExposition(snapshot);
  EXPECT_EQ(FamilyLines(text, "benchfleet_loop_iteration_seconds").size(),
            2 + LatencyHistogram::kBuckets + 2);
  EXPECT_NE(text.find("benchfleet_loop_iteration_seconds_bucket{le=\"0.005\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("benchfleet_store_commit_seconds_bucket{le=\"0.05\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("benchfleet_store_commit_seconds_count 2\n"), std::string::npos);
}

TEST(ExpositionTest, RequirementLabelsAreEscaped) {
  MetricsSnapshot snapshot;
  snapshot.jobs_queued = {{"{gpu_model: \"H100\\80GB\"\nx}", 1}};
  EXPECT_NE(
      RenderExposition(snapshot).find(
          "benchfleet_jobs_queued{requirement=\"{gpu_model: \\\"H100\\\\80GB\\\"\\nx}\"} 1\n"),
      std::string::npos);
}

// Every line is a comment (HELP or TYPE) or a sample whose name has the prefix and only
// the characters Prometheus' conventions allow; every family has both comments.
TEST(ExpositionTest, EveryFamilyHasHelpAndTypeAndAWellFormedName) {
  const std::string text = RenderExposition(SmallSnapshot());
  const std::regex comment("^# (HELP|TYPE) (benchfleet_[a-z0-9_]+) .+$");
  const std::regex sample(
      "^(benchfleet_[a-z0-9_]+)(\\{[a-z_]+=\"([^\"\\\\]|\\\\.)*\"\\})? [-+0-9.eInfNa]+$");
  std::set<std::string> helped, typed;
  for (const std::string& line : Lines(text)) {
    std::smatch match;
    if (std::regex_match(line, match, comment)) {
      (match[1] == "HELP" ? helped : typed).insert(match[2]);
    } else {
      EXPECT_TRUE(std::regex_match(line, sample)) << line;
    }
  }
  EXPECT_EQ(helped, typed);
  EXPECT_GE(typed.size(), 4 + CoordinatorCounters().Named().size() + 2);
}

}  // namespace
}  // namespace benchfleet
