// bench_fleet_load: the coordinator as a child process, and what /proc and getrusage
// say about a process's CPU time and memory.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/subprocess.h"

namespace benchfleet::fleet_load {

// How long the coordinator may take to write its ready file, and to exit on SIGTERM.
constexpr auto kCoordinatorStartTimeout = std::chrono::seconds(30);
constexpr auto kCoordinatorStopGrace = std::chrono::seconds(10);

// A benchfleet-coordinator child process, its output appended to a log file. Stopped
// (SIGTERM, then SIGKILL) by the destructor.
class CoordinatorProcess {
 public:
  ~CoordinatorProcess() { Stop(); }

  // Starts it and waits for its ready file; an error naming why if it is not serving.
  [[nodiscard]] Status Start(const std::vector<std::string>& argv, const std::string& log,
                             const std::string& ready_file);
  // SIGTERM, SIGKILL after kCoordinatorStopGrace; the exit status or -1.
  int Stop();

  pid_t pid() const { return process_.pid(); }
  std::string agents_endpoint() const { return ready_["agents"]; }
  std::string clients_endpoint() const { return ready_["clients"]; }

 private:
  Subprocess process_;
  nlohmann::json ready_;
};

// utime + stime of `pid` in seconds (/proc/<pid>/stat fields 14 and 15), or -1.
double ProcessCpuSeconds(pid_t pid);
// VmHWM of `pid` in MiB, or -1.
double PeakRssMb(pid_t pid);
// This process's user + system CPU seconds (getrusage).
double OwnCpuSeconds();
// One TCP connection per agent: raises the descriptor limit as far as allowed.
void RaiseDescriptorLimit();
std::string ReadFile(const std::string& path);

}  // namespace benchfleet::fleet_load
