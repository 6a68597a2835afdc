// Repeats in fresh processes (schemas/sweep.md, Processes; docs/results.md, Processes):
// what the processes of one job say together, and, for a job with a `precision`, whether
// another process is needed and how long it should sample. Pure functions of the
// processes' own figures; the store keeps them (result_processes) and the result
// acceptor calls these.
//
// The model is Kalibera and Jones' two levels of random effects ("Rigorous Benchmarking
// in Reasonable Time", ISMM 2013), on the log scale, since a process's pace multiplies
// its times: log m_i = log mu + b_i + e_i for process i's median m_i, b_i the process's
// own bias (where its threads landed, the host's pace while it ran, its memory layout)
// with variance S2^2, e_i its sampling error, whose variance its own interval gives. The
// estimate is the geometric mean of the K medians, s the standard deviation of their
// logs (both levels in it). Its interval answers "what will a repeat run give?": the 95%
// prediction interval of the geometric mean of a repeat run of K processes on that host,
// exp(mean log +- t(K-1) * s * sqrt(1/K + 1/K)), the estimate's own uncertainty and the
// repeat's; on that scale it never reaches 0 ms, however the processes spread. (The
// confidence interval of the mean, +- t s / sqrt(K), covers another run's mean only
// about 83-88% of the time: it leaves out the repeat's own spread.)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/ratio_interval.h"

namespace benchfleet {

// One process's figures, from its worker's result.
struct ProcessFigures {
  double median_ms = 0;
  std::optional<double> ci_low_ms, ci_high_ms;  // its own 95% interval of the median
  int64_t samples = 0;                          // stats.n
  double timed_s = 0;                           // stats.timed_s: seconds of sampling
  double wall_s = 0;                            // worker_wall_s: the whole process
};

// The processes together.
struct AcrossProcesses {
  int64_t count = 0;
  double mean_ms = 0;                           // the estimate: the geometric mean of the medians
  std::optional<double> ci_low_ms, ci_high_ms;  // where a repeat run lands (count >= 2)
  // S2: between processes, sampling error removed, in ms (the relative spread on the log
  // scale times the estimate)
  double sd_between_ms = 0;
  std::optional<double> sd_within_ms;  // S1 of a median: within one process
  size_t representative = 0;           // the process whose median is nearest the mean
  double relative_half_width() const;  // of the interval, / mean; +inf without one
};

// Summarizes `processes` (at least one).
AcrossProcesses Summarize(const std::vector<ProcessFigures>& processes);

// What a job asks of its processes.
struct RepeatRequest {
  int64_t processes = 1;                    // fixed K, or with precision the most it may take
  std::optional<double> precision;          // the half-width wanted, a fraction of the estimate
  double min_time_s = 0.5, max_time_s = 5;  // the job's own timing (per process)
};

// After each process: done, or one more, and with precision the samples per process the
// later ones take (as seconds of sampling), with why, for the result's `precision`.
struct ProcessPlan {
  bool done = false;
  std::optional<double> sample_s;  // precision: sample this long in each later process
  nlohmann::json decision;         // precision: the figures the choice came from
};
ProcessPlan PlanProcesses(const RepeatRequest& request,
                          const std::vector<ProcessFigures>& processes);

}  // namespace benchfleet
