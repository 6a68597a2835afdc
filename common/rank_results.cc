#include "common/rank_results.h"

#include <algorithm>
#include <limits>

namespace benchfleet {

nlohmann::json CombineRanks(std::vector<nlohmann::json> rank_results,
                            const std::optional<RankFailure>& failure, bool replicas) {
  const size_t world_size = rank_results.size();
  nlohmann::json ranks = nlohmann::json::array();
  double wall_s = 0;
  for (size_t r = 0; r < world_size; ++r) {
    const nlohmann::json& result = rank_results[r];
    if (!result.is_object()) continue;  // not heard from
    if (const auto wall = result.find("worker_wall_s"); wall != result.end() && wall->is_number()) {
      wall_s = std::max(wall_s, wall->get<double>());
    }
    nlohmann::json entry = result;
    for (const char* key : {"samples_ms", "runtime", "job_id", "attempt"}) entry.erase(key);
    if (!entry.contains("distributed") || !entry["distributed"].is_object())
      entry["distributed"] = nlohmann::json::object();
    if (!entry["distributed"].contains("rank")) entry["distributed"]["rank"] = r;
    ranks.push_back(std::move(entry));
  }
  nlohmann::json combined;
  const size_t failed = failure ? static_cast<size_t>(failure->rank) : world_size;
  if (failure) {
    const nlohmann::json cause = failed < world_size && rank_results[failed].is_object()
                                     ? rank_results[failed]
                                     : nlohmann::json::object();
    const auto error = cause.find("error");
    combined = {
        {"ok", false},
        {"error",
         "rank " + std::to_string(failure->rank) + " of " + std::to_string(world_size) +
             failure->where + ": " +
             (error != cause.end() && error->is_string() ? error->get<std::string>() : "failed") +
             "; the gang was stopped"}};
    for (const char* key : {"exit", "stderr_tail"}) {
      if (const auto it = cause.find(key); it != cause.end()) combined[key] = *it;
    }
  } else {
    nlohmann::json summary = replicas ? SummarizeReplicas(rank_results) : nlohmann::json();
    combined = world_size > 0 && rank_results.front().is_object()
                   ? std::move(rank_results.front())
                   : nlohmann::json{{"ok", false}, {"error", "rank 0 was not heard from"}};
    if (!summary.is_null()) combined["replicas"] = std::move(summary);
  }
  combined["worker_wall_s"] = wall_s;
  combined["ranks"] = std::move(ranks);
  return combined;
}

nlohmann::json SummarizeReplicas(const std::vector<nlohmann::json>& results) {
  double aggregate = 0;
  double from = -std::numeric_limits<double>::infinity();
  double to = std::numeric_limits<double>::infinity();
  std::vector<double> medians;
  // A worker's result file is read back, not trusted: a copy without its figures makes
  // no summary (null), never an exception in the agent's loop.
  auto number = [](const nlohmann::json& object, const char* outer,
                   const char* key) -> std::optional<double> {
    const auto o = object.find(outer);
    if (o == object.end() || !o->is_object()) return std::nullopt;
    const auto v = o->find(key);
    return v != o->end() && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
  };
  for (const nlohmann::json& r : results) {
    const auto rate = number(r, "replica", "throughput_per_s");
    const auto start = number(r, "replica", "timed_from_s");
    const auto end = number(r, "replica", "timed_to_s");
    const auto median = number(r, "stats", "median_ms");
    if (!rate || !start || !end || !median) return nullptr;
    aggregate += *rate;
    from = std::max(from, *start);
    to = std::min(to, *end);
    medians.push_back(*median);
  }
  if (medians.empty()) return nullptr;
  std::sort(medians.begin(), medians.end());
  return {{"count", results.size()},
          {"aggregate_throughput_per_s", aggregate},
          {"overlap_s", std::max(0.0, to - from)},
          {"median_ms_min", medians.front()},
          {"median_ms_max", medians.back()}};
}

}  // namespace benchfleet
