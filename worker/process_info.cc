#include "worker/process_info.h"

#include "common/cpu_list.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace benchfleet::worker {

std::optional<double> ResidentSetMiB() {
  // statm: total pages, then resident pages.
  std::ifstream statm("/proc/self/statm");
  long total_pages = 0;
  long resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return std::nullopt;
  constexpr double kBytesPerMiB = 1024.0 * 1024.0;
  return static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         kBytesPerMiB;
}

std::vector<int> AllowedCpus() { return benchfleet::AllowedCpus(); }

std::optional<std::string> EnvironmentValue(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace benchfleet::worker
