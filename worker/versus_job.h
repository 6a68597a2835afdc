// Side A of a paired comparison run in one worker process (schemas/worker.md, Versus;
// schemas/sweep.md, Versus, pairing in_process): both sides' models built in this
// process and timed in alternating blocks (worker/measure/paired_sampler.h), side B's
// result nested in side A's under `versus.b`.
#ifndef BENCHFLEET_WORKER_VERSUS_JOB_H_
#define BENCHFLEET_WORKER_VERSUS_JOB_H_

#include <nlohmann/json.hpp>

#include "common/job_spec.h"
#include "worker/job_runner.h"

namespace benchfleet::worker {

// Runs `spec` (side A, with versus_b set) and its side B; the process's thread, backend
// and device settings are applied already (both sides share them). Throws what
// PrepareWorkload throws.
JobOutcome RunInProcessPair(const JobSpec& spec, nlohmann::json result);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_VERSUS_JOB_H_
