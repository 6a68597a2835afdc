#include "agent/agent_metrics.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "metrics/exposition_writer.h"

namespace benchfleet {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The samples of the text, by series as written ("name{labels}").
std::map<std::string, std::string> Samples(const std::string& text) {
  std::map<std::string, std::string> samples;
  for (const std::string& line : Lines(text)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    samples[line.substr(0, space)] = line.substr(space + 1);
  }
  return samples;
}

AgentHealth SomeHealth() {
  AgentHealth health;
  health.agent = "node-a";
  health.version = "0.2.0";
  health.start_time_s = 1700000000.25;
  health.connected = true;
  health.registered = true;
  health.jobs["ok"] = 5;
  health.jobs["failed"] = 2;
  health.spooled_results = 1;
  health.last_heartbeat_s = 1700000100.5;
  health.reconnects = 3;
  return health;
}

TEST(AgentMetricsTest, JobOutcomeIsWhatTheResultSays) {
  EXPECT_STREQ(JobOutcome({{"ok", true}}), "ok");
  EXPECT_STREQ(JobOutcome({{"ok", false}, {"error", "x"}}), "failed");
  EXPECT_STREQ(JobOutcome({{"error", "no ok field"}}), "failed");
  EXPECT_STREQ(JobOutcome({{"ok", "yes"}}), "failed");
  EXPECT_STREQ(JobOutcome(nlohmann::json::array()), "failed");
}

TEST(AgentMetricsTest, EveryFamilyWithItsSamples) {
  const std::string text = RenderAgentExposition(SomeHealth());
  const std::map<std::string, std::string> expected = {
      {"benchfleet_agent_jobs_total{outcome=\"failed\"}", "2"},
      {"benchfleet_agent_jobs_total{outcome=\"ok\"}", "5"},
      {"benchfleet_agent_jobs_total{outcome=\"stopped\"}", "0"},
      {"benchfleet_agent_spooled_results", "1"},
      {"benchfleet_agent_connected", "1"},
      {"benchfleet_agent_registered", "1"},
      {"benchfleet_agent_busy", "0"},
      {"benchfleet_agent_last_heartbeat_timestamp_seconds", "1700000100.5"},
      {"benchfleet_agent_reconnects_total", "3"},
      {"benchfleet_agent_start_time_seconds", "1700000000.25"},
      {"benchfleet_agent_build_info{agent=\"node-a\",version=\"0.2.0\"}", "1"},
  };
  EXPECT_EQ(Samples(text), expected) << text;
}

// Prometheus' conventions: HELP and TYPE per family, the agent's prefix, snake case,
// counters (and only they) ending in _total, timestamps and durations in seconds.
TEST(AgentMetricsTest, EveryFamilyFollowsTheConventions) {
  const std::string text = RenderAgentExposition(SomeHealth());
  const std::regex comment("^# (HELP|TYPE) (benchfleet_agent_[a-z0-9_]+) (.+)$");
  const std::regex sample(
      "^(benchfleet_agent_[a-z0-9_]+)(\\{[a-z_]+=\"[^\"]*\"(,[a-z_]+=\"[^\"]*\")*\\})? "
      "[-+0-9.eInfNa]+$");
  std::set<std::string> helped;
  std::map<std::string, std::string> types;
  for (const std::string& line : Lines(text)) {
    std::smatch match;
    if (std::regex_match(line, match, comment)) {
      if (match[1] == "HELP") helped.insert(match[2]);
      if (match[1] == "TYPE") types[match[2]] = match[3];
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, match, sample)) << line;
    EXPECT_TRUE(types.count(match[1])) << line << ": no TYPE before it";
  }
  EXPECT_EQ(types.size(), 9u);
  for (const auto& [family, type] : types) {
    EXPECT_TRUE(helped.count(family)) << family;
    const bool total = std::regex_search(family, std::regex("_total$"));
    EXPECT_EQ(type == "counter", total) << family << " " << type;
  }
}

TEST(AgentMetricsTest, ServesWhatWasPublishedOverHttp) {
  auto metrics = AgentMetrics::Start("127.0.0.1:0");
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  std::smatch match;
  const std::string url = (*metrics)->url();
  ASSERT_TRUE(std::regex_match(url, match, std::regex("^http://127\\.0\\.0\\.1:([0-9]+)/metrics$")))
      << url;
  httplib::Client client("127.0.0.1", std::stoi(match[1]));
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  auto before = client.Get("/metrics");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 503);  // nothing published yet

  (*metrics)->Publish(SomeHealth());
  auto scraped = client.Get("/metrics");
  ASSERT_TRUE(scraped);
  EXPECT_EQ(scraped->status, 200);
  EXPECT_EQ(scraped->get_header_value("Content-Type"), kExpositionContentType);
  EXPECT_EQ(scraped->body, RenderAgentExposition(SomeHealth()));

  auto bad = AgentMetrics::Start("127.0.0.1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace benchfleet
