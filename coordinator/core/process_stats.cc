#include "coordinator/core/process_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/limits.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr double kZ975 = 1.959963984540054;

// Variance of one process's median from its own 95% interval (normal approximation).
std::optional<double> WithinVariance(const ProcessFigures& p) {
  if (!p.ci_low_ms || !p.ci_high_ms || *p.ci_high_ms < *p.ci_low_ms) return std::nullopt;
  const double sd = (*p.ci_high_ms - *p.ci_low_ms) / (2 * kZ975);
  return sd * sd;
}

}  // namespace

double StudentT975(int64_t df) {
  // Exact to three decimals up to 30 degrees of freedom; beyond, the Cornish-Fisher
  // expansion in 1/df, within 1e-3 of the exact value there.
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                      2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                      2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                      2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::numeric_limits<double>::infinity();
  if (df <= 30) return kTable[df - 1];
  const double z = kZ975, v = static_cast<double>(df);
  return z + (z * z * z + z) / (4 * v) +
         (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

double AcrossProcesses::relative_half_width() const {
  if (!ci_low_ms || !ci_high_ms || mean_ms <= 0) return std::numeric_limits<double>::infinity();
  return (*ci_high_ms - *ci_low_ms) / 2 / mean_ms;
}

AcrossProcesses Summarize(const std::vector<ProcessFigures>& processes) {
  AcrossProcesses out;
  out.count = static_cast<int64_t>(processes.size());
  if (processes.empty()) return out;
  double sum = 0;
  for (const ProcessFigures& p : processes) sum += p.median_ms;
  out.mean_ms = sum / static_cast<double>(processes.size());
  double nearest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < processes.size(); ++i) {
    if (const double d = std::abs(processes[i].median_ms - out.mean_ms); d < nearest) {
      nearest = d;
      out.representative = i;
    }
  }
  double within_sum = 0;
  int within_n = 0;
  for (const ProcessFigures& p : processes) {
    if (auto w = WithinVariance(p)) {
      within_sum += *w;
      ++within_n;
    }
  }
  if (within_n > 0) out.sd_within_ms = std::sqrt(within_sum / within_n);
  if (processes.size() < 2) return out;
  double squares = 0;
  for (const ProcessFigures& p : processes)
    squares += (p.median_ms - out.mean_ms) * (p.median_ms - out.mean_ms);
  const double variance = squares / static_cast<double>(processes.size() - 1);
  // Kalibera and Jones' estimator of the upper level: the medians' variance less what
  // each one's own sampling error puts into it.
  const double within = out.sd_within_ms ? *out.sd_within_ms * *out.sd_within_ms : 0;
  out.sd_between_ms = std::sqrt(std::max(0.0, variance - within));
  // Where a repeat run of as many processes lands: the mean's own variance and the
  // repeat's, s^2 / K each (a prediction interval).
  const double half =
      StudentT975(out.count - 1) * std::sqrt(2 * variance / static_cast<double>(out.count));
  out.ci_low_ms = std::max(0.0, out.mean_ms - half);
  out.ci_high_ms = out.mean_ms + half;
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
  double per_sample_var = 0, sample_cost_s = 0, process_cost_s = 0;
  int with_var = 0, with_cost = 0;
  for (const ProcessFigures& p : processes) {
    if (auto w = WithinVariance(p); w && p.samples > 0) {
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
  const double between_var = across.sd_between_ms * across.sd_between_ms;
  // No variance seen between processes: a process's samples are worth as much as
  // another process; its sampling stays as the job set it.
  double samples = static_cast<double>(processes.back().samples);
  if (between_var > 0)
    samples = std::sqrt(process_cost_s * per_sample_var / (sample_cost_s * between_var));
  const double sample_s = std::clamp(samples * sample_cost_s, std::max(0.05, 10 * sample_cost_s),
                                     std::max(request.max_time_s, 0.05));
  samples = sample_s / sample_cost_s;
  const double one = between_var + per_sample_var / samples;  // one process's variance
  int64_t needed = count + 1;
  while (needed <= kMaxJobProcesses &&
         StudentT975(needed - 1) * std::sqrt(2 * one / static_cast<double>(needed)) >
             target * across.mean_ms) {
    ++needed;
  }
  plan.sample_s = sample_s;
  d["between_sd_ms"] = across.sd_between_ms;
  d["sample_sd_ms"] = std::sqrt(per_sample_var);
  d["process_cost_s"] = process_cost_s;
  d["sample_cost_ms"] = sample_cost_s * 1000;
  d["samples_per_process"] = std::llround(samples);
  d["sample_s"] = sample_s;
  d["processes_needed"] = needed <= kMaxJobProcesses ? json(needed) : json(nullptr);
  return stop();
}

}  // namespace benchfleet
