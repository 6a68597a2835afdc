#include "agent/host_check.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "common/cpu_list.h"
#include "common/files.h"
#include "common/host_quiet.h"

namespace benchfleet {
namespace {

using nlohmann::json;

std::string Trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

double Round(double value, double unit) { return std::round(value / unit) * unit; }

}  // namespace

std::map<int, CpuTicks> ParseCpuTicks(const std::string& proc_stat) {
  std::map<int, CpuTicks> out;
  std::istringstream lines(proc_stat);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu", 0) != 0) continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    int cpu = -1;
    if (name.size() > 3) {
      const std::string digits = name.substr(3);
      if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 6)
        continue;
      cpu = std::stoi(digits);
    }
    // user nice system idle iowait irq softirq steal (guest is inside user)
    int64_t v[8] = {};
    int read = 0;
    while (read < 8 && fields >> v[read]) ++read;
    if (read < 4) continue;
    out[cpu] = CpuTicks{v[0] + v[1] + v[2] + v[5] + v[6], v[3] + v[4], v[7]};
  }
  return out;
}

std::optional<std::string> HostChecker::Text(const std::string& path) const {
  auto text = ReadWholeFile(root_ + (root_.empty() || root_.back() == '/' ? "" : "/") + path);
  if (!text.ok()) return std::nullopt;
  return Trimmed(*text);
}

HostReading HostChecker::Read() const {
  HostReading reading;
  if (auto stat = Text("proc/stat")) reading.ticks = ParseCpuTicks(*stat);
  return reading;
}

HostCheck HostChecker::Judge(const HostReading& before, const HostReading& after, double wall_s,
                             const std::vector<int>& job_cpus) const {
  HostCheck check;
  json& f = check.facts;
  std::vector<std::string> busy, warn, unknown;

  // The governor of each job CPU, and boost: the host's own clock policy.
  std::set<std::string> governors;
  for (int cpu : job_cpus) {
    auto governor =
        Text("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor");
    governors.insert(governor ? *governor : "");
  }
  if (governors.empty() || governors.count("")) {
    f["governor"] = "unknown";
    unknown.push_back("no cpufreq governor to read");
  } else {
    std::string joined;
    for (const std::string& g : governors) joined += (joined.empty() ? "" : ",") + g;
    f["governor"] = joined;
    if (governors != std::set<std::string>{"performance"})
      warn.push_back("governor " + joined + ", not performance");
  }
  if (auto boost = Text("sys/devices/system/cpu/cpufreq/boost")) {
    f["boost"] = *boost == "1" ? "on" : "off";
  } else if (auto no_turbo = Text("sys/devices/system/cpu/intel_pstate/no_turbo")) {
    f["boost"] = *no_turbo == "1" ? "off" : "on";
  } else {
    f["boost"] = "unknown";
    unknown.push_back("no boost setting to read");
  }
  if (f["boost"] == "on")
    warn.push_back("turbo boost on: the clock follows the load and the temperature");

  // Thermal throttling the kernel counted on the job's CPUs (Intel's counters).
  int64_t throttled = 0;
  bool any_counter = false;
  for (int cpu : job_cpus) {
    for (const char* counter : {"core_throttle_count", "package_throttle_count"}) {
      auto text =
          Text("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/thermal_throttle/" + counter);
      if (!text || text->empty() || text->find_first_not_of("0123456789") != std::string::npos)
        continue;
      any_counter = true;
      throttled += std::stoll(*text);
    }
  }
  f["throttle_count"] = any_counter ? json(throttled) : json("unknown");
  if (!any_counter) unknown.push_back("no thermal throttle counters");
  if (throttled > 0)
    warn.push_back("thermal throttling counted " + std::to_string(throttled) + " times since boot");

  // What ran between the readings: the host's busy CPUs, the hypervisor's steal, the
  // job CPUs' SMT siblings.
  const auto host_before = before.ticks.find(-1), host_after = after.ticks.find(-1);
  const double hz = 100;  // USER_HZ: /proc/stat's unit on every Linux architecture
  if (host_before == before.ticks.end() || host_after == after.ticks.end() || !(wall_s > 0) ||
      host_after->second.total() < host_before->second.total()) {
    f["busy_cpus"] = "unknown";
    f["steal_fraction"] = "unknown";
    unknown.push_back("no /proc/stat to read");
  } else {
    const CpuTicks& a = host_before->second;
    const CpuTicks& b = host_after->second;
    const double busy_cpus = std::max(0.0, static_cast<double>(b.busy - a.busy) / hz / wall_s);
    const int64_t total = b.total() - a.total();
    const double steal =
        total > 0 ? static_cast<double>(b.steal - a.steal) / static_cast<double>(total) : 0;
    f["busy_cpus"] = Round(busy_cpus, 0.01);
    f["steal_fraction"] = Round(steal, 0.001);
    if (busy_cpus > kDisturbedBusyCpus)
      busy.push_back("other processes kept " + f["busy_cpus"].dump() + " CPUs busy");
    if (steal > kDisturbedStealFraction)
      busy.push_back("the hypervisor took " + f["steal_fraction"].dump() + " of the CPU time");
  }
  json siblings = json::object();
  bool sibling_files = !job_cpus.empty();
  for (int cpu : job_cpus) {
    auto list =
        Text("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
    auto parsed = list ? ParseCpuList(*list) : StatusOr<std::vector<int>>(NotFound(""));
    if (!parsed.ok()) {
      sibling_files = false;
      continue;
    }
    for (int sibling : *parsed) {
      if (std::find(job_cpus.begin(), job_cpus.end(), sibling) != job_cpus.end()) continue;
      const auto sb = before.ticks.find(sibling), sa = after.ticks.find(sibling);
      if (sb == before.ticks.end() || sa == after.ticks.end()) continue;
      const double fraction =
          std::max(0.0, static_cast<double>(sa->second.busy - sb->second.busy) / hz / wall_s);
      siblings[std::to_string(sibling)] = Round(fraction, 0.01);
      if (fraction > kBusySiblingFraction) {
        busy.push_back("CPU " + std::to_string(sibling) + ", an SMT sibling of job CPU " +
                       std::to_string(cpu) + ", was " + siblings[std::to_string(sibling)].dump() +
                       " busy");
      }
    }
  }
  f["smt_siblings_busy"] = sibling_files ? siblings : json("unknown");
  if (!sibling_files) unknown.push_back("no SMT topology to read");

  json reasons = json::array();
  for (const auto* list : {&busy, &warn, &unknown}) {
    for (const std::string& reason : *list) reasons.push_back(reason);
  }
  check.state = !busy.empty()      ? "busy"
                : !warn.empty()    ? "warn"
                : !unknown.empty() ? "unknown"
                                   : "ok";
  f["state"] = check.state;
  f["reasons"] = std::move(reasons);
  return check;
}

}  // namespace benchfleet
