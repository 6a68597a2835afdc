// The serving scenarios on a virtual clock with a fake model whose batch of n takes
// kFixedS + n * kPerQueryS: deterministic, and seconds of serving in microseconds.
#include "worker/measure/serving.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace benchfleet::worker {
namespace {

constexpr double kFixedS = 0.002;      // a batch's fixed cost
constexpr double kPerQueryS = 0.0005;  // and each query's
// At max_batch 8 a full batch takes 6 ms: at most 8 / 0.006 = 1333 queries/s.
constexpr double kCapacityQps = 8 / (kFixedS + 8 * kPerQueryS);

class VirtualClock : public ServingClock {
 public:
  double Now() override { return t; }
  void SleepUntil(double until) override { t = std::max(t, until); }
  double t = 100;  // any origin
};

struct FakeModel {
  VirtualClock* clock;
  std::vector<std::int64_t> sizes;
  void operator()(std::int64_t n) {
    sizes.push_back(n);
    clock->t += kFixedS + static_cast<double>(n) * kPerQueryS;
  }
};

ServerScenario Server(double qps, double min_duration_s) {
  ServerScenario s;
  s.qps = qps;
  s.max_batch = 8;
  s.max_wait_ms = 1;
  s.min_duration_s = min_duration_s;
  s.min_queries = 100;
  s.max_duration_s = 1e6;
  return s;
}

ServingRun Serve(const ServerScenario& s, double qps, std::uint64_t seed = 7,
                 std::vector<std::int64_t>* sizes = nullptr) {
  VirtualClock clock;
  FakeModel model{&clock, {}};
  ServingRun run = RunServer(
      s, qps, seed, [&model](std::int64_t n) { model(n); }, clock);
  if (sizes) *sizes = model.sizes;
  return run;
}

TEST(PoissonArrivals, SeededMeanRateAndLimits) {
  const std::vector<double> a = PoissonArrivals(1000, 42, 5, 100);
  EXPECT_EQ(a, PoissonArrivals(1000, 42, 5, 100));
  EXPECT_NE(a, PoissonArrivals(1000, 43, 5, 100));
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_GE(a.back(), 5);
  EXPECT_LT(a[a.size() - 2], 5);  // it stops once both limits are met
  // ~5000 exponential gaps of mean 1 ms: the rate within a few percent.
  EXPECT_NEAR(static_cast<double>(a.size()) / a.back(), 1000, 50);
  // A count limit longer than the duration decides.
  EXPECT_EQ(PoissonArrivals(10, 1, 0.001, 250).size(), 250u);
}

TEST(Percentile, InterpolatesBetweenRanks) {
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4, 5}, 50), 3);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4, 5}, 90), 4.6);
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 100), 4);
}

TEST(RunServer, SustainableRateHasBoundedLatency) {
  std::vector<std::int64_t> sizes;
  const ServingRun run = Serve(Server(500, 10), 500, 7, &sizes);
  ASSERT_TRUE(run.valid) << run.invalid_reason;
  EXPECT_EQ(run.completed, run.queries);
  EXPECT_NEAR(run.achieved_qps, 500, 30);
  EXPECT_EQ(run.batches, static_cast<std::int64_t>(sizes.size()));
  EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()), 8);
  // A query waits at most max_wait plus one batch in service, plus its own batch.
  EXPECT_LT(run.p99_ms, 1 + 2 * (kFixedS + 8 * kPerQueryS) * 1e3);
  EXPECT_GE(run.p99_ms, run.p90_ms);
  EXPECT_GE(run.p90_ms, run.p50_ms);
  EXPECT_GE(run.p50_ms, (kFixedS + kPerQueryS) * 1e3);  // never below one batch of 1
  // Doubling the run leaves the tail where it was: a steady state.
  const ServingRun longer = Serve(Server(500, 20), 500);
  EXPECT_LT(longer.p99_ms, 1.5 * run.p99_ms);
}

TEST(RunServer, PastSaturationLatencyGrowsWithoutBound) {
  const double qps = 1.5 * kCapacityQps;
  const ServingRun run = Serve(Server(qps, 2), qps);
  const ServingRun longer = Serve(Server(qps, 4), qps);
  const ServingRun longest = Serve(Server(qps, 8), qps);
  ASSERT_TRUE(run.valid && longer.valid && longest.valid);
  // The queue grows by (qps - capacity) per second: the latency from arrival with it.
  EXPECT_GT(longer.p99_ms, 1.7 * run.p99_ms);
  EXPECT_GT(longest.p99_ms, 1.7 * longer.p99_ms);
  EXPECT_GT(run.p99_ms, 100);  // far past any batch's service time
  // Every batch is full, and the model serves at its capacity, not at the rate asked.
  EXPECT_NEAR(longest.mean_batch, 8, 0.05);
  EXPECT_NEAR(longest.achieved_qps, kCapacityQps, 0.02 * kCapacityQps);
}

TEST(RunServer, BatcherWaitsAtMostMaxWaitForAFullBatch) {
  ServerScenario s = Server(50, 2);  // sparse: batches rarely fill
  s.max_wait_ms = 0;
  std::vector<std::int64_t> sizes;
  const ServingRun now = Serve(s, 50, 3, &sizes);
  // Without waiting, a query alone in the queue runs alone.
  EXPECT_NEAR(now.mean_batch, 1, 0.05);
  EXPECT_NEAR(now.p50_ms, (kFixedS + kPerQueryS) * 1e3, 0.01);
  s.max_wait_ms = 5;
  const ServingRun waited = Serve(s, 50, 3);
  // Waiting for company costs up to 5 ms more per query.
  EXPECT_GT(waited.p50_ms, now.p50_ms + 4);
  EXPECT_LT(waited.max_ms, now.max_ms + 5 + 8 * kPerQueryS * 1e3 + 1e-6);
}

TEST(RunServer, ShortOrUnfinishedRunsAreInvalid) {
  ServerScenario s = Server(500, 10);
  s.min_queries = 100000;  // arrivals go on until 100000 queries: 200 s
  s.max_duration_s = 20;   // but the run stops at 20 s
  const ServingRun cut = Serve(s, 500);
  EXPECT_FALSE(cut.valid);
  EXPECT_LT(cut.completed, cut.queries);
  EXPECT_NE(cut.invalid_reason.find("not served within max_duration_s"), std::string::npos)
      << cut.invalid_reason;
  EXPECT_FALSE(cut.Json()["valid"].get<bool>());
  EXPECT_TRUE(cut.Json()["invalid_reason"].is_string());
}

TEST(RunServer, ReproducibleUnderAFixedSeed) {
  const ServingRun a = Serve(Server(900, 5), 900, 11);
  const ServingRun b = Serve(Server(900, 5), 900, 11);
  const ServingRun c = Serve(Server(900, 5), 900, 12);
  EXPECT_EQ(a.Json(), b.Json());
  EXPECT_NE(a.Json(), c.Json());
}

TEST(SearchMaxQps, LandsBetweenASustainableAndAnUnsustainableRate) {
  ServerScenario s = Server(200, 3);
  s.slo_p99_ms = 20;
  VirtualClock clock;
  FakeModel model{&clock, {}};
  const SloSearch found = SearchMaxQps(
      s, 5, [&model](std::int64_t n) { model(n); }, clock);
  ASSERT_GT(found.max_qps, 0);
  // 500 qps meets a 20 ms p99 (previous test), past capacity nothing does.
  EXPECT_GT(found.max_qps, 500);
  EXPECT_LT(found.max_qps, kCapacityQps);
  // The rate found meets the SLO, and a rate 10% higher (past the tolerance) does not.
  EXPECT_LE(Serve(s, found.max_qps, 5).p99_ms, 20);
  EXPECT_GT(Serve(s, found.max_qps * 1.1, 5).p99_ms, 20);
  EXPECT_LE(static_cast<int>(found.probes.size()), kMaxSloProbes);
  EXPECT_EQ(found.Json()["probes"].size(), found.probes.size());
  // The same seed, the same probes.
  VirtualClock again;
  FakeModel model2{&again, {}};
  EXPECT_EQ(SearchMaxQps(
                s, 5, [&model2](std::int64_t n) { model2(n); }, again)
                .Json(),
            found.Json());
}

// A run too short for its backlog to show: past capacity, its p99 still fits a loose
// SLO. It did not keep up with its arrivals, so the search does not take that rate.
TEST(SearchMaxQps, ARateTheModelFellBehindIsNotWithinTheSloHoweverShortTheRun) {
  ServerScenario s = Server(200, 0.05);
  s.slo_p99_ms = 50;
  const ServingRun past = Serve(s, 1.5 * kCapacityQps, 5);
  ASSERT_TRUE(past.valid) << past.invalid_reason;
  EXPECT_LE(past.p99_ms, 50) << "short enough that p99 alone would pass";
  EXPECT_FALSE(past.kept_up);
  EXPECT_LT(past.achieved_qps, 0.8 * past.offered_qps);
  EXPECT_EQ(past.Json()["kept_up"], false);
  const ServingRun under = Serve(s, 0.5 * kCapacityQps, 5);
  EXPECT_TRUE(under.kept_up) << under.achieved_qps << " of " << under.offered_qps;

  VirtualClock clock;
  FakeModel model{&clock, {}};
  const SloSearch found = SearchMaxQps(
      s, 5, [&model](std::int64_t n) { model(n); }, clock);
  ASSERT_GT(found.max_qps, 0);
  EXPECT_LT(found.max_qps, kCapacityQps);
  ASSERT_GE(found.best, 0);
  EXPECT_EQ(found.probes[static_cast<std::size_t>(found.best)].target_qps, found.max_qps);
  for (const ServingRun& probe : found.probes) {
    if (probe.target_qps <= found.max_qps) continue;
    EXPECT_TRUE(!probe.kept_up || probe.p99_ms > 50 || !probe.valid) << probe.Json().dump();
  }
}

TEST(SearchMaxQps, StopsHalvingWhereNoRunCanBeValid) {
  ServerScenario s = Server(1000, 1);
  s.slo_p99_ms = 1;       // below one batch's 2.5 ms: never met
  s.max_duration_s = 10;  // 100 queries need 10 qps or more
  VirtualClock clock;
  FakeModel model{&clock, {}};
  const SloSearch found = SearchMaxQps(
      s, 5, [&model](std::int64_t n) { model(n); }, clock);
  EXPECT_EQ(found.max_qps, 0);
  // 1000, 500, ..., 15.6: seven rates, the next (7.8 qps) could not be valid.
  ASSERT_EQ(found.probes.size(), 7u);
  EXPECT_GE(found.probes.back().target_qps * s.max_duration_s, 100);
}

TEST(RunSingleStream, OneQueryAtATime) {
  ServerScenario s;
  s.min_duration_s = 1;
  s.min_queries = 100;
  VirtualClock clock;
  FakeModel model{&clock, {}};
  const ServingRun run = RunSingleStream(
      s, [&model](std::int64_t n) { model(n); }, clock);
  ASSERT_TRUE(run.valid) << run.invalid_reason;
  const double one_ms = (kFixedS + kPerQueryS) * 1e3;
  // 1 s of 2.5 ms queries, each on its own.
  EXPECT_NEAR(static_cast<double>(run.queries), 1e3 / one_ms, 1);
  EXPECT_TRUE(std::all_of(model.sizes.begin(), model.sizes.end(), [](auto n) { return n == 1; }));
  EXPECT_NEAR(run.p50_ms, one_ms, 1e-6);
  EXPECT_NEAR(run.p99_ms, one_ms, 1e-6);
  s.max_duration_s = 0.1;  // stopped before 100 queries and 1 s
  s.min_duration_s = 0.05;
  EXPECT_FALSE(RunSingleStream(
                   s, [&model](std::int64_t n) { model(n); }, clock)
                   .valid);
}

}  // namespace
}  // namespace benchfleet::worker
