// SweepProgress: when each running sweep should be done, from the rate of its last
// results (docs/scheduling.md, Progress), for the ETA `status` gives. In memory only: a
// restarted coordinator has no rate until results come again, and says so (null).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>

#include "common/clock.h"
#include "common/protocol.h"

namespace benchfleet {

class SweepProgress {
 public:
  explicit SweepProgress(const MonotonicClock& clock) : clock_(clock) {}
  // A result of `sweep_id` was stored now.
  void ResultArrived(int64_t sweep_id);
  // Seconds until the sweep's `remaining` jobs are done at its recent rate; null when
  // too few results came recently to say.
  std::optional<double> EtaSeconds(int64_t sweep_id, int64_t remaining) const;

 private:
  const MonotonicClock& clock_;
  // When each running sweep's last results came in (at most kEtaResults of them, within
  // kEtaWindow).
  std::unordered_map<int64_t, std::deque<MonoTime>> results_at_;
};

}  // namespace benchfleet
