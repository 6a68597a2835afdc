#include "worker/versus_job.h"

#include <chrono>
#include <optional>

#include "worker/host/process_info.h"
#include "worker/measure/clock.h"
#include "worker/measure/extra_work.h"
#include "worker/measure/paired_sampler.h"
#include "worker/measure/step_memory.h"
#include "worker/timed_result.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One side's model, built, with its slowdown (if any) in its iteration.
struct Side {
  const JobSpec* spec = nullptr;
  PreparedWorkload workload;
  double build_s = 0;
  std::optional<double> rss_before_mb;
  json slowdown = nullptr;
  double calibration_s = 0;
};

Side Build(const JobSpec& spec) {
  Side side;
  side.spec = &spec;
  side.rss_before_mb = ResidentSetMiB();
  const auto start = std::chrono::steady_clock::now();
  side.workload = PrepareWorkload(spec);
  side.build_s = SecondsSince(start);
  if (spec.slowdown > 0) {
    const auto calibration_start = std::chrono::steady_clock::now();
    const ExtraWork extra = ExtraWork::Calibrate(side.workload.iteration, side.workload.block_end,
                                                 spec.slowdown, SystemClock());
    side.workload.iteration = extra.Wrap(std::move(side.workload.iteration));
    side.slowdown = extra.Report();
    side.calibration_s = SecondsSince(calibration_start);
  }
  return side;
}

// One side's result, every field a job of one workload has; `other`: the side that
// shared its process, whose build, slowdown calibration and blocks were not its start-up.
json SideResult(const Side& side, const Measurement& m, const Side& other,
                const Measurement& other_m, std::optional<double> age_at_end_s, json result) {
  const SampleStats stats = Summarize(m.samples_ms, side.spec->timing.target_ci);
  TimedWorkload timed;
  timed.spec = side.spec;
  timed.workload = &side.workload;
  timed.measurement = &m;
  timed.stats = &stats;
  timed.asked_batch = side.spec->batch_size;
  timed.model_build_s = side.build_s;
  timed.rss_before_mb = side.rss_before_mb;
  timed.age_at_end_s = age_at_end_s;
  timed.not_startup_s = side.calibration_s + other.build_s + other.calibration_s + other_m.timed_s;
  if (!IsCudaDevice(side.spec->device)) {
    timed.step_peak_alloc_mb = PeakAllocatedMiB(side.workload.iteration);
  }
  timed.slowdown = side.slowdown;
  FillTimedResult(timed, &result);
  if (side.workload.report) {
    const json added = side.workload.report(m, stats.median_ms);
    for (const auto& [key, value] : added.items()) result[key] = value;
  }
  return result;
}

}  // namespace

JobOutcome RunInProcessPair(const JobSpec& spec, json result) {
  const JobSpec& spec_b = *spec.versus_b;
  const Side a = Build(spec);
  const Side b = Build(spec_b);
  const PairedMeasurement paired =
      MeasurePair(a.workload.iteration, b.workload.iteration,
                  ToTimingOptions(spec.timing, IsCudaDevice(spec.device)), spec.versus_b_first,
                  SystemClock(), a.workload.block_end);
  const std::optional<double> age_at_end = ProcessAgeSeconds();
  json b_result = {{"job_id", spec_b.job_id}, {"attempt", spec_b.attempt}};
  b_result = SideResult(b, paired.b, a, paired.a, age_at_end, std::move(b_result));
  result = SideResult(a, paired.a, b, paired.b, age_at_end, std::move(result));
  result["versus"] = {{"pairing", "in_process"},
                      {"first", spec.versus_b_first ? "b" : "a"},
                      {"groups", paired.groups},
                      {"b", std::move(b_result)}};
  return {std::move(result), kExitOk};
}

}  // namespace benchfleet::worker
