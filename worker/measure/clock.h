#ifndef BENCHFLEET_WORKER_MEASURE_CLOCK_H_
#define BENCHFLEET_WORKER_MEASURE_CLOCK_H_

#include <optional>

#include "worker/measure/host_load.h"

namespace benchfleet::worker {

// The time sources the sampling loop reads. Behind an interface so that tests
// drive the loop with a fake clock instead of real time.
class Clock {
 public:
  virtual ~Clock() = default;

  // Monotonic wall time in seconds from an arbitrary origin.
  virtual double WallSeconds() = 0;

  // CPU time consumed so far by all threads of this process, in seconds.
  virtual double ProcessCpuSeconds() = 0;

  // CPU time of the whole host so far (/proc/stat); nullopt where unknown.
  virtual std::optional<HostCpuTimes> HostCpu() { return std::nullopt; }
};

// steady_clock for wall time, CLOCK_PROCESS_CPUTIME_ID for CPU time,
// /proc/stat for the host's.
// The returned object lives for the whole program.
Clock& SystemClock();

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_CLOCK_H_
