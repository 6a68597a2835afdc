// The serving scenarios of a job's `scenario` (schemas/worker.md, Scenarios), after
// MLPerf LoadGen: single_stream (one query at a time, batch 1) and server (queries
// arriving as a seeded Poisson process, grouped by a dynamic batcher). Torch-free: the
// model is a function that runs one batch, and time comes from a ServingClock, so tests
// drive the arrivals, the batcher's decisions and the latency accounting with a fake
// model on a virtual clock, deterministically.
#ifndef BENCHFLEET_WORKER_MEASURE_SERVING_H_
#define BENCHFLEET_WORKER_MEASURE_SERVING_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/job_spec.h"

namespace benchfleet::worker {

// Time for the serving loop: seconds from an arbitrary origin, and a wait until a time.
class ServingClock {
 public:
  virtual ~ServingClock() = default;
  virtual double Now() = 0;
  virtual void SleepUntil(double t) = 0;
};
// steady_clock, and std::this_thread::sleep_until.
ServingClock& SystemServingClock();

// Runs one batch of `size` queries and returns when it is done.
using RunBatch = std::function<void(std::int64_t size)>;

// Arrival times (s, from 0) of a Poisson process at `qps`: exponential inter-arrivals
// from std::mt19937_64(seed), until at least `min_queries` have arrived and the last
// arrives at or after `min_duration_s` (LoadGen issues queries until both are met).
std::vector<double> PoissonArrivals(double qps, std::uint64_t seed, double min_duration_s,
                                    std::int64_t min_queries);

// p-th percentile (p in [0, 100]) of `values`, linear between the closest ranks.
double Percentile(std::vector<double> values, double p);

// How close the SLO search brackets the highest rate (a share of it), and how far a
// server run's achieved rate may fall below the rate its arrivals offered.
inline constexpr double kSloSearchTolerance = 0.05;

// One run of a scenario.
struct ServingRun {
  double target_qps = 0;       // server: the arrival rate asked for; 0 for single_stream
  std::int64_t queries = 0;    // issued
  std::int64_t completed = 0;  // served before max_duration_s
  std::int64_t batches = 0;
  double duration_s = 0;    // first arrival to last completion
  double achieved_qps = 0;  // completed / duration_s
  // server: queries / (last arrival - first arrival), the rate the seeded arrivals
  // actually offered (0 for single_stream or one query)
  double offered_qps = 0;
  // server: achieved_qps within kSloSearchTolerance of offered_qps. A run that fell
  // behind its arrivals was past the model's capacity: its backlog, and so its p99, grow
  // with the run's length, and a short run's p99 says nothing about the rate.
  bool kept_up = true;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0, max_ms = 0;  // from arrival
  double mean_batch = 0;
  bool valid = false;
  std::string invalid_reason;  // empty when valid
  nlohmann::json Json() const;
};

// The server scenario: the queries of PoissonArrivals(spec.qps, seed, ...) are issued
// at their arrival times to a dynamic batcher that runs one batch at a time: when idle
// it runs max_batch queries as soon as that many wait, else the waiting ones once the
// oldest has waited max_wait_ms (or at once when max_wait_ms is 0). Each query's
// latency runs from its arrival to its batch's completion, queueing included. The run
// stops issuing batches at max_duration_s; a run that served fewer than min_queries,
// left queries unserved or lasted less than min_duration_s is invalid.
ServingRun RunServer(const ServerScenario& spec, double qps, std::uint64_t seed,
                     const RunBatch& run_batch, ServingClock& clock);

// single_stream: one query at a time at batch 1, the next issued when the last is done,
// until min_queries are done and min_duration_s has passed (or max_duration_s).
ServingRun RunSingleStream(const ServerScenario& limits, const RunBatch& run_batch,
                           ServingClock& clock);

// The SLO search of a server scenario with slo_p99_ms: server runs at rates between
// one whose p99 meets the SLO and one whose does not, bisected; an invalid run, or one
// that did not keep up with its arrivals, does not meet it.
struct SloSearch {
  double max_qps = 0;              // the highest rate run whose p99 stayed within the SLO; 0: none
  std::vector<ServingRun> probes;  // in the order run
  // The probe run at max_qps (the result's own figures); -1 when none met the SLO.
  int best = -1;
  nlohmann::json Json() const;
};
// Starts at spec.qps, doubles (or halves, not below min_queries / max_duration_s, where
// no run can be valid) until the rates bracket the SLO, then bisects
// until the bracket is within kSloSearchTolerance of its top or kMaxSloProbes
// (common/job_spec.h) ran.
SloSearch SearchMaxQps(const ServerScenario& spec, std::uint64_t seed, const RunBatch& run_batch,
                       ServingClock& clock);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MEASURE_SERVING_H_
