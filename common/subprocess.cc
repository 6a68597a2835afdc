#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "common/clock.h"

namespace benchfleet {
namespace {

std::string SystemError(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

int OpenOutput(const std::string& path, bool append) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
}

// The child's descriptors, opened by the parent: -1 keeps the parent's.
struct ChildFiles {
  int out = -1;
  int err = -1;
};

// Forks and execs. `files` are the parent's to close afterwards.
StatusOr<pid_t> Spawn(const ProcessOptions& options, ChildFiles files) {
  if (options.argv.empty()) return InvalidArgument("no program to run");
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_copy = options.environment.value_or(std::vector<std::string>{});
  std::vector<char*> envp;
  for (auto& e : env_copy) envp.push_back(e.data());
  envp.push_back(nullptr);
  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  for (int cpu : options.cpus) CPU_SET(cpu, &cpu_set);
  const bool set_env = options.environment.has_value();
  const bool set_cpus = !options.cpus.empty();
  const bool report_in_child = !options.exec_failure_line.empty();
  const std::string failure_line = options.exec_failure_line + "\n";

  // Carries errno from the child when exec fails; closed by a successful exec.
  int exec_error[2];
  if (pipe2(exec_error, O_CLOEXEC) != 0) return Unavailable(SystemError("pipe", errno));
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    CloseAll({exec_error[0], exec_error[1]});
    return Unavailable(SystemError("fork failed", err));
  }
  if (pid == 0) {
    if (options.own_process_group) setpgid(0, 0);
    if (options.die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (set_cpus) sched_setaffinity(0, sizeof cpu_set, &cpu_set);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    if (files.out >= 0) dup2(files.out, STDOUT_FILENO);
    if (files.err >= 0) dup2(files.err, STDERR_FILENO);
    if (set_env) {
      execve(argv[0], argv.data(), envp.data());
    } else {
      execv(argv[0], argv.data());
    }
    const int exec_errno = errno;
    if (report_in_child) {
      (void)!write(STDERR_FILENO, failure_line.data(), failure_line.size());
    } else {
      (void)!write(exec_error[1], &exec_errno, sizeof exec_errno);
    }
    _exit(127);
  }
  // Also from the parent, so that a signal sent right away reaches the group.
  if (options.own_process_group) setpgid(pid, pid);
  close(exec_error[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(exec_error[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  close(exec_error[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return FailedPrecondition(SystemError(options.argv[0] + " cannot be executed", exec_errno));
  }
  return pid;
}

// Reads what `fd` (non-blocking) holds into `*into`, up to `limit`; false at its end.
bool Drain(int fd, std::string* into, size_t limit) {
  char buffer[1 << 14];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      const size_t room = limit > into->size() ? limit - into->size() : 0;
      into->append(buffer, std::min(room, static_cast<size_t>(n)));
      continue;
    }
    if (n == 0) return false;
    return errno == EINTR || errno == EAGAIN;
  }
}

}  // namespace

bool ProcessExit::exited_cleanly() const {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

int ProcessExit::code() const {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

std::string ProcessExit::Describe() const {
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended with wait status " + std::to_string(wait_status);
}

StatusOr<Subprocess> Subprocess::Start(const ProcessOptions& options) {
  ChildFiles files;
  if (!options.stdout_path.empty()) {
    files.out = OpenOutput(options.stdout_path, options.append);
    if (files.out < 0) return Unavailable(SystemError("cannot open " + options.stdout_path, errno));
  }
  if (!options.stderr_path.empty()) {
    if (options.stderr_path == options.stdout_path) {
      files.err = files.out;
    } else {
      files.err = OpenOutput(options.stderr_path, options.append);
      if (files.err < 0) {
        const int err = errno;
        CloseAll({files.out});
        return Unavailable(SystemError("cannot open " + options.stderr_path, err));
      }
    }
  }
  auto pid = Spawn(options, files);
  CloseAll({files.out, files.err == files.out ? -1 : files.err});
  if (!pid.ok()) return pid.status();
  Subprocess process;
  process.pid_ = *pid;
  process.group_ = options.own_process_group ? *pid : -1;
  return process;
}

Subprocess::Subprocess(Subprocess&& other) noexcept : pid_(other.pid_), group_(other.group_) {
  other.pid_ = -1;
  other.group_ = -1;
}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    this->~Subprocess();
    pid_ = other.pid_;
    group_ = other.group_;
    other.pid_ = -1;
    other.group_ = -1;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ <= 0) return;
  Signal(SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::optional<ProcessExit> Subprocess::Poll() {
  if (pid_ <= 0) return std::nullopt;
  ProcessExit exit;
  pid_t done;
  do {
    done = wait4(pid_, &exit.wait_status, WNOHANG, &exit.usage);
  } while (done < 0 && errno == EINTR);
  if (done == 0) return std::nullopt;
  pid_ = -1;
  if (done < 0) {
    // Reaped elsewhere (or never ours): nothing is known of how it ended.
    exit.wait_status = -1;
  }
  return exit;
}

std::optional<ProcessExit> Subprocess::Wait(std::chrono::milliseconds timeout) {
  // No descriptor to wait on for a child (pidfd needs Linux 5.3 and glibc 2.36 wrappers);
  // a short poll keeps a test's wait within a few milliseconds of the child's end.
  const MonoTime deadline = MonoNow() + timeout;
  while (true) {
    if (auto exit = Poll()) return exit;
    if (pid_ <= 0 || MonoNow() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<ProcessExit> Subprocess::WaitForever() {
  if (pid_ <= 0) return std::nullopt;
  ProcessExit exit;
  pid_t done;
  do {
    done = wait4(pid_, &exit.wait_status, 0, &exit.usage);
  } while (done < 0 && errno == EINTR);
  pid_ = -1;
  if (done < 0) exit.wait_status = -1;
  return exit;
}

void Subprocess::Signal(int sig) {
  if (group_ > 0) {
    kill(-group_, sig);
  } else if (pid_ > 0) {
    kill(pid_, sig);
  }
}

std::optional<ProcessExit> Subprocess::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return std::nullopt;
  Signal(SIGTERM);
  if (auto exit = Wait(grace)) return exit;
  Signal(SIGKILL);
  return WaitForever();
}

StatusOr<CommandOutput> RunCommand(ProcessOptions options, std::chrono::milliseconds timeout,
                                   size_t max_output_bytes) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Unavailable(SystemError("pipe", errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    CloseAll({out[0], out[1]});
    return Unavailable(SystemError("pipe", e));
  }
  auto pid = Spawn(options, ChildFiles{out[1], err[1]});
  CloseAll({out[1], err[1]});
  if (!pid.ok()) {
    CloseAll({out[0], err[0]});
    return pid.status();
  }
  CommandOutput result;
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  bool out_open = true, err_open = true;
  const MonoTime deadline = MonoNow() + timeout;
  while (out_open || err_open) {
    const int64_t left = MillisUntil(deadline);
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    if (poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
    if (out_open && fds[0].revents != 0) out_open = Drain(out[0], &result.out, max_output_bytes);
    if (err_open && fds[1].revents != 0) err_open = Drain(err[0], &result.err, max_output_bytes);
  }
  CloseAll({out[0], err[0]});
  // Its output is closed; it may still run (a child that closed its descriptors), so
  // the deadline holds for its end too.
  ProcessExit exit;
  pid_t done;
  while (true) {
    if (result.timed_out) kill(*pid, SIGKILL);
    done = wait4(*pid, &exit.wait_status, result.timed_out ? 0 : WNOHANG, &exit.usage);
    if (done < 0 && errno == EINTR) continue;
    if (done != 0) break;
    if (MillisUntil(deadline) <= 0) {
      result.timed_out = true;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (done < 0) exit.wait_status = -1;
  result.exit = exit;
  return result;
}

}  // namespace benchfleet
