#include "coordinator/core/pair_stats.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "common/sweep_versus.h"

namespace benchfleet {
namespace {

std::string Percent(double fraction) {
  std::ostringstream out;
  out.precision(3);
  out << fraction * 100 << "%";
  return out.str();
}

}  // namespace

PairPlan PlanPairs(const PairRequest& request, const std::vector<double>& log_ratios) {
  PairPlan plan;
  const int64_t n = static_cast<int64_t>(log_ratios.size());
  plan.estimate = PairedRatio(log_ratios, 1 - kPairAlpha);
  plan.reached = plan.estimate.valid() && plan.estimate.ratio > 0
                     ? (plan.estimate.high - plan.estimate.low) / 2 / plan.estimate.ratio
                     : std::numeric_limits<double>::infinity();
  const double threshold = 1 + request.min_change;
  const RatioEstimate strict = PairedRatio(log_ratios, 1 - kPairEarlyAlpha);
  const std::string pairs = std::to_string(n) + " pair" + (n == 1 ? "" : "s");
  if (n >= kVersusMinPairs && n >= kPairsBeforePrecision && plan.reached <= request.precision) {
    plan.done = true;
    plan.stopped = "precision";
    plan.why = "after " + pairs + " the 95% interval is +-" + Percent(plan.reached) +
               " of the ratio, within the precision of +-" + Percent(request.precision);
  } else if (n >= kVersusMinPairs && strict.valid() &&
             (strict.low > threshold || strict.high < 1 / threshold)) {
    plan.done = true;
    plan.stopped = "decided";
    plan.why = "after " + pairs + " even the 99% interval lies beyond a change of " +
               Percent(request.min_change) + " (" + (strict.low > threshold ? "slower" : "faster") +
               "): more pairs could not change the answer";
  } else if (n >= request.max_pairs) {
    plan.done = true;
    plan.stopped = "cap";
    plan.why = "the cap of " + std::to_string(request.max_pairs) + " pairs, the 95% interval +-" +
               (std::isfinite(plan.reached) ? Percent(plan.reached) : std::string("(none)")) +
               " of the ratio against the precision of +-" + Percent(request.precision);
  }
  if (plan.done) plan.verdict = Judge(plan.estimate, kPairAlpha, threshold);
  return plan;
}

}  // namespace benchfleet
