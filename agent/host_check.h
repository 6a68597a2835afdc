// The host check before timing, as pyperf's `system show` does it: what the kernel says
// of the CPUs a job is about to run on, and whether anything else is using the host.
// The agent takes a reading when a job is offered and another a moment later, just
// before it starts the worker (agent/agent.cc); the check goes with the result
// (`host_check`, schemas/worker.md) and, as the job asks (`host_check`: record, wait or
// refuse), the job waits for a quiet host or is refused on a busy one.
//
// A file the kernel does not have (a VM has no cpufreq, most have no thermal counters)
// is "unknown", and a check with an unknown item is never "ok".
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace benchfleet {

// One reading of /proc/stat, per CPU (-1: the "cpu" line of the whole host), in ticks.
struct CpuTicks {
  int64_t busy = 0;  // user + nice + system + irq + softirq
  int64_t idle = 0;  // idle + iowait
  int64_t steal = 0;
  int64_t total() const { return busy + idle + steal; }
};
std::map<int, CpuTicks> ParseCpuTicks(const std::string& proc_stat);

struct HostReading {
  std::map<int, CpuTicks> ticks;  // empty when /proc/stat could not be read
};

// What the check found. `state`: "busy" (something else ran: other processes, the
// hypervisor's steal, a busy SMT sibling of a job CPU), else "warn" (a governor other
// than performance, turbo boost on, thermal throttling seen), else "unknown" (a file
// missing: never "ok" on a host that cannot say), else "ok".
struct HostCheck {
  std::string state = "unknown";
  nlohmann::json facts = nlohmann::json::object();  // the result's host_check
  bool busy() const { return state == "busy"; }
};

class HostChecker {
 public:
  // `root`: "/" on a host; a test's directory with proc/ and sys/ under it.
  explicit HostChecker(std::string root = "/") : root_(std::move(root)) {}

  HostReading Read() const;
  // The check of the CPUs `job_cpus` between two readings `wall_s` seconds apart, in
  // which nothing of the agent's ran.
  HostCheck Judge(const HostReading& before, const HostReading& after, double wall_s,
                  const std::vector<int>& job_cpus) const;

 private:
  std::optional<std::string> Text(const std::string& path) const;
  std::string root_;
};

// The job's `host_check` (schemas/worker.md): "record" (the default), "wait" (a busy host
// is waited on, at most kHostCheckMaxWaitS, then the job runs, flagged) or "refuse" (a
// busy host fails the job with the check's reasons).
inline constexpr double kHostCheckMaxWaitS = 60;
// The readings of one check lie this far apart.
inline constexpr int kHostCheckWindowMs = 200;

}  // namespace benchfleet
