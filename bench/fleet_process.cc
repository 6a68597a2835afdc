#include "bench/fleet_process.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/files.h"

namespace benchfleet::fleet_load {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Status CoordinatorProcess::Start(const std::vector<std::string>& argv, const std::string& log,
                                 const std::string& ready_file) {
  ProcessOptions options;
  options.argv = argv;
  options.stdout_path = log;
  options.stderr_path = log;
  options.append = true;
  auto started = Subprocess::Start(options);
  if (!started.ok()) return started.status();
  process_ = std::move(started).value();
  const auto deadline = Clock::now() + kCoordinatorStartTimeout;
  while (!std::filesystem::exists(ready_file)) {
    if (process_.Poll().has_value())
      return Unavailable("the coordinator exited at start; see " + log);
    if (Clock::now() > deadline)
      return DeadlineExceeded("the coordinator wrote no ready file; see " + log);
    usleep(10000);  // polling a file: no descriptor to wait on
  }
  ready_ = nlohmann::json::parse(ReadFile(ready_file), nullptr, false);
  if (!ready_.is_object() || !ready_.contains("agents") || !ready_.contains("clients")) {
    return Internal("unreadable ready file " + ready_file);
  }
  return Status::Ok();
}

int CoordinatorProcess::Stop() {
  auto exit = process_.Stop(kCoordinatorStopGrace);
  return exit ? exit->wait_status : -1;
}

std::string ReadFile(const std::string& path) {
  auto text = ReadWholeFile(path);
  return text.ok() ? std::move(text).value() : std::string();
}

// utime + stime of `pid` in seconds (/proc/<pid>/stat fields 14 and 15), or -1.
double ProcessCpuSeconds(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::vector<std::string> tokens;
  for (std::string token; fields >> token;) tokens.push_back(token);
  if (tokens.size() < 13) return -1;  // tokens[0] is field 3 (state)
  double ticks = std::stod(tokens[11]) + std::stod(tokens[12]);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// VmHWM of `pid` in MiB, or -1.
double PeakRssMb(pid_t pid) {
  std::istringstream status(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// One TCP connection per agent: raise the descriptor limit as far as allowed.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The coordinator as a child process, its output in `log`.
}  // namespace benchfleet::fleet_load
