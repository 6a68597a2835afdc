#include "coordinator/results/regression_judge.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/host_pace.h"
#include "common/log.h"
#include "common/median.h"

namespace benchfleet {
namespace {

// MAD scaled by this estimates the standard deviation of normal data.
constexpr double kMadToSigma = 1.4826;
// A 95% confidence interval's half-width is this many standard deviations.
constexpr double kInterval95Sigmas = 1.959963984540054;

struct Weighing {
  bool beyond = false;
  double change = 0;
  std::optional<double> z;  // none below the policy's minimum for the z test
  // The smallest relative change that would have been beyond both tests here.
  double detectable = 0;
};

// Whether `r`'s median is beyond a baseline of `n` results with this median and MAD. The
// noise a change is measured against is the series' own night-to-night spread (its MAD)
// and the result's own imprecision (its median's interval) together: a result whose
// median is known to +-3% cannot show a 2% step, however quiet the series.
Weighing Weigh(const JudgedResult& r, double median, double mad, int64_t n,
               const RegressionPolicy& policy) {
  Weighing v;
  const double value = *r.median_ms;
  v.change = value / median - 1;
  const bool relative = std::abs(v.change) > policy.min_change;
  if (n < policy.min_for_z) {
    // Too few results for a spread of their own: the change must at least lie outside
    // the result's interval.
    const bool outside = !r.median_ci_low_ms || !r.median_ci_high_ms ||
                         median < *r.median_ci_low_ms || median > *r.median_ci_high_ms;
    v.beyond = relative && outside;
    const double reach =
        r.median_ci_low_ms && r.median_ci_high_ms
            ? std::max(*r.median_ci_high_ms / median - 1, 1 - *r.median_ci_low_ms / median)
            : 0;
    v.detectable = std::max(policy.min_change, reach);
    return v;
  }
  const double series_sigma = kMadToSigma * mad;
  const double result_sigma =
      r.median_ci_low_ms && r.median_ci_high_ms
          ? (*r.median_ci_high_ms - *r.median_ci_low_ms) / 2 / kInterval95Sigmas
          : 0;
  const double sigma = std::sqrt(series_sigma * series_sigma + result_sigma * result_sigma);
  // A baseline without spread and a result without an interval: any change beyond the
  // relative test is beyond it.
  v.z = sigma > 0 ? std::abs(value - median) / sigma : (value == median ? 0 : 1e9);
  v.beyond = relative && *v.z > policy.z;
  v.detectable = std::max(policy.min_change, policy.z * sigma / median);
  return v;
}

// Sweeps whose policy is remembered, at most: one lookup per sweep, not per result.
constexpr size_t kPoliciesRemembered = 1000;

std::string Percent(double change) {
  const double tenths = std::round(change * 1000) / 10;
  std::ostringstream out;
  out << (tenths >= 0 ? "+" : "") << tenths << "%";
  return out.str();
}

}  // namespace

RegressionPolicy RegressionJudge::PolicyOf(int64_t sweep_id) {
  if (auto it = policies_.find(sweep_id); it != policies_.end()) return it->second;
  RegressionPolicy policy;
  if (auto stored = store_.SweepRegressionPolicy(sweep_id); stored.ok() && stored->is_object()) {
    if (auto parsed = ParseRegressionPolicy(*stored); parsed.ok()) policy = *parsed;
  }
  if (policies_.size() >= kPoliciesRemembered) policies_.clear();
  policies_[sweep_id] = policy;
  return policy;
}

void RegressionJudge::Judge(const JudgedResult& r) {
  if (r.confirms_job_id) return DecideIfRerunsDone(*r.confirms_job_id, PolicyOf(r.sweep_id));
  // Every successful, steady result is judged, a noisy (imprecise) one too: its
  // interval widens the noise it is judged against instead of shutting it out.
  if (!r.ok || r.unsteady || r.series.empty() || !r.median_ms) return;
  const RegressionPolicy policy = PolicyOf(r.sweep_id);
  // A candidate of this series still waits for its reruns: they decide this step, and
  // a second candidate would report it twice.
  auto open = store_.SeriesHasOpenCandidate(r.series);
  if (!open.ok()) {
    ++store_errors_;
    return;
  }
  if (*open) return;
  auto baseline = store_.SeriesBaseline(r.series, r.job_id, policy.window, r.host, r.model);
  if (!baseline.ok()) {
    ++store_errors_;
    return;
  }
  if (baseline->size() < 2) return;  // a new series: nothing to judge against yet
  std::vector<double> values;
  for (const BaselinePoint& p : *baseline) values.push_back(p.median_ms);
  const double median = Median(values);
  std::vector<double> deviations;
  for (double v : values) deviations.push_back(std::abs(v - median));
  const double mad = Median(deviations);
  const int64_t n = static_cast<int64_t>(values.size());
  const Weighing verdict = Weigh(r, median, mad, n, policy);
  if (!verdict.beyond) return;
  RegressionCandidate c;
  c.job_id = r.job_id;
  c.series = r.series;
  c.host_id = r.host_id;
  c.slower = *r.median_ms > median;  // time per step: more is slower
  c.median_ms = *r.median_ms;
  c.baseline_median_ms = median;
  c.baseline_mad_ms = mad;
  c.baseline_n = n;
  c.baseline_from = baseline->back().received_at;
  c.baseline_to = baseline->front().received_at;
  c.change = verdict.change;
  c.z = verdict.z;
  c.detectable_change = verdict.detectable;
  c.median_ci_low_ms = r.median_ci_low_ms;
  c.median_ci_high_ms = r.median_ci_high_ms;
  c.host_pace_ms = r.host_pace_ms;
  // The baseline's pace, measured as a night's is: over every result of its nights'
  // sweeps on the host (docs/regressions.md, Host pace).
  std::vector<int64_t> nights;
  for (const BaselinePoint& p : *baseline) nights.push_back(p.sweep_id);
  auto baseline_pace = store_.HostPaceOfSweeps(r.host_id, nights);
  if (!baseline_pace.ok()) {
    ++store_errors_;
    return;
  }
  if (baseline_pace->results() >= kHostPaceMinResults) {
    c.baseline_host_pace_ms = baseline_pace->mean_ms();
    c.baseline_host_paces_ms = baseline_pace->paces_ms;
  }
  auto reruns = store_.AddRegressionCandidate(c, r.host, policy.reruns);
  if (!reruns.ok()) {
    ++store_errors_;
    LOG_ERROR("job " << r.job_id << ": cannot queue the reruns of a regression candidate: "
                     << reruns.status().message());
    return;
  }
  LOG_INFO("job " << r.job_id << " on " << r.host << ": " << (c.slower ? "slower" : "faster")
                  << " by " << std::lround(std::abs(c.change) * 1000) / 10.0
                  << "% than its series' median of " << n << "; " << reruns->size()
                  << " reruns queued to confirm it");
  reruns_queued_ = true;
}

void RegressionJudge::DecideIfRerunsDone(int64_t candidate_job_id, const RegressionPolicy& policy) {
  auto candidate = store_.CandidateOf(candidate_job_id);
  auto reruns = store_.RerunsOf(candidate_job_id);
  if (!candidate.ok() || !reruns.ok()) {
    ++store_errors_;
    return;
  }
  if (!*candidate) return;  // decided already
  std::vector<double> medians;
  for (const Rerun& rerun : *reruns) {
    if (rerun.state == "queued" || rerun.state == "running") return;  // not all in yet
    if (rerun.median_ms) medians.push_back(*rerun.median_ms);
  }
  const RegressionCandidate& c = **candidate;
  if (medians.empty()) {
    (void)store_.DecideRegression(candidate_job_id, "noise", std::nullopt, "no rerun succeeded");
    return;
  }
  // The z-score picked the candidate out of the noise; the reruns say whether the change
  // is real: it is when most of them, and their median, show it, the same way and
  // beyond the relative threshold. (Asking each rerun for z > 4 again would miss a true
  // 15% slowdown at 3% noise about one time in twenty.)
  auto reproduces = [&](double value) {
    const double change = value / c.baseline_median_ms - 1;
    return (change > 0) == c.slower && std::abs(change) > policy.min_change;
  };
  const double rerun_median = Median(medians);
  const auto reproduced = std::count_if(medians.begin(), medians.end(), reproduces);
  const bool confirmed =
      reproduces(rerun_median) && 2 * reproduced > static_cast<long>(reruns->size());
  std::string state = confirmed ? "confirmed" : "noise";
  std::string reason = std::string(confirmed ? "reproduced" : "not reproduced") + " by " +
                       std::to_string(reproduced) + " of " + std::to_string(reruns->size()) +
                       " reruns: their median " + std::to_string(rerun_median) +
                       " ms against the baseline's " + std::to_string(c.baseline_median_ms) + " ms";
  // The host's pace that night (docs/regressions.md, Host pace): a change reproduced on a
  // host whose pace moved the same way beyond min_change is the host's, never a
  // regression.
  auto night = store_.NightHostPace(candidate_job_id);
  if (!night.ok()) {
    ++store_errors_;
    return;
  }
  std::optional<double> night_pace;
  if (night->results() >= kHostPaceMinResults) night_pace = night->mean_ms();
  // The night's pace against the baseline's, each from its results' readings: the host
  // moved only beyond the spread of those readings (common/host_pace.h).
  const std::optional<RatioEstimate> pace =
      HostPaceRatio(c.baseline_host_paces_ms, night->paces_ms);
  if (confirmed && HostPaceExplains(rerun_median / c.baseline_median_ms, pace)) {
    state = "host";
    reason += "; the host's pace that night (" + std::to_string(night->results()) +
              " results) moved " + Percent(pace->ratio - 1) + " [" + Percent(pace->low - 1) + ", " +
              Percent(pace->high - 1) + "] from the baseline's (" +
              std::to_string(c.baseline_host_paces_ms.size()) +
              " results), beyond its own noise, the same way and enough to explain it: the "
              "host's, not the code's";
  }
  if (!store_.DecideRegression(candidate_job_id, state, rerun_median, reason, night_pace).ok()) {
    ++store_errors_;
    return;
  }
  LOG_INFO("job " << candidate_job_id << ": regression candidate " << state << " (" << reason
                  << ")");
}

}  // namespace benchfleet
