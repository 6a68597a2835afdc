// The agent's health for Prometheus (--metrics; docs/metrics.md lists every family): an
// AgentHealth the agent's loop fills each pass, published for the HTTP server's threads,
// which render it with the shared writer (metrics/). The loop never waits for a scrape.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "metrics/latest_snapshot.h"
#include "metrics/metrics_server.h"

namespace benchfleet {

// How a job the agent took ended (benchfleet_agent_jobs_total's `outcome`): "ok" (its
// result says so), "failed" (the worker's error, or a job this agent could not run), or
// "stopped" (by the coordinator: no result). The first two as `result` says.
const char* JobOutcome(const nlohmann::json& result);

// What a scrape of the agent shows. The counters count from the agent's start.
struct AgentHealth {
  std::string agent;        // --name
  std::string version;      // the agent's build
  double start_time_s = 0;  // Unix seconds
  bool connected = false;   // a connection to the coordinator is open (not backing off)
  bool registered = false;  // and the coordinator took the registration
  bool busy = false;        // a job runs, or waits for its models or its host check
  // Jobs ended, by outcome (JobOutcome): every outcome present, 0 until one ends so.
  std::map<std::string, int64_t> jobs = {{"ok", 0}, {"failed", 0}, {"stopped", 0}};
  int64_t spooled_results = 0;  // results not yet acknowledged by the coordinator
  double last_heartbeat_s = 0;  // Unix seconds; 0 until the coordinator first answered
  int64_t reconnects = 0;       // connections dropped for the coordinator's silence
};

// The health as exposition text, families in a fixed order.
std::string RenderAgentExposition(const AgentHealth& health);

// --metrics on the agent: the HTTP server, and the health its loop last published.
class AgentMetrics {
 public:
  // Checks `address` (HOST:PORT) and serves there. InvalidArgument for a malformed
  // address, Unavailable when it cannot be bound.
  static StatusOr<std::unique_ptr<AgentMetrics>> Start(const std::string& address);
  // Replaces what scrapes show (a copy of `health`).
  void Publish(const AgentHealth& health);
  // Where scrapes go: "http://127.0.0.1:9465/metrics".
  const std::string& url() const { return server_->url(); }

 private:
  AgentMetrics(std::shared_ptr<LatestSnapshot<AgentHealth>> latest,
               std::unique_ptr<MetricsServer> server)
      : latest_(std::move(latest)), server_(std::move(server)) {}

  std::shared_ptr<LatestSnapshot<AgentHealth>> latest_;  // shared with the scrapes
  std::unique_ptr<MetricsServer> server_;
};

}  // namespace benchfleet
