#include "worker/host/process_info.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "common/cpu_list.h"

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

std::optional<double> ProcessAgeSeconds() {
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: fields are
  // counted from the last ')'. starttime is field 22, the 20th after it.
  const std::size_t paren = line.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(paren + 1));
  std::string field;
  constexpr int kStartTimeAfterName = 20;
  for (int i = 0; i < kStartTimeAfterName; ++i) {
    if (!(fields >> field)) return std::nullopt;
  }
  const double ticks = std::strtod(field.c_str(), nullptr);
  timespec now{};
  if (clock_gettime(CLOCK_BOOTTIME, &now) != 0) return std::nullopt;
  const double now_s = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
  return now_s - ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::vector<int> AllowedCpus() { return benchfleet::AllowedCpus(); }

std::optional<std::string> EnvironmentValue(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace benchfleet::worker
