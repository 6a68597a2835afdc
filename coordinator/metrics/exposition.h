// The coordinator's health as Prometheus' families (docs/metrics.md lists every one): a
// MetricsSnapshot the loop fills, rendered on a scrape's thread with the shared writer
// (metrics/exposition_writer.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status_reply.h"
#include "metrics/histogram.h"

namespace benchfleet {

// Everything a scrape shows, copied out of the loop at one moment: the HTTP thread
// reads only this, never the coordinator's own state.
struct MetricsSnapshot {
  // Agents per state, every state of AgentState::kStates present (0 when none).
  std::map<std::string, int64_t> agents_by_state;
  // Jobs per requirement (named as `status` names it), for each requirement that has
  // queued or running jobs; both maps hold the same requirements.
  std::map<std::string, int64_t> jobs_queued;
  std::map<std::string, int64_t> jobs_running;
  // What status calls each requirement the loop knows, by id: the scrape thread reads
  // the job counts per id itself (RequirementJobCount) and names them by this.
  std::map<int64_t, std::string> requirement_names;
  // Registered agents able to run each requirement that had queued jobs at the last
  // scrape, by id (the loop counts them; the scrape knows which requirements have queued
  // jobs), and what the scrape makes of it: by name, for those with queued jobs now.
  std::map<int64_t, int64_t> matching_agents;
  std::map<std::string, int64_t> requirement_agents;
  CoordinatorCounters counters;
  LatencyHistogram loop_iteration;
  LatencyHistogram store_commit;
  std::string version;      // the coordinator's build
  double start_time_s = 0;  // when the coordinator started, Unix seconds
};

// Queued and running jobs of one requirement, as the store counts them.
struct RequirementJobCount {
  int64_t requirement_id = 0;
  int64_t queued = 0;
  int64_t running = 0;
};
// Adds `counts` to the snapshot's jobs_queued / jobs_running, each named by
// requirement_names ("requirement N" for one the loop did not know yet), and sets
// requirement_agents for each with queued jobs whose matching_agents the loop counted;
// two requirements that read alike add up their jobs and show the larger count of agents.
void AddJobCounts(const std::vector<RequirementJobCount>& counts, MetricsSnapshot* snapshot);

// The snapshot as exposition text, families in a fixed order, labels in key order.
std::string RenderExposition(const MetricsSnapshot& snapshot);

}  // namespace benchfleet
