// One result for a job run by several processes, from each one's own: a gang's ranks
// or a job's replicas. The agent combines the ranks it started itself; the coordinator
// those of a gang spread over agents. Both call CombineRanks, so the job's row reads
// the same whichever way its ranks ran.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace benchfleet {

// The rank whose failure ended the gang: the others were stopped because of it.
struct RankFailure {
  int64_t rank = 0;
  std::string where;  // appended to "rank R of W", e.g. " on agent node-b"; may be empty
};

// `rank_results`: each rank's result, by rank, its size the world size; null for a rank
// not heard from. Each rank's own figures go to "ranks" (its result without its raw
// samples, its runtime description, job_id and attempt; "distributed.rank" added where
// it lacks one). With `failure` the job failed: {"ok": false, "error": "rank R of W...:
// <its error>; the gang was stopped"} with the failed rank's exit and stderr_tail.
// Without, the job's result is rank 0's, with a "replicas" summary when `replicas`
// (SummarizeReplicas). Its worker_wall_s is the longest of the ranks'.
nlohmann::json CombineRanks(std::vector<nlohmann::json> rank_results,
                            const std::optional<RankFailure>& failure, bool replicas);

// What the replicas of a job did together, from each one's result: count,
// aggregate_throughput_per_s (the sum of each one's samples/s over its timed window,
// every window inside the span where all of them run), overlap_s (how long all were
// timing at once), median_ms_min and median_ms_max (the fastest and slowest copy).
// Null when a result lacks its figures.
nlohmann::json SummarizeReplicas(const std::vector<nlohmann::json>& results);

}  // namespace benchfleet
