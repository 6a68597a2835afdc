#include "common/host_pace.h"

#include <algorithm>

namespace benchfleet {

std::optional<RatioEstimate> HostPaceRatio(const std::vector<double>& a,
                                           const std::vector<double>& b) {
  const RatioEstimate pace = UnpairedRatio(a, b);
  if (pace.count_a < kHostPaceMinResults || pace.count_b < kHostPaceMinResults) return std::nullopt;
  return pace;
}

bool HostPaceExplains(double ratio, const std::optional<RatioEstimate>& pace) {
  if (!pace || !(ratio > 0) || !(pace->ratio > 0) || !(pace->p < kHostPaceAlpha)) return false;
  if (pace->ratio > 1 && ratio > 1) return ratio <= std::pow(pace->ratio, kHostPaceExplainsPower);
  if (pace->ratio < 1 && ratio < 1) return ratio >= std::pow(pace->ratio, kHostPaceExplainsPower);
  return false;
}

bool HostPaceExplains(const RatioEstimate& change, const std::optional<RatioEstimate>& pace) {
  if (!change.valid()) return HostPaceExplains(change.ratio, pace);
  if (change.ratio > 1) return HostPaceExplains(std::max(1.0 + 1e-12, change.low), pace);
  if (change.ratio < 1) return HostPaceExplains(std::min(1.0 - 1e-12, change.high), pace);
  return false;
}

}  // namespace benchfleet
