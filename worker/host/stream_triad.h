#ifndef BENCHFLEET_WORKER_HOST_STREAM_TRIAD_H_
#define BENCHFLEET_WORKER_HOST_STREAM_TRIAD_H_

// Sustainable memory bandwidth, measured the way John McCalpin's STREAM
// measures it: the triad a[i] = b[i] + s * c[i] over double arrays much
// larger than the last-level cache, best of several passes. Torch-free.

#include <cstdint>
#include <string>
#include <vector>

namespace benchfleet::worker {

// Bytes one triad element moves by STREAM's convention: read b[i] and c[i],
// write a[i], 8 bytes each. The write-allocate read of a[i] that a cache
// without non-temporal stores also performs is not counted (STREAM does not
// count it either), so hardware traffic can be up to 4/3 of what is reported.
inline constexpr std::int64_t kTriadBytesPerElement = 3 * sizeof(double);

// STREAM's default: 10 passes, the first one not counted.
inline constexpr int kTriadDefaultTimedPasses = 10;

struct TriadOptions {
  std::int64_t array_bytes = 0;                 // size of each of the three arrays
  std::vector<int> cpus;                        // one thread per CPU, pinned to it
  int timed_passes = kTriadDefaultTimedPasses;  // after one untimed pass
};

struct TriadResult {
  double best_gbps = 0;       // kTriadBytesPerElement * elements / best_seconds / 1e9
  double best_seconds = 0;    // fastest timed pass
  std::int64_t elements = 0;  // per array
  int threads = 0;
  bool pinned = false;    // every thread was pinned to its CPU
  bool verified = false;  // every a[i] equals b[i] + s * c[i] after the passes
  std::string error;      // non-empty when nothing was measured
};

// Runs the triad with options.cpus.size() threads, each pinned to its CPU
// and first-touching its own slice of the arrays (so pages land on its NUMA
// node). A pass is timed from a barrier that releases all threads to a
// barrier they all reach, so it includes the slowest thread. Returns
// error set when the arrays cannot be allocated or options are invalid.
TriadResult RunStreamTriad(const TriadOptions& options);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_HOST_STREAM_TRIAD_H_
