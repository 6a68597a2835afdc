#ifndef BENCHFLEET_WORKER_PROCESS_INFO_H_
#define BENCHFLEET_WORKER_PROCESS_INFO_H_

#include <optional>
#include <string>
#include <vector>

namespace benchfleet::worker {

// Resident set size of this process in MiB (from /proc/self/statm);
// nullopt when /proc is unreadable.
std::optional<double> ResidentSetMiB();

// CPU ids this process may run on (sched_getaffinity), ascending; empty when
// the call fails.
std::vector<int> AllowedCpus();

// Value of environment variable `name`, nullopt when unset.
std::optional<std::string> EnvironmentValue(const char* name);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_PROCESS_INFO_H_
