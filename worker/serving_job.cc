#include "worker/serving_job.h"

#include <algorithm>
#include <vector>

#include "worker/measure/serving.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {

using nlohmann::json;

ScenarioOutcome RunScenario(const JobSpec& spec) {
  const ServerScenario& s = spec.serving;
  // Batch b runs the model prepared at batch_size b: the same seed, so the same weights.
  std::vector<PreparedWorkload> by_size;
  for (std::int64_t b = 1; b <= s.max_batch; ++b) {
    JobSpec at = spec;
    at.batch_size = b;
    by_size.push_back(PrepareWorkload(at));
  }
  const RunBatch run_batch = [&by_size](std::int64_t size) {
    const PreparedWorkload& w = by_size[static_cast<std::size_t>(size - 1)];
    w.iteration();
    if (w.block_end) w.block_end();
  };
  // Warm every batch size once more, so no run pays a first call's allocations.
  for (std::int64_t b = 1; b <= s.max_batch; ++b) run_batch(b);

  ScenarioOutcome out;
  ServingRun run;
  json search = nullptr;
  if (spec.scenario == "single_stream") {
    run = RunSingleStream(s, run_batch, SystemServingClock());
  } else if (s.slo_p99_ms) {
    const SloSearch found = SearchMaxQps(s, spec.seed, run_batch, SystemServingClock());
    search = found.Json();
    // The result's figures are those of the highest rate within the SLO.
    run = found.probes[static_cast<std::size_t>(std::max(found.best, 0))];
    if (found.max_qps == 0) {
      out.error = "scenario.slo_p99_ms: no server run kept p99 within " +
                  json(*s.slo_p99_ms).dump() + " ms (" + std::to_string(found.probes.size()) +
                  " rates tried, down to " + json(found.probes.back().target_qps).dump() + " qps)";
    }
  } else {
    run = RunServer(s, s.qps, spec.seed, run_batch, SystemServingClock());
  }
  if (out.error.empty() && !run.valid) {
    out.error =
        "scenario " + spec.scenario + ": the run is invalid, not a result: " + run.invalid_reason;
  }
  out.serving = run.Json();
  out.serving["scenario"] = spec.scenario;
  out.serving["max_batch"] = s.max_batch;
  out.serving["min_duration_s"] = s.min_duration_s;
  out.serving["min_queries"] = s.min_queries;
  if (spec.scenario == "server") {
    out.serving["max_wait_ms"] = s.max_wait_ms;
    out.serving["seed"] = spec.seed;
    out.serving["slo_p99_ms"] = s.slo_p99_ms ? json(*s.slo_p99_ms) : json(nullptr);
    if (!search.is_null()) {
      out.serving["max_qps_within_slo"] = search["max_qps_within_slo"];
      out.serving["probes"] = search["probes"];
    }
  }
  return out;
}

}  // namespace benchfleet::worker
