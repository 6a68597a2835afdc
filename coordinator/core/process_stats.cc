#include "coordinator/core/process_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/limits.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr double kZ975 = 1.959963984540054;

// Variance of one process's median from its own 95% interval (normal approximation), in
// ms^2 and, on the log scale, relative to that median.
std::optional<double> WithinVariance(const ProcessFigures& p) {
  if (!p.ci_low_ms || !p.ci_high_ms || *p.ci_high_ms < *p.ci_low_ms) return std::nullopt;
  const double sd = (*p.ci_high_ms - *p.ci_low_ms) / (2 * kZ975);
  return sd * sd;
}
std::optional<double> WithinLogVariance(const ProcessFigures& p) {
  const std::optional<double> ms2 = WithinVariance(p);
  if (!ms2 || !(p.median_ms > 0)) return std::nullopt;
  return *ms2 / (p.median_ms * p.median_ms);
}

}  // namespace

double AcrossProcesses::relative_half_width() const {
  if (!ci_low_ms || !ci_high_ms || mean_ms <= 0) return std::numeric_limits<double>::infinity();
  return (*ci_high_ms - *ci_low_ms) / 2 / mean_ms;
}

AcrossProcesses Summarize(const std::vector<ProcessFigures>& processes) {
  AcrossProcesses out;
  out.count = static_cast<int64_t>(processes.size());
  if (processes.empty()) return out;
  std::vector<double> medians;
  for (const ProcessFigures& p : processes) medians.push_back(p.median_ms);
  const GeometricSummary across = SummarizeGeometric(medians);
  out.mean_ms = across.mean;
  double nearest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < processes.size(); ++i) {
    if (!(processes[i].median_ms > 0)) continue;
    if (const double d = std::abs(std::log(processes[i].median_ms / out.mean_ms)); d < nearest) {
      nearest = d;
      out.representative = i;
    }
  }
  double within_sum = 0, within_log_sum = 0;
  int within_n = 0;
  for (const ProcessFigures& p : processes) {
    const std::optional<double> w = WithinVariance(p), wl = WithinLogVariance(p);
    if (w && wl) {
      within_sum += *w;
      within_log_sum += *wl;
      ++within_n;
    }
  }
  if (within_n > 0) out.sd_within_ms = std::sqrt(within_sum / within_n);
  if (!across.low || !across.high) return out;
  // Kalibera and Jones' estimator of the upper level: the medians' variance less what
  // each one's own sampling error puts into it (on the log scale, then in ms at the
  // estimate).
  const double within_log = within_n > 0 ? within_log_sum / within_n : 0;
  const double between_log = std::max(0.0, across.sd_log * across.sd_log - within_log);
  out.sd_between_ms = out.mean_ms * std::sqrt(between_log);
  out.ci_low_ms = *across.low;
  out.ci_high_ms = *across.high;
  return out;
}

ProcessPlan PlanProcesses(const RepeatRequest& request,
                          const std::vector<ProcessFigures>& processes) {
  ProcessPlan plan;
  const int64_t count = static_cast<int64_t>(processes.size());
  if (!request.precision) {
    plan.done = count >= request.processes;
    return plan;
  }
  const double target = *request.precision;
  const AcrossProcesses across = Summarize(processes);
  const double reached = across.relative_half_width();
  json& d = plan.decision;
  d["target"] = target;
  d["processes"] = count;
  d["reached"] = std::isfinite(reached) ? json(reached) : json(nullptr);
  // The pilot: the first processes run with the job's own timing; below it nothing is
  // known of the variance between processes.
  if (count < std::min(kPrecisionPilotProcesses, request.processes)) return plan;
  // Whether to stop here; the choice of samples below is recorded either way.
  auto stop = [&]() -> ProcessPlan {
    if (reached <= target) {
      plan.done = true;
      d["met"] = true;
      d["stopped"] = "reached";
      return plan;
    }
    if (count >= request.processes) {
      plan.done = true;
      d["met"] = false;
      d["stopped"] = "cap";
      d["why"] = "the interval across " + std::to_string(count) + " processes is still +-" +
                 std::to_string(reached * 100).substr(0, 5) + "% of the median; the cap is " +
                 std::to_string(request.processes) + " processes";
      return plan;
    }
    return plan;
  };
  // Kalibera and Jones: with c_p the cost of a process (start-up, model, warm-up), c_s
  // that of a sample, S1^2 a sample's variance within a process and S2^2 the variance
  // between processes, the samples per process that reach a variance in the least time
  // are n = sqrt(c_p S1^2 / (c_s S2^2)); then the processes that reach the target.
  // Variances on the log scale (relative), where the interval is made.
  double per_sample_var = 0, sample_cost_s = 0, process_cost_s = 0;
  int with_var = 0, with_cost = 0;
  for (const ProcessFigures& p : processes) {
    if (auto w = WithinLogVariance(p); w && p.samples > 0) {
      per_sample_var += *w * static_cast<double>(p.samples);
      ++with_var;
    }
    if (p.samples > 0 && p.timed_s > 0) {
      sample_cost_s += p.timed_s / static_cast<double>(p.samples);
      process_cost_s += std::max(0.0, p.wall_s - p.timed_s);
      ++with_cost;
    }
  }
  if (with_var == 0 || with_cost == 0) return stop();  // the job's own timing
  per_sample_var /= with_var;
  sample_cost_s /= with_cost;
  process_cost_s = std::max(process_cost_s / with_cost, 0.01);
  const double between_sd = across.mean_ms > 0 ? across.sd_between_ms / across.mean_ms : 0;
  const double between_var = between_sd * between_sd;
  // No variance seen between processes: a process's samples are worth as much as
  // another process; its sampling stays as the job set it.
  double samples = static_cast<double>(processes.back().samples);
  if (between_var > 0)
    samples = std::sqrt(process_cost_s * per_sample_var / (sample_cost_s * between_var));
  const double sample_s = std::clamp(samples * sample_cost_s, std::max(0.05, 10 * sample_cost_s),
                                     std::max(request.max_time_s, 0.05));
  samples = sample_s / sample_cost_s;
  const double one = between_var + per_sample_var / samples;  // one process's variance
  // The interval exp(+-h) is +-sinh(h) of the estimate on average: h = asinh(target).
  int64_t needed = count + 1;
  while (needed <= kMaxJobProcesses &&
         StudentT975(needed - 1) * std::sqrt(2 * one / static_cast<double>(needed)) >
             std::asinh(target)) {
    ++needed;
  }
  plan.sample_s = sample_s;
  d["between_sd_ms"] = across.sd_between_ms;
  d["sample_sd_ms"] = std::sqrt(per_sample_var) * across.mean_ms;
  d["process_cost_s"] = process_cost_s;
  d["sample_cost_ms"] = sample_cost_s * 1000;
  d["samples_per_process"] = std::llround(samples);
  d["sample_s"] = sample_s;
  d["processes_needed"] = needed <= kMaxJobProcesses ? json(needed) : json(nullptr);
  return stop();
}

}  // namespace benchfleet
