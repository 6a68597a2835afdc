#include "coordinator/metrics/exposition.h"

#include <algorithm>

#include "metrics/exposition_writer.h"

namespace benchfleet {
namespace {

constexpr const char* kPrefix = "benchfleet_";

// "results_stored" -> "benchfleet_results_stored_total"; a name already ending in
// _total keeps its one suffix.
std::string CounterName(const std::string& counter) {
  const std::string suffix = "_total";
  const bool has_suffix =
      counter.size() >= suffix.size() &&
      counter.compare(counter.size() - suffix.size(), suffix.size(), suffix) == 0;
  return kPrefix + counter + (has_suffix ? "" : suffix);
}

}  // namespace

void AddJobCounts(const std::vector<RequirementJobCount>& counts, MetricsSnapshot* snapshot) {
  for (const RequirementJobCount& count : counts) {
    auto named = snapshot->requirement_names.find(count.requirement_id);
    const std::string name = named != snapshot->requirement_names.end()
                                 ? named->second
                                 : "requirement " + std::to_string(count.requirement_id);
    snapshot->jobs_queued[name] += count.queued;
    snapshot->jobs_running[name] += count.running;
    auto matching = snapshot->matching_agents.find(count.requirement_id);
    if (count.queued > 0 && matching != snapshot->matching_agents.end()) {
      int64_t& agents = snapshot->requirement_agents[name];
      agents = std::max(agents, matching->second);
    }
  }
}

std::string RenderExposition(const MetricsSnapshot& snapshot) {
  ExpositionWriter out;
  const std::string p = kPrefix;
  out.GaugesByLabel(p + "agents", "Registered agents by state, as status shows them.", "state",
                    snapshot.agents_by_state);
  out.GaugesByLabel(
      p + "jobs_queued",
      "Jobs waiting to be handed out, per requirement (the agents they need, as status names it).",
      "requirement", snapshot.jobs_queued);
  out.GaugesByLabel(p + "jobs_running", "Jobs handed out and not finished, per requirement.",
                    "requirement", snapshot.jobs_running);
  out.GaugesByLabel(p + "requirement_agents",
                    "Registered agents able to run the jobs of each requirement with queued jobs "
                    "(0: none is registered, and the jobs wait until one registers).",
                    "requirement", snapshot.requirement_agents);
  for (const auto& [name, value] : snapshot.counters.Named()) {
    out.Counter(CounterName(name), CoordinatorCounters::Meaning(name), value);
  }
  out.Histogram(p + "loop_iteration_seconds",
                "Time the coordinator's loop was busy per wake-up, from its poll returning (a "
                "message or the tick) to polling again: how long a new message may wait unread.",
                snapshot.loop_iteration);
  out.Histogram(p + "store_commit_seconds",
                "Time of each group commit of a round's store writes (one sync per round).",
                snapshot.store_commit);
  out.Gauge(p + "start_time_seconds", "When the coordinator started, in Unix seconds.",
            snapshot.start_time_s);
  out.Gauge(p + "build_info", "The coordinator's build; the value is always 1.", 1.0,
            {{"version", snapshot.version}});
  return out.text();
}

}  // namespace benchfleet
