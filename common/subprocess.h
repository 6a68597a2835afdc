// Child processes: the one place benchfleet forks and execs. The agent runs workers
// and probes with it, and the tests and benchmarks start daemons and the CLI with it.
// Everything the child needs is prepared before fork(); between fork and exec the
// child makes only async-signal-safe system calls. A failed exec is reported to the
// parent as a Status (through a close-on-exec pipe), never as a silent exit code 127.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

struct ProcessOptions {
  // argv[0] is the program's path (no PATH search).
  std::vector<std::string> argv;
  // "NAME=value" entries; unset: the parent's environment.
  std::optional<std::vector<std::string>> environment;
  // Where stdout and stderr go: a file (created), or the parent's when empty. The same
  // path for both shares one descriptor, so their lines interleave in order.
  std::string stdout_path;
  std::string stderr_path;
  bool append = false;  // append to the files rather than truncate them
  // stdin is /dev/null, so a child never waits on a terminal.
  // Its own process group (Signal reaches everything it started), as a worker's.
  bool own_process_group = false;
  // SIGKILL when the parent dies (kill -9 of an agent must not leave its workers).
  bool die_with_parent = false;
  // CPUs it may run on; empty: the parent's affinity.
  std::vector<int> cpus;
  // When exec fails: Start returns the error (empty), or, when set, the child writes
  // this line to its stderr and exits with code 127 as a shell would, so that the
  // failure reaches whoever reads its exit and its log (an agent's worker: a failed job
  // with its log, like any other worker failure).
  std::string exec_failure_line;
};

// How a child ended: its wait status and resource use (peak RSS, CPU time).
struct ProcessExit {
  int wait_status = 0;
  rusage usage{};
  bool exited_cleanly() const;  // exited with code 0
  // The shell's convention: the exit code, or 128 + the signal that ended it.
  int code() const;
  // "exited with code 3", "killed by signal 9 (Killed)".
  std::string Describe() const;
};

class Subprocess {
 public:
  // Starts it. Unavailable when its files cannot be opened or fork fails;
  // FailedPrecondition when exec fails: "<argv[0]> cannot be executed: <the system's
  // reason>".
  [[nodiscard]] static StatusOr<Subprocess> Start(const ProcessOptions& options);
  Subprocess() = default;
  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // Kills (SIGKILL, its group too when it has one) and reaps a child still running.
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // Started and not yet reaped.
  bool running() const { return pid_ > 0; }
  // Reaps it if it has ended; nullopt while it runs (or once reaped before).
  std::optional<ProcessExit> Poll();
  // Waits up to `timeout` for it to end; nullopt past the deadline (it still runs).
  std::optional<ProcessExit> Wait(std::chrono::milliseconds timeout);
  // Blocks until it ends.
  std::optional<ProcessExit> WaitForever();
  // Sends `sig` to it, or to its whole group when it has one of its own. The group
  // outlives the child that led it, so this reaches what it left behind too.
  void Signal(int sig);
  // SIGTERM, then SIGKILL when it has not ended within `grace`.
  std::optional<ProcessExit> Stop(std::chrono::milliseconds grace);

 private:
  pid_t pid_ = -1;
  pid_t group_ = -1;  // its process group when it has its own, kept after it is reaped
};

// The output of a command run to its end.
struct CommandOutput {
  ProcessExit exit;
  std::string out;  // at most `max_output_bytes` of each, the start kept
  std::string err;
  bool timed_out = false;  // killed at the deadline
};

// Runs `options.argv` to its end (or kills it past `timeout`), capturing stdout and
// stderr through pipes (options' paths are ignored).
[[nodiscard]] StatusOr<CommandOutput> RunCommand(ProcessOptions options,
                                                 std::chrono::milliseconds timeout,
                                                 size_t max_output_bytes = size_t{64} << 20);

}  // namespace benchfleet
