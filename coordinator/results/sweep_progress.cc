#include "coordinator/results/sweep_progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace benchfleet {
namespace {

// A sweep's rate is that of its last results: at most this many, within this window
// (an older rate says little of a fleet that changed since).
constexpr size_t kEtaResults = 200;
constexpr auto kEtaWindow = std::chrono::minutes(10);
// Sweeps whose results are remembered, at most: the oldest entries go first.
constexpr size_t kEtaSweeps = 256;

}  // namespace

void SweepProgress::ResultArrived(int64_t sweep_id) {
  if (results_at_.size() >= kEtaSweeps && !results_at_.count(sweep_id)) {
    results_at_.erase(std::min_element(
        results_at_.begin(), results_at_.end(),
        [](const auto& a, const auto& b) { return a.second.back() < b.second.back(); }));
  }
  std::deque<MonoTime>& at = results_at_[sweep_id];
  at.push_back(clock_.Now());
  if (at.size() > kEtaResults) at.pop_front();
}

std::optional<double> SweepProgress::EtaSeconds(int64_t sweep_id, int64_t remaining) const {
  const auto it = results_at_.find(sweep_id);
  if (remaining <= 0 || it == results_at_.end()) return std::nullopt;
  const MonoTime now = clock_.Now();
  // The results within the window, oldest first.
  auto first = it->second.begin();
  while (first != it->second.end() && now - *first > kEtaWindow) ++first;
  const auto results = std::distance(first, it->second.end());
  if (results < 2) return std::nullopt;
  const double span_s = std::chrono::duration<double>(it->second.back() - *first).count();
  if (span_s <= 0) return std::nullopt;
  const double per_s = static_cast<double>(results - 1) / span_s;
  return std::round(static_cast<double>(remaining) / per_s);
}

}  // namespace benchfleet
