#include "worker/measure/clock.h"

#include <time.h>

#include <chrono>

namespace benchfleet::worker {
namespace {

class RealClock final : public Clock {
 public:
  double WallSeconds() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  double ProcessCpuSeconds() override {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }

  std::optional<HostCpuTimes> HostCpu() override { return ReadHostCpuTimes(); }
};

}  // namespace

Clock& SystemClock() {
  static RealClock clock;
  return clock;
}

}  // namespace benchfleet::worker
