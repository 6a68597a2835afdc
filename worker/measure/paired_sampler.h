// Two workloads timed in one process for a paired comparison (schemas/sweep.md, Versus:
// pairing in_process): their blocks alternate A B B A A B B A ... (B A A B ... when B goes
// first), so that a change of the host's pace lasting longer than a few blocks (a vCPU
// slowed for a fraction of a second by what shares its core, seen on 2-vCPU guests)
// falls on both sides alike, and a drift within the process cancels within each group of
// four. Each side is sampled by the one rule of MeasureWorkload (sampler.h).
#ifndef BENCHFLEET_WORKER_MEASURE_PAIRED_SAMPLER_H_
#define BENCHFLEET_WORKER_MEASURE_PAIRED_SAMPLER_H_

#include <functional>

#include "worker/measure/clock.h"
#include "worker/measure/sampler.h"

namespace benchfleet::worker {

struct PairedMeasurement {
  Measurement a, b;
  std::int64_t groups = 0;  // groups of four blocks timed
};

// Warms both up, alternating single iterations until each has run `options.warmup_s`,
// sizes each side's blocks as MeasureWorkload does, then times groups of four blocks
// until both sides' stopping rules hold (their own min_time_s, precision and steadiness)
// or `options.max_time_s` per side has passed (the pair samples for at most twice it).
// Each side's timed_s is its own blocks' time; cpu_s, effective_threads and host_load are
// the whole region's, shared by both.
PairedMeasurement MeasurePair(const std::function<void()>& a, const std::function<void()>& b,
                              const TimingOptions& options, bool b_first, Clock& clock,
                              const std::function<void()>& block_end = nullptr);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_PAIRED_SAMPLER_H_
