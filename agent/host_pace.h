// The host's pace: a fixed small reference measurement the agent runs on a job's CPUs
// just before each of its worker processes starts (after the host check), so that the
// reference is interleaved with the sweep's jobs as closely as their processes are. Its
// time goes with the result (`host_pace`, schemas/worker.md; column host_pace_ms), and
// `compare` and the regression judge divide a change of the host's pace out of a
// change of a median before they call it the code's (docs/regressions.md, Host pace).
//
// The reference is the same work on every host and every night: a 64 x 64 x 64 fp32
// matrix product in plain C++ (no LibTorch, no BLAS, so that neither a library's
// upgrade nor its threading moves it), one thread, on each of the job's CPUs in turn.
// Its time is the mean over the whole run, not a median: a competing process, steal
// and a lower clock all lengthen it, as they lengthen a job.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace benchfleet {

// Products per CPU; each takes about 0.04 ms on a current core, so the reference costs
// a job's process some 20 ms per CPU (a run of 5 ms spread 10% from one job to the next
// on a 2-vCPU guest).
inline constexpr int kHostPaceReps = 500;
// CPUs measured at most (a wide job's first ones).
inline constexpr size_t kHostPaceMaxCpus = 8;

struct HostPace {
  double ms = 0;               // mean time of one product over the CPUs measured
  std::vector<int> cpus;       // where it ran (empty: where the agent runs)
  std::vector<double> cpu_ms;  // per CPU, in the order of `cpus`
  nlohmann::json ToJson() const;
};

// Runs the reference on each of `cpus` (the calling thread pinned to one at a time, its
// own affinity restored after), or, where `cpus` is empty or pinning fails, where the
// calling thread may run.
HostPace MeasureHostPace(const std::vector<int>& cpus);

}  // namespace benchfleet
