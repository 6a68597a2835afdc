// Prometheus for real: Debian's `prometheus` scrapes a real coordinator and two real
// agents (each --metrics), with the alerting rules of deploy/prometheus/ loaded, and the
// series are read back through its HTTP API (/api/v1/query): the agents by state, each
// agent's own health, and a queue that grows while no agent can take its jobs, for
// which the rule of a host group without agents goes pending. `promtool check metrics`
// passes on every exposition. Skipped, saying so, where prometheus or promtool is not
// installed (deploy/install-deps.sh installs both).
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "common/test_paths.h"
#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// `name` on the PATH, or "".
std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/" + name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// A port of 127.0.0.1 free just now (Prometheus cannot tell which port 0 gave it).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

// "http://127.0.0.1:PORT/metrics" -> "127.0.0.1:PORT", or "".
std::string TargetOf(const std::string& url) {
  std::smatch match;
  static const std::regex kUrl("^http://([0-9.]+:[0-9]+)/metrics$");
  return std::regex_match(url, match, kUrl) ? match[1].str() : "";
}

// The JSON object a daemon's --ready-file holds once it is written.
json WaitForReadyFile(const std::string& path) {
  json ready;
  WaitFor(
      [&] {
        ready = json::parse(ReadFile(path), nullptr, false);
        return ready.is_object();
      },
      30s);
  return ready;
}

class PrometheusTest : public ::testing::Test {
 protected:
  // Prometheus' API: the `data` of a GET answered "success", or null.
  json Api(const std::string& path, const httplib::Params& params = {}) {
    httplib::Client client("127.0.0.1", prometheus_port_);
    client.set_connection_timeout(5);
    client.set_read_timeout(10);
    auto answer = client.Get(path, params, httplib::Headers{});
    if (!answer || answer->status != 200) return nullptr;
    json body = json::parse(answer->body, nullptr, false);
    if (!body.is_object() || body.value("status", "") != "success") return nullptr;
    return body["data"];
  }
  // The instant vector of `query`: each series' labels and value.
  std::vector<std::pair<json, double>> Query(const std::string& query) {
    std::vector<std::pair<json, double>> out;
    const json data = Api("/api/v1/query", {{"query", query}});
    if (!data.is_object() || data.value("resultType", "") != "vector") return out;
    for (const json& series : data["result"]) {
      out.emplace_back(series["metric"], std::stod(series["value"][1].get<std::string>()));
    }
    return out;
  }
  // The one value of `query`, or -1 when it has no single series.
  double Value(const std::string& query) {
    const auto vector = Query(query);
    return vector.size() == 1 ? vector.front().second : -1;
  }

  // What `promtool check metrics` says of the text served at `url` ("" when all is well).
  std::string CheckMetrics(const std::string& promtool, const std::string& url,
                           const std::string& file) {
    std::smatch match;
    std::regex_match(url, match, std::regex("^http://([0-9.]+):([0-9]+)/metrics$"));
    httplib::Client client(match[1].str(), std::stoi(match[2].str()));
    client.set_connection_timeout(5);
    client.set_read_timeout(5);
    auto scraped = client.Get("/metrics");
    if (!scraped || scraped->status != 200) return "no scrape from " + url;
    std::ofstream(file) << scraped->body;
    std::string out, err;
    const int code = RunCommand(
        {"/bin/sh", "-c", "exec \"$0\" check metrics < \"$1\"", promtool, file}, &out, &err);
    return code == 0 && out.empty() && err.empty()
               ? ""
               : "exit " + std::to_string(code) + ": " + out + err + "\n" + scraped->body;
  }

  int prometheus_port_ = 0;
};

TEST_F(PrometheusTest, ScrapesTheFleetAndAnswersQueries) {
  const std::string prometheus = FindProgram("prometheus");
  const std::string promtool = FindProgram("promtool");
  if (prometheus.empty() || promtool.empty()) {
    GTEST_SKIP() << "prometheus and promtool are not installed (Debian: apt-get install "
                    "prometheus; deploy/install-deps.sh)";
  }
  FleetOptions options;
  options.worker = kResultWorkerBin;  // no job runs here
  options.coordinator_flags = {"--metrics", "127.0.0.1:0"};
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  const std::string coordinator_url =
      json::parse(ReadFile(fleet.dir("coordinator.ready")), nullptr, false).value("metrics", "");
  std::map<std::string, std::string> agent_urls;
  for (const std::string name : {"node-a", "node-b"}) {
    const std::string ready = fleet.dir(name + ".ready");
    ASSERT_TRUE(fleet.StartAgent(name, {"--metrics", "127.0.0.1:0", "--ready-file", ready}));
    agent_urls[name] = WaitForReadyFile(ready).value("metrics", "");
    ASSERT_NE(TargetOf(agent_urls[name]), "") << name << "\n" << fleet.Logs();
  }
  ASSERT_NE(TargetOf(coordinator_url), "") << fleet.Logs();

  // Every exposition passes Prometheus' own lint.
  EXPECT_EQ(CheckMetrics(promtool, coordinator_url, fleet.dir("coordinator.prom")), "");
  for (const auto& [name, url] : agent_urls) {
    EXPECT_EQ(CheckMetrics(promtool, url, fleet.dir(name + ".prom")), "") << name;
  }

  // Prometheus scraping them every second, the alerting rules of deploy/prometheus/ loaded
  // and evaluated every second.
  prometheus_port_ = FreeLoopbackPort();
  ASSERT_GT(prometheus_port_, 0);
  const std::string config = fleet.dir("prometheus.yml");
  std::ofstream(config) << "global:\n"
                        << "  scrape_interval: 1s\n"
                        << "  evaluation_interval: 1s\n"
                        << "rule_files:\n"
                        << "  - " << test_paths::kSourceDir
                        << "/deploy/prometheus/benchfleet-rules.yml\n"
                        << "scrape_configs:\n"
                        << "  - job_name: benchfleet-coordinator\n"
                        << "    static_configs:\n"
                        << "      - targets: ['" << TargetOf(coordinator_url) << "']\n"
                        << "  - job_name: benchfleet-agent\n"
                        << "    static_configs:\n"
                        << "      - targets: ['" << TargetOf(agent_urls["node-a"]) << "', '"
                        << TargetOf(agent_urls["node-b"]) << "']\n";
  ChildProcess server;
  ASSERT_TRUE(server.Start(
      {prometheus, "--config.file=" + config, "--storage.tsdb.path=" + fleet.dir("tsdb"),
       "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_), "--log.level=warn"},
      fleet.dir("prometheus.log")));
  auto logs = [&] { return ReadFile(fleet.dir("prometheus.log")) + "\n" + fleet.Logs(); };

  // All three targets up.
  json targets;
  const bool up = WaitFor(
      [&] {
        targets = Api("/api/v1/targets", {{"state", "active"}});
        if (!targets.is_object() || targets["activeTargets"].size() != 3) return false;
        for (const json& target : targets["activeTargets"]) {
          if (target.value("health", "") != "up") return false;
        }
        return true;
      },
      30s);
  ASSERT_TRUE(up) << targets.dump(2) << "\n" << logs();

  // The agents by state, as the coordinator counts them; each agent's own view.
  EXPECT_TRUE(WaitFor([&] { return Value("benchfleet_agents{state=\"idle\"}") == 2; }, 15s))
      << logs();
  EXPECT_EQ(Value("benchfleet_agents{state=\"busy\"}"), 0);
  EXPECT_TRUE(WaitFor(
      [&] { return Value("sum(benchfleet_agent_registered{job=\"benchfleet-agent\"})") == 2; },
      15s));
  const auto agents = Query("benchfleet_agent_build_info");
  ASSERT_EQ(agents.size(), 2u);
  std::set<std::string> names;
  for (const auto& [labels, value] : agents) names.insert(labels.value("agent", ""));
  EXPECT_EQ(names, (std::set<std::string>{"node-a", "node-b"}));

  // Jobs for a host group no agent is in: the queue grows with each sweep, the group
  // shows no agent, and the rule for it goes pending (it fires after 5 minutes).
  auto submit = [&](int jobs) {
    json batches = json::array();
    for (int i = 1; i <= jobs; ++i) batches.push_back(i);
    std::string error;
    // "placement": "any" queues jobs that no registered agent matches (yet).
    const int64_t id = fleet.Submit({{"name", "unplaceable"},
                                     {"placement", "any"},
                                     {"select", {{"tags", "nowhere"}}},
                                     {"matrix", {{"model", "mlp"}, {"batch_size", batches}}}},
                                    &error);
    EXPECT_GT(id, 0) << error;
    return id > 0;
  };
  const std::string queued = "sum(benchfleet_jobs_queued{requirement=~\".*nowhere.*\"})";
  ASSERT_TRUE(submit(2));
  EXPECT_TRUE(WaitFor([&] { return Value(queued) == 2; }, 15s)) << Value(queued) << logs();
  // The rules' sum of the queue has it too before it grows.
  EXPECT_TRUE(WaitFor([&] { return Value("benchfleet:jobs_queued:sum") == 2; }, 15s));
  ASSERT_TRUE(submit(3));
  EXPECT_TRUE(WaitFor([&] { return Value(queued) == 5; }, 15s)) << Value(queued) << logs();
  // The series as Prometheus stored it over the last minute: from 2 up to 5.
  const std::string series = "benchfleet_jobs_queued{requirement=~\".*nowhere.*\"}[1m]";
  EXPECT_EQ(Value("min_over_time(" + series + ")"), 2);
  EXPECT_EQ(Value("max_over_time(" + series + ")"), 5);
  EXPECT_TRUE(WaitFor(
      [&] { return Value("benchfleet_requirement_agents{requirement=~\".*nowhere.*\"}") == 0; },
      15s));
  // Both alerts of a queue no agent takes go pending: no agent for its host group, and
  // the queue growing. No other: the agents are registered, the store sound.
  json alerts;
  std::map<std::string, std::string> states;  // alert name -> state
  const bool pending = WaitFor(
      [&] {
        alerts = Api("/api/v1/alerts");
        if (!alerts.is_object()) return false;
        states.clear();
        for (const json& alert : alerts["alerts"]) {
          states[alert["labels"].value("alertname", "")] = alert.value("state", "");
        }
        return states.size() == 2 && states["BenchfleetNoAgentForQueuedJobs"] == "pending" &&
               states["BenchfleetQueueGrowing"] == "pending";
      },
      15s);
  EXPECT_TRUE(pending) << alerts.dump(2) << "\n" << logs();
  for (const json& alert : alerts["alerts"]) {
    if (alert["labels"].value("alertname", "") != "BenchfleetNoAgentForQueuedJobs") continue;
    EXPECT_NE(alert["labels"].value("requirement", "").find("nowhere"), std::string::npos)
        << alert.dump();
    EXPECT_EQ(alert["labels"].value("instance", ""), TargetOf(coordinator_url)) << alert.dump();
  }
}

}  // namespace
}  // namespace benchfleet::testing
