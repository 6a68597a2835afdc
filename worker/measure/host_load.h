#ifndef BENCHFLEET_WORKER_MEASURE_HOST_LOAD_H_
#define BENCHFLEET_WORKER_MEASURE_HOST_LOAD_H_

// How busy the rest of the host was while a job was timed: the reason a
// result is noisy is usually someone else. Torch-free; the parser takes the
// text of /proc/stat so that tests can feed it any host.

#include <optional>
#include <string>

#include "common/host_quiet.h"

namespace benchfleet::worker {

// The thresholds of a disturbed host: kDisturbedBusyCpus, kDisturbedStealFraction
// (common/host_quiet.h), the agent's check before timing uses the same.

// The aggregate "cpu" line of /proc/stat, in seconds summed over all CPUs.
struct HostCpuTimes {
  double busy_s = 0;   // user + nice + system + irq + softirq (guest is inside user)
  double idle_s = 0;   // idle + iowait
  double steal_s = 0;  // time the hypervisor ran something else on our CPUs
  double total_s = 0;  // busy + idle + steal
};

// Parses /proc/stat's first "cpu " line; `ticks_per_second` is
// sysconf(_SC_CLK_TCK) (USER_HZ). nullopt when the line is missing or has
// fewer than the 4 fields every kernel reports; older kernels' missing
// iowait/irq/softirq/steal count as 0.
std::optional<HostCpuTimes> ParseProcStat(const std::string& text, double ticks_per_second);

// Reads /proc/stat now; nullopt when it cannot be read or parsed.
std::optional<HostCpuTimes> ReadHostCpuTimes();

// What the rest of the host did during a region of `wall_s` seconds in which
// this process used `own_cpu_s` of CPU time.
struct HostLoad {
  double busy_cpus = 0;       // (busy CPU time of the host - own_cpu_s) / wall_s, >= 0
  double steal_fraction = 0;  // steal / total CPU time of the host
  bool disturbed = false;     // busy_cpus > kDisturbedBusyCpus or steal > kDisturbedStealFraction
};

// The load between two readings; nullopt when wall_s <= 0 or the readings
// go backwards.
std::optional<HostLoad> ComputeHostLoad(const HostCpuTimes& before, const HostCpuTimes& after,
                                        double own_cpu_s, double wall_s);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_HOST_LOAD_H_
