// The `status_reply` (schemas/protocol.md), typed both ways: the coordinator's
// components fill its parts (the job queue the sweeps and the running jobs, the agent
// sessions the departed agents, the dispatcher what waits, the context the counters),
// the client API sends it with ToMessage, and the CLI and the benchmarks read it with
// FromJson. Decode() checks the top-level field types; FromJson checks everything nested.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

// A sweep's jobs by state. `total` counts the jobs of a large sweep not stored yet
// (`storing`).
struct SweepJobCounts {
  int64_t total = 0;
  int64_t storing = 0;
  int64_t queued = 0;
  int64_t running = 0;
  int64_t done = 0;
  int64_t failed = 0;
  int64_t cancelled = 0;
  // Jobs that have not ended (queued, running or not stored yet).
  int64_t Unfinished() const { return total - done - failed - cancelled; }
  nlohmann::json ToJson() const;
};

struct SweepOverview {
  int64_t sweep_id = 0;
  std::string name;
  std::string state;  // "running", "done", "cancelled"
  std::string created_at;
  std::optional<std::string> finished_at;  // none while running
  SweepJobCounts jobs;
  std::map<std::string, std::string> labels;
  std::optional<double> eta_s;  // none when not running or not estimable yet
};

// The job an agent runs, as the status shows it. A calibration's spec names no model,
// mode, dtype, batch or threads.
struct RunningJobSummary {
  int64_t sweep_id = 0;
  std::string kind;  // "benchmark" or "calibration"
  std::optional<std::string> model, mode, dtype;
  std::optional<int64_t> batch_size, threads;
  std::string device = "cpu";
  std::string started_at;
};

struct AgentState {
  std::string agent;
  std::optional<int64_t> job_id;         // the job leased to it; none when idle
  std::optional<RunningJobSummary> job;  // that job, when the store could say
  std::string machine_id;
  std::vector<std::string> tags;
  int64_t last_seen_ms_ago = 0;
  bool Busy() const { return job_id.has_value(); }
  // The states an agent is shown in (`status_reply.agents[].state`), every one of them:
  // what the reply writes and reads, and what the metrics count agents by.
  static constexpr const char* kStates[] = {"idle", "busy"};
  static const char* StateName(bool busy) { return busy ? kStates[1] : kStates[0]; }
  const char* State() const { return StateName(Busy()); }
};

// Queued jobs of one requirement, and why they wait.
struct WaitingRequirement {
  int64_t jobs = 0;
  std::string kind;                                  // "benchmark" or "calibration"
  std::string pinned_host;                           // empty: any agent
  nlohmann::json select = nlohmann::json::object();  // the sweep's select
  std::string device;
  int64_t matching_agents = 0;
  std::string reason;
};

struct DepartedAgent {
  std::string agent;
  std::string at;  // UTC ISO 8601
  std::string reason;
};

// The coordinator's counters since it started (schemas/protocol.md lists what each counts).
struct CoordinatorCounters {
  int64_t malformed_messages = 0;  // refused at the edge: bad frames, JSON, fields
  int64_t unknown_peers = 0;       // messages from agents that had not registered
  int64_t results_stored = 0;
  int64_t duplicate_results = 0;
  int64_t stale_results = 0;
  int64_t rejected_results = 0;  // results that could never be stored (ack "rejected")
  int64_t failed_jobs = 0;
  int64_t requeued_jobs = 0;       // attempts lost (agent silent, lease expired, result rejected)
  int64_t undelivered_offers = 0;  // job offers whose send failed: not an attempt
  int64_t refused_offers = 0;      // job offers a busy agent refused: not an attempt
  int64_t send_failures = 0;
  int64_t store_errors = 0;
  int64_t handler_exceptions = 0;  // caught by the last-resort guard; should stay 0
  // Each counter with its name, in the protocol's order.
  std::vector<std::pair<const char*, int64_t>> Named() const;
  // What the counter named `name` counts, in a line (the metrics' HELP); "" for no
  // counter of that name.
  static const char* Meaning(const std::string& name);
  nlohmann::json ToJson() const;
  static StatusOr<CoordinatorCounters> FromJson(const nlohmann::json& counters);
};

struct StatusReply {
  static constexpr const char* kType = msg::kStatusReply;
  nlohmann::json request_id;
  std::vector<SweepOverview> sweeps;  // newest first
  std::vector<AgentState> agents;
  CoordinatorCounters counters;
  std::vector<WaitingRequirement> waiting;
  std::vector<DepartedAgent> departed;  // oldest first
  nlohmann::json ToJson() const;
  static StatusOr<StatusReply> FromJson(const nlohmann::json& body);
};

}  // namespace benchfleet
