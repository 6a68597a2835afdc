#include "agent/exit_policy.h"

namespace benchfleet {

std::optional<std::string> ExitPolicy::Due(MonoTime now, bool busy, size_t spooled) const {
  // Not while a job runs or a result waits for its ack: leaving then would lose it.
  if (busy || spooled > 0) return std::nullopt;
  if (!TakesJobs()) {
    return "ran " + std::to_string(jobs_ended_) + " job" + (jobs_ended_ == 1 ? "" : "s") +
           " (--max-jobs)";
  }
  if (options_.when_idle && now - last_active_ >= *options_.when_idle) {
    const auto seconds = std::chrono::duration<double>(*options_.when_idle).count();
    std::string shown = std::to_string(seconds);
    shown.erase(shown.find_last_not_of('0') + 1);  // "30.000000" -> "30."
    if (shown.back() == '.') shown.pop_back();
    return "idle for " + shown + " s (--exit-when-idle)";
  }
  return std::nullopt;
}

}  // namespace benchfleet
