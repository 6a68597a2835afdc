#ifndef BENCHFLEET_WORKER_HOST_PROCESS_INFO_H_
#define BENCHFLEET_WORKER_HOST_PROCESS_INFO_H_

#include <optional>
#include <string>
#include <vector>

namespace benchfleet::worker {

// Resident set size of this process in MiB (from /proc/self/statm);
// nullopt when /proc is unreadable.
std::optional<double> ResidentSetMiB();

// Seconds since this process was created (its fork, so a re-exec at start-up
// counts), from /proc/self/stat's start time against CLOCK_BOOTTIME: 10 ms
// resolution (clock ticks). nullopt when /proc is unreadable.
std::optional<double> ProcessAgeSeconds();

// CPU ids this process may run on (sched_getaffinity), ascending; empty when
// the call fails.
std::vector<int> AllowedCpus();

// Value of environment variable `name`, nullopt when unset.
std::optional<std::string> EnvironmentValue(const char* name);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_HOST_PROCESS_INFO_H_
