// A job's single_stream or server scenario (serving.h) run on the job's model: one
// prepared workload per batch size the batcher may form, run by this one thread (the
// intra-op threads do the math).
#ifndef BENCHFLEET_WORKER_SERVING_JOB_H_
#define BENCHFLEET_WORKER_SERVING_JOB_H_

#include <nlohmann/json.hpp>
#include <string>

#include "common/job_spec.h"

namespace benchfleet::worker {

struct ScenarioOutcome {
  nlohmann::json serving;  // the result's `serving` object (schemas/worker.md)
  std::string error;       // non-empty: the run is invalid (or no rate met the SLO)
};

// Runs spec.scenario ("single_stream" or "server"; thread settings already applied).
// Throws WorkloadError when the model cannot be built.
ScenarioOutcome RunScenario(const JobSpec& spec);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_SERVING_JOB_H_
