#include "worker/measure/serving.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <random>
#include <thread>

namespace benchfleet::worker {
namespace {

using nlohmann::json;

class SteadyServingClock : public ServingClock {
 public:
  double Now() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepUntil(double t) override {
    const double wait = t - Now();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
};

// Fills in the latency figures and the verdict of `run` from the latencies (s) of its
// completed queries.
void Account(const std::vector<double>& latencies_s, const ServerScenario& limits,
             ServingRun* run) {
  run->completed = static_cast<std::int64_t>(latencies_s.size());
  if (!latencies_s.empty()) {
    std::vector<double> ms;
    ms.reserve(latencies_s.size());
    double sum = 0;
    for (double l : latencies_s) {
      ms.push_back(l * 1e3);
      sum += l * 1e3;
    }
    run->p50_ms = Percentile(ms, 50);
    run->p90_ms = Percentile(ms, 90);
    run->p99_ms = Percentile(ms, 99);
    run->mean_ms = sum / static_cast<double>(ms.size());
    run->max_ms = *std::max_element(ms.begin(), ms.end());
  }
  run->achieved_qps = run->duration_s > 0 ? run->completed / run->duration_s : 0;
  run->mean_batch = run->batches > 0 ? static_cast<double>(run->completed) / run->batches : 0;
  if (run->completed < run->queries) {
    run->invalid_reason = std::to_string(run->queries - run->completed) + " of " +
                          std::to_string(run->queries) + " queries were not served within " +
                          "max_duration_s (" + json(limits.max_duration_s).dump() +
                          " s): the rate is past what the model sustains";
  } else if (run->completed < limits.min_queries) {
    run->invalid_reason = "only " + std::to_string(run->completed) + " queries, fewer than " +
                          "min_queries (" + std::to_string(limits.min_queries) + ")";
  } else if (run->duration_s < limits.min_duration_s) {
    run->invalid_reason = "ran " + json(run->duration_s).dump() + " s, less than " +
                          "min_duration_s (" + json(limits.min_duration_s).dump() + ")";
  }
  run->valid = run->invalid_reason.empty();
}

bool MeetsSlo(const ServingRun& run, double slo_ms) {
  return run.valid && run.kept_up && run.p99_ms <= slo_ms;
}

}  // namespace

ServingClock& SystemServingClock() {
  static SteadyServingClock clock;
  return clock;
}

std::vector<double> PoissonArrivals(double qps, std::uint64_t seed, double min_duration_s,
                                    std::int64_t min_queries) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(qps);
  std::vector<double> arrivals;
  double t = 0;
  while (static_cast<std::int64_t>(arrivals.size()) < min_queries || t < min_duration_s) {
    t += gap(rng);
    arrivals.push_back(t);
  }
  return arrivals;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

json ServingRun::Json() const {
  return {{"target_qps", target_qps == 0 ? json(nullptr) : json(target_qps)},
          {"queries", queries},
          {"completed", completed},
          {"batches", batches},
          {"duration_s", duration_s},
          {"achieved_qps", achieved_qps},
          {"offered_qps", target_qps == 0 ? json(nullptr) : json(offered_qps)},
          {"kept_up", kept_up},
          {"latency_p50_ms", p50_ms},
          {"latency_p90_ms", p90_ms},
          {"latency_p99_ms", p99_ms},
          {"latency_mean_ms", mean_ms},
          {"latency_max_ms", max_ms},
          {"mean_batch", mean_batch},
          {"valid", valid},
          {"invalid_reason", valid ? json(nullptr) : json(invalid_reason)}};
}

ServingRun RunServer(const ServerScenario& spec, double qps, std::uint64_t seed,
                     const RunBatch& run_batch, ServingClock& clock) {
  std::vector<double> arrivals = PoissonArrivals(qps, seed, spec.min_duration_s, spec.min_queries);
  ServingRun run;
  run.target_qps = qps;
  run.queries = static_cast<std::int64_t>(arrivals.size());
  const double max_wait_s = spec.max_wait_ms / 1e3;
  // Absolute times on the clock, so that a wait until an arrival ends at that very value
  // (a sleep until start + a, less start, need not give back a).
  const double start = clock.Now();
  for (double& a : arrivals) a += start;
  const double stop = start + spec.max_duration_s;
  std::vector<double> latencies;
  latencies.reserve(arrivals.size());
  std::size_t next = 0;  // the first query not yet served; those before it are done
  double last_done = start;
  while (next < arrivals.size()) {
    const double now = clock.Now();
    if (now >= stop) break;
    // Queries [next, arrived) have arrived and wait.
    const auto arrived = static_cast<std::size_t>(
        std::upper_bound(arrivals.begin() + static_cast<std::ptrdiff_t>(next), arrivals.end(),
                         now) -
        arrivals.begin());
    const std::size_t waiting = arrived - next;
    if (waiting == 0) {
      clock.SleepUntil(arrivals[next]);
      continue;
    }
    const auto full = static_cast<std::size_t>(spec.max_batch);
    const double deadline = arrivals[next] + max_wait_s;
    if (waiting < full && now < deadline) {
      // Wait for the batch to fill, but no longer than the oldest query may wait.
      clock.SleepUntil(arrived < arrivals.size() ? std::min(deadline, arrivals[arrived])
                                                 : deadline);
      continue;
    }
    const std::size_t size = std::min(waiting, full);
    run_batch(static_cast<std::int64_t>(size));
    last_done = clock.Now();
    for (std::size_t q = next; q < next + size; ++q) latencies.push_back(last_done - arrivals[q]);
    next += size;
    ++run.batches;
  }
  run.duration_s = latencies.empty() ? 0 : last_done - arrivals.front();
  Account(latencies, spec, &run);
  const double arrival_span = arrivals.back() - arrivals.front();
  if (arrival_span > 0) {
    run.offered_qps = static_cast<double>(run.queries) / arrival_span;
    run.kept_up = run.achieved_qps >= (1 - kSloSearchTolerance) * run.offered_qps;
  }
  return run;
}

ServingRun RunSingleStream(const ServerScenario& limits, const RunBatch& run_batch,
                           ServingClock& clock) {
  ServingRun run;
  std::vector<double> latencies;
  const double start = clock.Now();
  double now = start;
  while ((static_cast<std::int64_t>(latencies.size()) < limits.min_queries ||
          now - start < limits.min_duration_s) &&
         now - start < limits.max_duration_s) {
    const double issued = clock.Now();
    run_batch(1);
    now = clock.Now();
    latencies.push_back(now - issued);
    ++run.batches;
  }
  run.queries = static_cast<std::int64_t>(latencies.size());
  run.duration_s = now - start;
  Account(latencies, limits, &run);
  return run;
}

json SloSearch::Json() const {
  json runs = json::array();
  for (const ServingRun& p : probes) runs.push_back(p.Json());
  return {{"max_qps_within_slo", max_qps == 0 ? json(nullptr) : json(max_qps)},
          {"probes", std::move(runs)}};
}

SloSearch SearchMaxQps(const ServerScenario& spec, std::uint64_t seed, const RunBatch& run_batch,
                       ServingClock& clock) {
  SloSearch search;
  const double slo = *spec.slo_p99_ms;
  auto probe = [&](double qps) {
    search.probes.push_back(RunServer(spec, qps, seed, run_batch, clock));
    const bool met = MeetsSlo(search.probes.back(), slo);
    // Rates that meet the SLO only rise: the newest one met is the highest.
    if (met) search.best = static_cast<int>(search.probes.size()) - 1;
    return met;
  };
  double lo = 0, hi = 0;  // lo meets the SLO, hi does not; 0: not found yet
  double qps = spec.qps;
  // Bracket: double from a rate that meets the SLO, halve from one that does not.
  while (static_cast<int>(search.probes.size()) < kMaxSloProbes && (lo == 0 || hi == 0)) {
    if (probe(qps)) {
      lo = qps;
      qps *= 2;
    } else {
      hi = qps;
      qps /= 2;
      // Below this rate min_queries take longer than max_duration_s to arrive: no run
      // there can be valid.
      if (qps * spec.max_duration_s < static_cast<double>(spec.min_queries)) break;
    }
  }
  while (static_cast<int>(search.probes.size()) < kMaxSloProbes && lo > 0 && hi > 0 &&
         hi - lo > kSloSearchTolerance * hi) {
    const double mid = (lo + hi) / 2;
    (probe(mid) ? lo : hi) = mid;
  }
  search.max_qps = lo;
  return search;
}

}  // namespace benchfleet::worker
