#include "worker/measure/host_load.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/files.h"

namespace benchfleet::worker {

std::optional<HostCpuTimes> ParseProcStat(const std::string& text, double ticks_per_second) {
  if (ticks_per_second <= 0) return std::nullopt;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    // user nice system idle iowait irq softirq steal guest guest_nice
    std::vector<double> ticks;
    for (double value = 0; ticks.size() < 8 && fields >> value;) {
      if (value < 0) return std::nullopt;
      ticks.push_back(value);
    }
    if (ticks.size() < 4) return std::nullopt;
    ticks.resize(8, 0);
    HostCpuTimes times;
    times.busy_s = (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / ticks_per_second;
    times.idle_s = (ticks[3] + ticks[4]) / ticks_per_second;
    times.steal_s = ticks[7] / ticks_per_second;
    times.total_s = times.busy_s + times.idle_s + times.steal_s;
    return times;
  }
  return std::nullopt;
}

std::optional<HostCpuTimes> ReadHostCpuTimes() {
  auto text = ReadWholeFile("/proc/stat");
  if (!text.ok()) return std::nullopt;
  return ParseProcStat(*text, static_cast<double>(sysconf(_SC_CLK_TCK)));
}

std::optional<HostLoad> ComputeHostLoad(const HostCpuTimes& before, const HostCpuTimes& after,
                                        double own_cpu_s, double wall_s) {
  const double busy = after.busy_s - before.busy_s;
  const double steal = after.steal_s - before.steal_s;
  const double total = after.total_s - before.total_s;
  if (wall_s <= 0 || busy < 0 || steal < 0 || total < 0) return std::nullopt;
  HostLoad load;
  // /proc/stat counts in ticks (10 ms), our own CPU time to the nanosecond:
  // a quiet host can show slightly less busy time than we used.
  load.busy_cpus = std::max(0.0, busy - own_cpu_s) / wall_s;
  load.steal_fraction = total > 0 ? steal / total : 0;
  load.disturbed =
      load.busy_cpus > kDisturbedBusyCpus || load.steal_fraction > kDisturbedStealFraction;
  return load;
}

}  // namespace benchfleet::worker
