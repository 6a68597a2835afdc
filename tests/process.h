// Test support: start real benchfleet programs as child processes, wait on conditions
// with deadlines (never fixed sleeps), and stop them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace benchfleet::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& other) noexcept = default;
  // The process is killed if it still runs (Subprocess's destructor).

  // Starts argv[0] with stdout and stderr appended to `log_path`.
  bool Start(const std::vector<std::string>& argv, const std::string& log_path);
  pid_t pid() const { return process_.pid(); }
  bool running();
  void Signal(int sig);
  // Waits for the process to end; returns its wait status, or -1 past the deadline.
  int Wait(std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL if it has not ended within `grace`; returns the wait status.
  int Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(10000));
  const std::string& log_path() const { return log_; }

 private:
  Subprocess process_;
  std::string log_;
};

// Polls `condition` every 20 ms until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// A command run by RunCommand that has not ended by then is killed: no test waits on
// a hung CLI forever.
constexpr std::chrono::milliseconds kCommandTimeout{600000};

// Runs a command to completion, capturing stdout and stderr; returns the exit code
// (128 + the signal when one ended it, -1 when it was killed at kCommandTimeout).
int RunCommand(const std::vector<std::string>& argv, std::string* out, std::string* err);

std::string ReadFile(const std::string& path);

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace benchfleet::testing
