#include "agent/worker_probe.h"

#include <unistd.h>

#include "common/subprocess.h"

namespace benchfleet {
namespace {

// Bytes of the probe's stderr quoted in an error: its last lines say what went wrong.
constexpr size_t kProbeStderrTailBytes = 2048;
// The probe prints one small JSON object; more than this is not a probe's answer.
constexpr size_t kProbeMaxOutputBytes = 1024 * 1024;

// "worker <what is wrong>; ...": what the agent's refusal to start says.
Status Refusal(const std::string& what) {
  return FailedPrecondition("worker " + what +
                            "; this agent could run no job, so it does not start "
                            "(fix the worker or point --worker at one)");
}

Status ProbeFailed(const std::string& worker_path, const std::string& why) {
  return Refusal(worker_path + " " + why);
}

std::string Tail(const std::string& text) {
  std::string tail = text.size() > kProbeStderrTailBytes
                         ? "..." + text.substr(text.size() - kProbeStderrTailBytes)
                         : text;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

}  // namespace

StatusOr<nlohmann::json> ProbeWorker(const std::string& worker_path,
                                     std::chrono::milliseconds timeout) {
  if (access(worker_path.c_str(), F_OK) != 0) return ProbeFailed(worker_path, "does not exist");
  if (access(worker_path.c_str(), X_OK) != 0) return ProbeFailed(worker_path, "is not executable");

  ProcessOptions options;
  options.argv = {worker_path, "--probe"};
  options.die_with_parent = true;
  auto run = RunCommand(options, timeout, kProbeMaxOutputBytes);
  // "<path> cannot be executed: <the system's reason>"
  if (!run.ok()) return Refusal(run.status().message());
  if (run->timed_out) {
    return ProbeFailed(worker_path, "--probe did not answer within " +
                                        std::to_string(timeout.count() / 1000) + " s");
  }
  const std::string stderr_tail = run->err.empty() ? "" : ": " + Tail(run->err);
  if (!run->exit.exited_cleanly()) {
    return ProbeFailed(worker_path, "--probe " + run->exit.Describe() + stderr_tail);
  }
  const std::string& output = run->out;
  auto probe = nlohmann::json::parse(output, nullptr, false);
  if (probe.is_discarded() || !probe.is_object()) {
    return ProbeFailed(worker_path, "--probe printed no JSON object" + stderr_tail);
  }
  return probe;
}

}  // namespace benchfleet
