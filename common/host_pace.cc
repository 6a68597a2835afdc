#include "common/host_pace.h"

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

}  // namespace benchfleet
