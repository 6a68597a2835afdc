// The host's pace: a fixed small reference measurement the agent runs on a job's CPUs
// just before each of its worker processes starts (after the host check) and again just
// after it ended, so that the reference is interleaved with the sweep's jobs as closely
// as their processes are and brackets each of them. Its time goes with the result
// (`host_pace`, schemas/worker.md; column host_pace_ms), and `compare` and the regression
// judge put a change of a median down to the host only when the host's pace moved beyond
// its own noise and far enough to explain it (docs/regressions.md, Host pace).
//
// The reference is the same work on every host and every night: a 64 x 64 x 64 fp32
// matrix product in plain C++ (no LibTorch, no BLAS, so that neither a library's
// upgrade nor its threading moves it), one thread, on each of the job's CPUs in turn,
// on matrices at fixed offsets of one page-aligned block, so that a fresh agent process
// measures what the last one did. Its time is the mean over the whole run, not a median:
// a competing process, steal and a lower clock all lengthen it, as they lengthen a job.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace benchfleet {

// Products per CPU; each takes about 0.03 ms on a current core, so one reading costs
// some 15-20 ms per CPU.
inline constexpr int kHostPaceReps = 500;
// CPUs measured at most (a wide job's first ones).
inline constexpr size_t kHostPaceMaxCpus = 8;

struct HostPace {
  double ms = 0;         // the process's pace: the geometric mean of before_ms and after_ms
  double before_ms = 0;  // mean time of one product over the CPUs, before
  std::optional<double> after_ms;    // the same after the worker ended (MeasureHostPaceAfter)
  std::vector<int> cpus;             // where it ran (empty: where the agent runs)
  std::vector<double> cpu_ms;        // per CPU before, in the order of `cpus`
  std::vector<double> after_cpu_ms;  // per CPU after
  nlohmann::json ToJson() const;
};

// Runs the reference on each of `cpus` (the calling thread pinned to one at a time, its
// own affinity restored after), or, where `cpus` is empty or pinning fails, where the
// calling thread may run: the reading before a worker starts.
HostPace MeasureHostPace(const std::vector<int>& cpus);
// The reading after the worker ended, on the same CPUs; `ms` becomes the geometric mean
// of both.
void MeasureHostPaceAfter(HostPace* pace);

// The reference once on each of `cpus` in turn (at most kHostPaceMaxCpus; those that
// cannot be pinned to are left out, and `measured` says which were), or once where the
// calling thread runs when none can be: ms per product.
std::vector<double> RunOnEach(const std::vector<int>& cpus, std::vector<int>* measured);

}  // namespace benchfleet
