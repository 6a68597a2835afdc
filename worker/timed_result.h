// The fields every timed job of one workload reports (schemas/worker.md, Result): its
// configuration as run, its statistics and samples, throughput and FLOP/s at the median,
// the effective threads and who else used the host, the model's build and the process's
// start-up, accuracy, the memory one step holds, the runtime, and a dialled slowdown. The
// job runner adds what only its kind of job has (a search, replicas, serving, a profile,
// GPU peaks and telemetry, energy, ranks); an in-process pair writes one per side.
#ifndef BENCHFLEET_WORKER_TIMED_RESULT_H_
#define BENCHFLEET_WORKER_TIMED_RESULT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/job_spec.h"
#include "worker/measure/sampler.h"
#include "worker/measure/stats.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {

// The measurement budget in the sampler's terms.
TimingOptions ToTimingOptions(const TimingSpec& t, bool gpu);

// What one timed workload leaves for its result.
struct TimedWorkload {
  const JobSpec* spec = nullptr;
  const PreparedWorkload* workload = nullptr;
  const Measurement* measurement = nullptr;
  const SampleStats* stats = nullptr;
  std::int64_t asked_batch = 0;  // the batch_size echoed (a search's starting point)
  double model_build_s = 0;
  std::optional<double> rss_before_mb;  // before the model was built
  // The process's age when its sampling ended (startup_s is read from it), and the
  // seconds of it that were not this workload's start-up (the other side of a pair).
  std::optional<double> age_at_end_s;
  double not_startup_s = 0;
  nlohmann::json step_peak_alloc_mb;  // null where not measured
  nlohmann::json slowdown;            // ExtraWork::Report, null without one
};

// Writes the fields above into `result` (marking it ok).
void FillTimedResult(const TimedWorkload& t, nlohmann::json* result);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_TIMED_RESULT_H_
