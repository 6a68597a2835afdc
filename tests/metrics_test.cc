// --metrics on a real coordinator: the ready file names the endpoint, a scrape over real
// HTTP shows a registered agent, and the text follows Prometheus' conventions (HELP and
// TYPE per family, counters ending in _total, cumulative histograms); a bad address
// keeps the coordinator from starting. And an agent's own --metrics and --ready-file.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "common/status_reply.h"
#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;

struct Endpoint {
  std::string host;
  int port = 0;
};

// "http://127.0.0.1:PORT/metrics" -> host and port.
Endpoint ParseUrl(const std::string& url) {
  std::smatch match;
  static const std::regex kUrl("^http://([0-9.]+):([0-9]+)/metrics$");
  if (!std::regex_match(url, match, kUrl)) return {};
  return {match[1], std::stoi(match[2])};
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The value of the sample written exactly as `series` ("name{labels}"), or -1.
double SampleValue(const std::string& text, const std::string& series) {
  for (const std::string& line : Lines(text)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

TEST(MetricsTest, ScrapeShowsTheFleetInPrometheusFormat) {
  FleetOptions options;
  options.coordinator_flags = {"--metrics", "127.0.0.1:0"};
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  const auto ready =
      nlohmann::json::parse(ReadFile(fleet.dir("coordinator.ready")), nullptr, false);
  ASSERT_TRUE(ready.is_object() && ready.contains("metrics")) << ready.dump();
  const Endpoint endpoint = ParseUrl(ready["metrics"].get<std::string>());
  ASSERT_GT(endpoint.port, 0) << ready.dump();

  ASSERT_TRUE(fleet.StartAgent("node-a"));
  ASSERT_TRUE(fleet.WaitForAgents(1, 30s)) << fleet.Logs();

  httplib::Client client(endpoint.host, endpoint.port);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  // Snapshots are published about once a second: wait for one that has the agent.
  int status = 0;
  std::string content_type, text;
  const bool shown = WaitFor(
      [&] {
        auto scraped = client.Get("/metrics");
        if (!scraped) return false;
        status = scraped->status;
        content_type = scraped->get_header_value("Content-Type");
        text = scraped->body;
        return status == 200 && SampleValue(text, "benchfleet_agents{state=\"idle\"}") == 1;
      },
      15s);
  ASSERT_TRUE(shown) << "from " << ready["metrics"] << ": " << status << "\n"
                     << text << "\n"
                     << fleet.Logs();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(content_type.rfind("text/plain; version=0.0.4", 0), 0u) << content_type;
  EXPECT_EQ(SampleValue(text, "benchfleet_agents{state=\"busy\"}"), 0);

  // Every family has HELP and TYPE; every sample belongs to a declared family; every name
  // is benchfleet_ and snake case; counters end in _total.
  const std::regex kComment("^# (HELP|TYPE) ([^ ]+) (.+)$");
  const std::regex kSample("^([^ {]+)(\\{[^}]*\\})? ([^ ]+)$");
  const std::regex kName("^benchfleet_[a-z0-9_]+$");
  std::set<std::string> helped;
  std::map<std::string, std::string> types;
  std::set<std::string> sampled;
  for (const std::string& line : Lines(text)) {
    std::smatch match;
    if (std::regex_match(line, match, kComment)) {
      EXPECT_TRUE(std::regex_match(match[2].str(), kName)) << line;
      if (match[1] == "HELP") helped.insert(match[2]);
      if (match[1] == "TYPE") types[match[2]] = match[3];
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, match, kSample)) << line;
    EXPECT_TRUE(std::regex_match(match[1].str(), kName)) << line;
    sampled.insert(match[1]);
  }
  ASSERT_FALSE(types.empty());
  for (const auto& [family, type] : types) {
    EXPECT_TRUE(helped.count(family)) << family << " has no HELP";
    if (type == "counter") {
      EXPECT_TRUE(std::regex_search(family, std::regex("_total$"))) << family;
    }
  }
  for (const std::string& name : sampled) {
    const std::string family = std::regex_replace(name, std::regex("_(bucket|sum|count)$"), "");
    EXPECT_TRUE(types.count(name) || (types.count(family) && types[family] == "histogram"))
        << name << " has no TYPE";
  }
  for (const auto& [name, value] : CoordinatorCounters().Named()) {
    EXPECT_EQ(types[std::string("benchfleet_") + name + "_total"], "counter") << name;
  }

  // Both histograms: +Inf equals _count, buckets never decrease; the loop has run and the
  // agent's registration was committed.
  for (const std::string family :
       {"benchfleet_loop_iteration_seconds", "benchfleet_store_commit_seconds"}) {
    EXPECT_EQ(types[family], "histogram");
    const double count = SampleValue(text, family + "_count");
    EXPECT_GT(count, 0) << family;
    EXPECT_EQ(SampleValue(text, family + "_bucket{le=\"+Inf\"}"), count) << family;
    double previous = 0;
    for (const std::string& line : Lines(text)) {
      if (line.rfind(family + "_bucket{", 0) != 0) continue;
      const double value = std::stod(line.substr(line.rfind(' ') + 1));
      EXPECT_GE(value, previous) << line;
      previous = value;
    }
  }

  auto other = client.Get("/");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);

  // Jobs no agent can take wait in the queued gauge of their requirement (read by the
  // scrape from the store), named as status names it.
  std::string error;
  ASSERT_GE(fleet.Submit({{"name", "waits"},
                          {"placement", "any"},
                          {"select", {{"tags", "nowhere"}}},
                          {"matrix", {{"model", "mlp"}, {"batch_size", {1, 2}}}}},
                         &error),
            1)
      << error;
  // The agent registered cannot run them: no agent matches their requirement (counted
  // by the loop for the requirements the previous scrape found queued jobs of).
  double queued = 0, matching = -1;
  const bool waiting = WaitFor(
      [&] {
        auto scraped = client.Get("/metrics");
        if (!scraped) return false;
        text = scraped->body;
        queued = 0;
        matching = -1;
        for (const std::string& line : Lines(text)) {
          if (line.find("nowhere") == std::string::npos) continue;
          const double value = std::stod(line.substr(line.rfind(' ') + 1));
          if (line.rfind("benchfleet_jobs_queued{requirement=\"", 0) == 0) queued += value;
          if (line.rfind("benchfleet_requirement_agents{requirement=\"", 0) == 0) matching = value;
        }
        return queued == 2 && matching == 0;
      },
      15s);
  EXPECT_TRUE(waiting) << queued << " " << matching << "\n" << text;
}

// An agent's --metrics: its --ready-file appears once it registered and names the
// endpoint; the scrape shows it registered, counts the job it ran by outcome, and its
// spool empty once the coordinator acknowledged the result. A malformed address is a bad
// flag for the agent too.
TEST(MetricsTest, AnAgentShowsItsOwnHealth) {
  FleetOptions options;
  options.worker = kResultWorkerBin;  // about the daemons, not about what LibTorch measures
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  const std::string ready_file = fleet.dir("agent-a.ready");
  ASSERT_TRUE(fleet.StartAgent(
      "node-a", {"--metrics", "127.0.0.1:0", "--ready-file", ready_file, "--tags", "watched"}));
  nlohmann::json ready;
  ASSERT_TRUE(WaitFor(
      [&] {
        ready = nlohmann::json::parse(ReadFile(ready_file), nullptr, false);
        return ready.is_object();
      },
      30s))
      << fleet.Logs();
  EXPECT_EQ(ready.value("agent", ""), "node-a");
  EXPECT_EQ(ready.value("pid", 0), fleet.agent("node-a").pid());
  const Endpoint endpoint = ParseUrl(ready.value("metrics", ""));
  ASSERT_GT(endpoint.port, 0) << ready.dump();
  httplib::Client client(endpoint.host, endpoint.port);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  std::string text;
  auto scrape = [&] {
    auto scraped = client.Get("/metrics");
    text = scraped && scraped->status == 200 ? scraped->body : "";
    return text;
  };
  EXPECT_EQ(SampleValue(scrape(), "benchfleet_agent_registered"), 1) << text;
  EXPECT_EQ(SampleValue(text, "benchfleet_agent_connected"), 1) << text;

  std::string error;
  const int64_t sweep_id =
      fleet.Submit({{"name", "watched"},
                    {"select", {{"tags", "watched"}}},
                    {"matrix", {{"model", "mlp"}, {"batch_size", 1}, {"threads", 1}}},
                    {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.1}, {"max_time_s", 0.2}}}},
                   &error);
  ASSERT_GT(sweep_id, 0) << error;
  const bool counted = WaitFor(
      [&] {
        scrape();
        return SampleValue(text, "benchfleet_agent_jobs_total{outcome=\"ok\"}") == 1 &&
               SampleValue(text, "benchfleet_agent_spooled_results") == 0 &&
               SampleValue(text, "benchfleet_agent_busy") == 0;
      },
      60s);
  EXPECT_TRUE(counted) << text << "\n" << fleet.Logs();
  EXPECT_EQ(SampleValue(text, "benchfleet_agent_jobs_total{outcome=\"failed\"}"), 0) << text;
  EXPECT_GT(SampleValue(text, "benchfleet_agent_last_heartbeat_timestamp_seconds"), 0) << text;

  std::string out, err;
  EXPECT_EQ(RunCommand({kAgentBin, "--metrics", "127.0.0.1"}, &out, &err), 2);
  EXPECT_NE(err.find("--metrics"), std::string::npos) << err;
}

// A malformed --metrics is a bad flag (exit 2, naming it); a port that cannot be bound
// ends the coordinator at start (exit 1, saying why).
TEST(MetricsTest, ABadAddressStopsTheCoordinatorAtStart) {
  TempDir dir("bf-metrics");
  std::string out, err;
  EXPECT_EQ(
      RunCommand({kCoordinatorBin, "--db", dir / "a.db", "--metrics", "127.0.0.1"}, &out, &err), 2);
  EXPECT_NE(err.find("--metrics"), std::string::npos) << err;

  FleetOptions options;
  options.coordinator_flags = {"--metrics", "127.0.0.1:0"};
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  const auto ready =
      nlohmann::json::parse(ReadFile(fleet.dir("coordinator.ready")), nullptr, false);
  const Endpoint taken = ParseUrl(ready.value("metrics", ""));
  ASSERT_GT(taken.port, 0);
  const int code = RunCommand(
      {kCoordinatorBin, "--db", dir / "b.db", "--agents", "tcp://127.0.0.1:*", "--clients",
       "tcp://127.0.0.1:*", "--metrics", "127.0.0.1:" + std::to_string(taken.port)},
      &out, &err);
  EXPECT_EQ(code, 1) << out << err;
  EXPECT_NE((out + err).find("cannot listen on 127.0.0.1:" + std::to_string(taken.port)),
            std::string::npos)
      << out << err;
}

}  // namespace
}  // namespace benchfleet::testing
