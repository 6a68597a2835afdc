#include "agent/worker_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/clock.h"

namespace benchfleet {
namespace {

// Bytes of the probe's stderr quoted in an error: its last lines say what went wrong.
constexpr size_t kProbeStderrTailBytes = 2048;
// The probe prints one small JSON object; more than this is not a probe's answer.
constexpr size_t kProbeMaxOutputBytes = 1024 * 1024;

Status ProbeFailed(const std::string& worker_path, const std::string& why) {
  return FailedPrecondition("worker " + worker_path + " " + why +
                            "; this agent could run no job, so it does not start "
                            "(fix the worker or point --worker at one)");
}

std::string Tail(const std::string& text) {
  std::string tail = text.size() > kProbeStderrTailBytes
                         ? "..." + text.substr(text.size() - kProbeStderrTailBytes)
                         : text;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

// Reads everything from `fd` (non-blocking) into `*into`; false at end of file.
bool Drain(int fd, std::string* into) {
  char buffer[4096];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      if (into->size() < kProbeMaxOutputBytes) into->append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    return errno == EINTR || errno == EAGAIN;
  }
}

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace

StatusOr<nlohmann::json> ProbeWorker(const std::string& worker_path,
                                     std::chrono::milliseconds timeout) {
  if (access(worker_path.c_str(), F_OK) != 0) return ProbeFailed(worker_path, "does not exist");
  if (access(worker_path.c_str(), X_OK) != 0) return ProbeFailed(worker_path, "is not executable");

  // stdout, stderr, and a close-on-exec pipe that carries errno if exec fails.
  int out[2], err[2], exec_error[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Unavailable(std::string("pipe: ") + std::strerror(errno));
  if (pipe2(err, O_CLOEXEC) != 0) {
    CloseAll({out[0], out[1]});
    return Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  if (pipe2(exec_error, O_CLOEXEC) != 0) {
    CloseAll({out[0], out[1], err[0], err[1]});
    return Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  const char* argv[] = {worker_path.c_str(), "--probe", nullptr};
  pid_t pid = fork();
  if (pid < 0) {
    CloseAll({out[0], out[1], err[0], err[1], exec_error[0], exec_error[1]});
    return Unavailable(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execv(argv[0], const_cast<char* const*>(argv));
    int exec_errno = errno;
    (void)!write(exec_error[1], &exec_errno, sizeof exec_errno);
    _exit(127);
  }
  CloseAll({out[1], err[1], exec_error[1]});

  std::string output, errors;
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  bool out_open = true, err_open = true, timed_out = false;
  const MonoTime deadline = MonoNow() + timeout;
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<Millis>(deadline - MonoNow()).count();
    if (left <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    if (poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
    if (out_open && fds[0].revents != 0) out_open = Drain(out[0], &output);
    if (err_open && fds[1].revents != 0) err_open = Drain(err[0], &errors);
  }
  int exec_errno = 0;
  bool exec_failed = read(exec_error[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  CloseAll({out[0], err[0], exec_error[0]});
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  if (exec_failed) {
    return ProbeFailed(worker_path, std::string("cannot be executed: ") + std::strerror(exec_errno));
  }
  if (timed_out) {
    return ProbeFailed(worker_path, "--probe did not answer within " +
                                        std::to_string(timeout.count() / 1000) + " s");
  }
  const std::string stderr_tail = errors.empty() ? "" : ": " + Tail(errors);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return ProbeFailed(worker_path, "--probe was killed by signal " + std::to_string(sig) + " (" +
                                        strsignal(sig) + ")" + stderr_tail);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return ProbeFailed(worker_path, "--probe exited with code " +
                                        std::to_string(WEXITSTATUS(status)) + stderr_tail);
  }
  auto probe = nlohmann::json::parse(output, nullptr, false);
  if (probe.is_discarded() || !probe.is_object()) {
    return ProbeFailed(worker_path, "--probe printed no JSON object" + stderr_tail);
  }
  return probe;
}

}  // namespace benchfleet
