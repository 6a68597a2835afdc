#include "worker/host/omp_wait_policy.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/job_spec.h"

extern char** environ;

namespace benchfleet::worker {
namespace {

constexpr char kVariable[] = "OMP_WAIT_POLICY";
// Set in the environment of the re-executed process, so that it never loops.
constexpr char kReexecMarker[] = "BENCHFLEET_WORKER_WAIT_POLICY_REEXEC";

}  // namespace

std::string OmpWaitPolicyInEffect() {
  const char* value = std::getenv(kVariable);
  if (value == nullptr) return "default";
  std::string policy = value;
  std::transform(policy.begin(), policy.end(), policy.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return policy;
}

bool OmpWaitPolicyMatches(const std::string& policy) { return OmpWaitPolicyInEffect() == policy; }

std::optional<std::string> ReexecUnderWaitPolicy(const std::string& policy, char** argv) {
  if (OmpWaitPolicyMatches(policy)) return std::nullopt;
  if (std::getenv(kReexecMarker) != nullptr) {
    return std::string("OMP_WAIT_POLICY is still not the job's after a re-execution");
  }
  std::vector<std::string> entries;
  const std::string prefix = std::string(kVariable) + "=";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) entries.emplace_back(*e);
  }
  if (const std::optional<std::string> value = OmpWaitPolicyVariable(policy)) {
    entries.push_back(prefix + *value);
  }
  entries.push_back(std::string(kReexecMarker) + "=1");
  std::vector<char*> env;
  for (std::string& entry : entries) env.push_back(entry.data());
  env.push_back(nullptr);
  execve("/proc/self/exe", argv, env.data());
  return std::string("cannot re-execute /proc/self/exe: ") + std::strerror(errno);
}

}  // namespace benchfleet::worker
