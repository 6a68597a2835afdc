#include "worker/omp_wait_policy.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace benchfleet::worker {
namespace {

constexpr char kVariable[] = "OMP_WAIT_POLICY=";

// Runs from .preinit_array: after the dynamic loader mapped every library but
// before any of their constructors (libgomp's included). Only async-signal-
// safe calls and malloc are used, since libc is not fully initialised yet.
void ReexecWithDefaultWaitPolicy(int /*argc*/, char** argv, char** envp) {
  if (argv == nullptr || envp == nullptr) return;
  std::size_t count = 0;
  for (; envp[count] != nullptr; ++count) {
    if (std::strncmp(envp[count], kVariable, sizeof(kVariable) - 1) == 0) return;
  }
  static char assignment[sizeof(kVariable) + 16];
  std::strcpy(assignment, kVariable);
  std::strcat(assignment, kDefaultOmpWaitPolicy);
  auto** env = static_cast<char**>(std::malloc((count + 2) * sizeof(char*)));
  if (env == nullptr) return;
  std::memcpy(env, envp, count * sizeof(char*));
  env[count] = assignment;
  env[count + 1] = nullptr;
  execve("/proc/self/exe", argv, env);
  // execve failed (no /proc?): carry on under the runtime's default policy,
  // which OmpWaitPolicy() then reports as unset.
  std::free(env);
}

__attribute__((used, section(".preinit_array"))) void (*const kReexecHook)(int, char**, char**) =
    &ReexecWithDefaultWaitPolicy;

}  // namespace

std::optional<std::string> OmpWaitPolicy() {
  const char* value = std::getenv("OMP_WAIT_POLICY");
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace benchfleet::worker
