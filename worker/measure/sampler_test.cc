#include "worker/measure/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "worker/measure/stats.h"
#include "worker/measure/steady_state.h"

namespace benchfleet::worker {
namespace {

// Time advances only when the fake workload says so.
class FakeClock final : public Clock {
 public:
  double WallSeconds() override { return wall_; }
  double ProcessCpuSeconds() override { return cpu_; }
  std::optional<HostCpuTimes> HostCpu() override {
    if (!with_host_) return std::nullopt;
    return HostCpuTimes{host_busy_, 0, host_steal_, host_busy_ + host_steal_};
  }
  void Advance(double wall_s, double busy_threads) {
    wall_ += wall_s;
    cpu_ += wall_s * busy_threads;
    host_busy_ += wall_s * (busy_threads + other_busy_cpus_);
    host_steal_ += wall_s * steal_cpus_;
  }
  // The host's /proc/stat, with others keeping `other_busy_cpus` busy and the
  // hypervisor stealing `steal_cpus`.
  void SimulateHost(double other_busy_cpus, double steal_cpus) {
    with_host_ = true;
    other_busy_cpus_ = other_busy_cpus;
    steal_cpus_ = steal_cpus;
  }

 private:
  double wall_ = 1000;
  double cpu_ = 5;
  bool with_host_ = false;
  double other_busy_cpus_ = 0;
  double steal_cpus_ = 0;
  double host_busy_ = 50;
  double host_steal_ = 1;
};

// A workload whose i-th call (counting from 0) lasts duration(i) seconds.
struct FakeWorkload {
  FakeClock* clock;
  std::function<double(long)> duration;
  double busy_threads = 1;
  long calls = 0;

  std::function<void()> AsIteration() {
    return [this] { clock->Advance(duration(calls++), busy_threads); };
  }
};

TimingOptions Options(double warmup, double min_time, double max_time, double target) {
  return TimingOptions{warmup, min_time, max_time, target};
}

TEST(MeasureWorkloadTest, SteadyFastWorkloadBatchesIterationsAndStopsAtMinTime) {
  FakeClock clock;
  FakeWorkload work{&clock, [](long) { return 100e-6; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.2, 5, 0.05), clock);

  // 0.1 ms per iteration: a block needs more than 10 iterations to last 1 ms.
  EXPECT_GE(m.iters_per_sample, 10);
  EXPECT_LE(m.iters_per_sample * 100e-6, 2 * kMinBlockSeconds * kBlockTargetMargin);
  ASSERT_GE(m.samples_ms.size(), kMinSamples);
  for (double s : m.samples_ms) EXPECT_NEAR(s, 0.1, 1e-9);
  // Zero spread: stops at the first sample past min_time.
  EXPECT_GE(m.timed_s, 0.2);
  EXPECT_LT(m.timed_s, 0.2 + 2 * kMinBlockSeconds * kBlockTargetMargin);
  EXPECT_GE(m.warmup_s, 0.01);
  EXPECT_NEAR(m.effective_threads, 1.0, 1e-9);
}

TEST(MeasureWorkloadTest, RanksThatAgreeRunTheSameBlocksWhateverTheirOwnTimes) {
  // Rank 0 decides; its decisions are recorded and replayed to rank 1, whose own
  // times (slower, noisy) would have decided otherwise. Both must make the same calls.
  FakeClock clock0;
  FakeWorkload work0{&clock0, [](long) { return 100e-6; }};
  std::vector<double> decisions;
  const Measurement m0 = MeasureWorkload(work0.AsIteration(), Options(0.01, 0.2, 5, 0.05), clock0,
                                         nullptr, [&](double mine) {
                                           decisions.push_back(mine);
                                           return mine;
                                         });
  FakeClock clock1;
  FakeWorkload work1{&clock1, [](long i) { return i % 3 == 0 ? 900e-6 : 300e-6; }};
  std::size_t next = 0;
  const Measurement m1 = MeasureWorkload(work1.AsIteration(), Options(0.01, 0.2, 5, 0.05), clock1,
                                         nullptr, [&](double) {
                                           EXPECT_LT(next, decisions.size());
                                           return next < decisions.size() ? decisions[next++] : 1.0;
                                         });
  EXPECT_EQ(next, decisions.size());  // every decision asked for, in the same order
  EXPECT_EQ(work1.calls, work0.calls);
  EXPECT_EQ(m1.warmup_iterations, m0.warmup_iterations);
  EXPECT_EQ(m1.iters_per_sample, m0.iters_per_sample);
  EXPECT_EQ(m1.samples_ms.size() + m1.discarded_samples_ms.size(),
            m0.samples_ms.size() + m0.discarded_samples_ms.size());
  // Each rank's samples are its own times.
  EXPECT_GT(m1.samples_ms.front(), m0.samples_ms.front());
  // The same measurement without a partner to agree with.
  FakeClock alone_clock;
  FakeWorkload alone{&alone_clock, [](long) { return 100e-6; }};
  const Measurement m =
      MeasureWorkload(alone.AsIteration(), Options(0.01, 0.2, 5, 0.05), alone_clock);
  EXPECT_EQ(alone.calls, work0.calls);
  EXPECT_EQ(m.samples_ms, m0.samples_ms);
}

TEST(MeasureWorkloadTest, SlowIterationIsOneSampleEach) {
  FakeClock clock;
  // Binary fractions keep the fake clock's sums exact.
  FakeWorkload work{&clock, [](long) { return 1.0 / 256; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.125, 5, 0.05), clock);
  EXPECT_EQ(m.iters_per_sample, 1);
  EXPECT_EQ(m.warmup_iterations, 3);
  EXPECT_DOUBLE_EQ(m.samples_ms.front(), 1000.0 / 256);
  // 0.125 s at 1/256 s per sample is 32 samples; the loop stops right there.
  EXPECT_EQ(m.samples_ms.size(), 32u);
}

TEST(MeasureWorkloadTest, WarmupRunsAtLeastOnceAndIsExcludedFromSamples) {
  FakeClock clock;
  // The first call is a slow cold start; later ones are fast.
  FakeWorkload work{&clock, [](long i) { return i == 0 ? 0.5 : 0.002; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(1e-6, 0.05, 5, 0.05), clock);
  EXPECT_EQ(m.warmup_iterations, 1);
  EXPECT_NEAR(m.warmup_s, 0.5, 1e-9);
  EXPECT_EQ(*std::max_element(m.samples_ms.begin(), m.samples_ms.end()),
            *std::min_element(m.samples_ms.begin(), m.samples_ms.end()));
  EXPECT_NEAR(m.samples_ms.front(), 2.0, 1e-9);
}

TEST(MeasureWorkloadTest, NoisyWorkloadRunsUntilMaxTime) {
  FakeClock clock;
  // Alternating 2 ms and 3 ms: the median's interval spans both, far wider than the target.
  FakeWorkload work{&clock, [](long i) { return i % 2 ? 0.003 : 0.002; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.1, 0.5, 0.05), clock);
  EXPECT_GE(m.timed_s, 0.5);
  EXPECT_LT(m.timed_s, 0.5 + 0.003 + 1e-9);
  EXPECT_TRUE(Summarize(m.samples_ms, 0.05).noisy);
}

TEST(MeasureWorkloadTest, QuietsDownAfterNoisyStart) {
  FakeClock clock;
  // Noisy for the first 50 calls, then steady: sampling stops well before max.
  FakeWorkload work{&clock, [](long i) { return i < 50 ? (i % 2 ? 0.006 : 0.002) : 0.002; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.001, 0.01, 10, 0.05), clock);
  EXPECT_LT(m.timed_s, 10);
  EXPECT_FALSE(Summarize(m.samples_ms, 0.05).noisy);
}

TEST(MeasureWorkloadTest, MaxTimeIsAHardCapEvenBelowMinSamples) {
  FakeClock clock;
  FakeWorkload work{&clock, [](long) { return 0.3; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.1, 0.5, 1, 0.05), clock);
  EXPECT_EQ(m.samples_ms.size(), 4u);  // 0.3, 0.6, 0.9, 1.2 s
  EXPECT_TRUE(Summarize(m.samples_ms, 0.05).noisy);
  // Four samples cannot show a change of pace, so the result is not known steady.
  EXPECT_TRUE(m.unsteady);
}

TEST(MeasureWorkloadTest, SlowStepTooShortToSeeIsUnsteadyNotASteadyMedian) {
  // fp32 GEMM 2048 on one core of a VM: ~265 ms a product for the first ~0.8 s
  // after a 0.1 s warm-up, then ~225 ms; a 2 s cap fits 8 samples, too few for
  // the step to be found, so the mixed median must not pass as steady.
  FakeClock clock;
  const double start = clock.WallSeconds();
  FakeWorkload work{&clock,
                    [&](long) { return clock.WallSeconds() - start < 0.9 ? 0.265 : 0.225; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.1, 0.5, 2, 0.05), clock);
  EXPECT_LT(m.samples_ms.size(), kSamplesToSeeRegimeChange);
  EXPECT_TRUE(m.unsteady);
}

TEST(MeasureWorkloadTest, SteadySlowWorkloadStopsOnlyOnceAChangeCouldBeSeen) {
  // Zero spread and past min_time after 10 samples, but a change needs 13 to show.
  FakeClock clock;
  FakeWorkload work{&clock, [](long) { return 1.0 / 8; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.125, 0.5, 10, 0.05), clock);
  EXPECT_EQ(m.samples_ms.size(), kSamplesToSeeRegimeChange);
  EXPECT_FALSE(m.unsteady);
}

TEST(MeasureWorkloadTest, EffectiveThreadsIsCpuOverWallOfSamplingRegion) {
  FakeClock clock;
  FakeWorkload work{&clock, [](long) { return 0.002; }};
  work.busy_threads = 1.75;
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.1, 1, 0.05), clock);
  EXPECT_NEAR(m.effective_threads, 1.75, 1e-9);
  EXPECT_NEAR(m.cpu_s, 1.75 * m.timed_s, 1e-9);
}

TEST(MeasureWorkloadTest, SlowWarmupIterationDoesNotDecideTheBlockSize) {
  FakeClock clock;
  // One slow cold-start iteration is the whole warm-up; the work itself
  // takes 0.1 ms, so a block must hold at least 10 iterations.
  FakeWorkload work{&clock, [](long i) { return i == 0 ? 0.05 : 100e-6; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(1e-6, 0.05, 5, 0.05), clock);
  EXPECT_EQ(m.warmup_iterations, 1);
  EXPECT_GE(static_cast<double>(m.iters_per_sample) * 100e-6, kMinBlockSeconds);
  ASSERT_GE(m.samples_ms.size(), kMinSamples);
  for (double s : m.samples_ms) EXPECT_NEAR(s, 0.1, 1e-9);
  EXPECT_TRUE(m.discarded_samples_ms.empty());
  EXPECT_FALSE(m.unsteady);
}

// A GPU workload asks for longer blocks (kMinGpuBlockSeconds): a 1 ms iteration is
// then timed ten or more to a block, each block (with its synchronise) over 10 ms.
TEST(MeasureWorkloadTest, AGpuWorkloadsBlocksLastAtLeastItsMinimum) {
  FakeClock clock;
  FakeWorkload work{&clock, [](long) { return 1e-3; }};
  TimingOptions options = Options(0.01, 0.2, 5, 0.05);
  options.min_block_s = kMinGpuBlockSeconds;
  const Measurement m = MeasureWorkload(work.AsIteration(), options, clock);
  EXPECT_GE(static_cast<double>(m.iters_per_sample) * 1e-3, kMinGpuBlockSeconds);
  ASSERT_GE(m.samples_ms.size(), kMinSamples);
  for (double s : m.samples_ms) EXPECT_NEAR(s, 1.0, 1e-9);
  // The CPU default keeps 1 ms blocks: one iteration each.
  FakeClock cpu_clock;
  FakeWorkload cpu_work{&cpu_clock, [](long) { return 1e-3; }};
  const Measurement cpu =
      MeasureWorkload(cpu_work.AsIteration(), Options(0.01, 0.2, 5, 0.05), cpu_clock);
  EXPECT_LT(cpu.iters_per_sample, m.iters_per_sample);
}

TEST(MeasureWorkloadTest, SpeedUpDuringSamplingGrowsTheBlockAndDropsTheSlowSamples) {
  FakeClock clock;
  // 2 ms per call (one per block) for the first 20 calls, then 0.2 ms: a
  // block of one call would be shorter than kMinBlockSeconds.
  FakeWorkload work{&clock, [](long i) { return i < 20 ? 0.002 : 0.0002; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.05, 5, 0.05), clock);
  EXPECT_GE(static_cast<double>(m.iters_per_sample) * 0.0002, kMinBlockSeconds);
  ASSERT_GE(m.samples_ms.size(), kMinSamples);
  for (double s : m.samples_ms) EXPECT_NEAR(s, 0.2, 1e-9);
  ASSERT_FALSE(m.discarded_samples_ms.empty());
  EXPECT_NEAR(m.discarded_samples_ms.front(), 2.0, 1e-9);
  EXPECT_FALSE(m.unsteady);
}

TEST(MeasureWorkloadTest, ASpeedUpJustBeforeMaxTimeStillEndsWithSamples) {
  // Noisy 2-3 ms calls (never steady enough to stop early), then 0.1 ms from `switch_s`
  // on. When the switch falls in the last block before max_time_s, that block is too
  // short, every sample of the slower pace is dropped, and the time is up: the
  // measurement must still end with samples of the new pace, wherever the switch falls.
  int ended_on_the_new_pace = 0;
  for (double switch_s = 0.95; switch_s < 1.05; switch_s += 0.0005) {
    FakeClock clock;
    FakeWorkload work{&clock, [&clock, switch_s](long i) {
                        return clock.WallSeconds() - 1000 < switch_s ? (i % 2 ? 0.002 : 0.003)
                                                                     : 0.0001;
                      }};
    const Measurement m =
        MeasureWorkload(work.AsIteration(), Options(0.01, 0.05, 1.0, 0.0001), clock);
    ASSERT_FALSE(m.samples_ms.empty()) << "switch at " << switch_s << " s";
    if (std::abs(m.samples_ms.back() - 0.1) < 1e-9) ++ended_on_the_new_pace;
  }
  EXPECT_GT(ended_on_the_new_pace, 0);
}

TEST(MeasureWorkloadTest, StepAfterWarmupIsDroppedAndSamplingGoesOn) {
  FakeClock clock;
  // fp32 GEMM 2048 on one core: ~212 ms for ~1.5 s after its buffers are
  // allocated, then ~163 ms, with 0.5% jitter; default job timing.
  FakeWorkload work{&clock, [&clock](long i) {
                      const double jitter = 1 + 0.005 * ((i * 7) % 5 - 2) / 2.0;
                      return (clock.WallSeconds() < 1001.5 ? 0.212 : 0.163) * jitter;
                    }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.2, 0.5, 5, 0.05), clock);
  EXPECT_FALSE(m.unsteady);
  ASSERT_FALSE(m.discarded_samples_ms.empty());
  for (double s : m.discarded_samples_ms) EXPECT_GT(s, 200);
  ASSERT_GE(m.samples_ms.size(), kMinSamples);
  for (double s : m.samples_ms) EXPECT_LT(s, 170);
  EXPECT_NEAR(Summarize(m.samples_ms, 0.05).median_ms, 163, 1);
  EXPECT_LT(m.timed_s, 5.2);
}

TEST(MeasureWorkloadTest, EndlessTrendIsUnsteadyAndKeepsOnlyTheLastRegime) {
  FakeClock clock;
  // Gets 0.2% faster with every call, to the end.
  FakeWorkload work{&clock, [](long i) { return 0.004 * std::pow(0.998, i); }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.1, 1, 0.05), clock);
  EXPECT_TRUE(m.unsteady);
  EXPECT_FALSE(m.discarded_samples_ms.empty());
  ASSERT_FALSE(m.samples_ms.empty());
  // Nothing kept is slower than the fastest sample dropped.
  EXPECT_LE(*std::max_element(m.samples_ms.begin(), m.samples_ms.end()),
            *std::min_element(m.discarded_samples_ms.begin(), m.discarded_samples_ms.end()));
}

TEST(MeasureWorkloadTest, FlatNoisyWorkloadIsNotUnsteady) {
  // 10% pseudo-random noise, never precise enough to stop early (a 0.5% interval
  // needs ~2,400 samples, 1 s holds 500): the whole series up to max_time is checked
  // for changes, and none may be found.
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    FakeClock clock;
    std::uint64_t state = seed;
    FakeWorkload work{&clock, [&state](long) {
                        double sum = 0;  // Irwin-Hall: approximately normal
                        for (int j = 0; j < 12; ++j) {
                          state = state * 6364136223846793005u + 1442695040888963407u;
                          sum += static_cast<double>(state >> 11) / 9007199254740992.0;
                        }
                        return 0.002 * (1 + 0.1 * (sum - 6));
                      }};
    const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.1, 1, 0.005), clock);
    EXPECT_FALSE(m.unsteady) << "seed " << seed;
    EXPECT_TRUE(m.discarded_samples_ms.empty()) << "seed " << seed;
    EXPECT_GE(m.samples_ms.size(), 400u) << "seed " << seed;
  }
}

// Sample-to-sample noise of 10% around 2 ms: pseudo-random, independent (phi 0) or
// each sample leaning on the last (AR(1) with coefficient phi), as timing blocks that
// share a clock speed or a neighbour's load do.
std::function<double(long)> NoisyTwoMs(std::uint64_t seed, double phi) {
  auto state = std::make_shared<std::uint64_t>(seed);
  auto previous = std::make_shared<double>(0);
  return [state, previous, phi](long) {
    double sum = 0;  // Irwin-Hall: approximately standard normal
    for (int j = 0; j < 12; ++j) {
      *state = *state * 6364136223846793005u + 1442695040888963407u;
      sum += static_cast<double>(*state >> 11) / 9007199254740992.0;
    }
    *previous = phi * *previous + std::sqrt(1 - phi * phi) * (sum - 6);
    return 0.002 * (1 + 0.1 * *previous);
  };
}

TEST(MeasureWorkloadTest, StopsOnceTheMedianIsPreciseHoweverWideTheSpread) {
  // IQR / median ~13%, but a 2% interval of the median needs only ~150 samples:
  // sampling stops long before max_time_s, and the result is not noisy.
  FakeClock clock;
  FakeWorkload work{&clock, NoisyTwoMs(3, 0)};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.1, 5, 0.02), clock);
  EXPECT_LT(m.timed_s, 1.0);
  const SampleStats stats = Summarize(m.samples_ms, 0.02);
  EXPECT_GT(stats.iqr_ms / stats.median_ms, 0.1);
  ASSERT_TRUE(stats.median_ci_relative);
  EXPECT_LE(*stats.median_ci_relative, 0.02);
  EXPECT_FALSE(stats.noisy);
  EXPECT_FALSE(m.unsteady);
}

TEST(MeasureWorkloadTest, DependentSamplesAreSampledLongerForTheSamePrecision) {
  FakeClock independent_clock;
  FakeWorkload independent{&independent_clock, NoisyTwoMs(5, 0)};
  const Measurement a =
      MeasureWorkload(independent.AsIteration(), Options(0.01, 0.1, 20, 0.02), independent_clock);
  FakeClock dependent_clock;
  FakeWorkload dependent{&dependent_clock, NoisyTwoMs(5, 0.8)};
  const Measurement b =
      MeasureWorkload(dependent.AsIteration(), Options(0.01, 0.1, 20, 0.02), dependent_clock);
  EXPECT_GT(b.samples_ms.size(), 2 * a.samples_ms.size());
  EXPECT_GT(Summarize(b.samples_ms, 0.02).variance_factor, 2.0);
  EXPECT_FALSE(Summarize(b.samples_ms, 0.02).noisy);
}

TEST(MeasureWorkloadTest, HostLoadCoversTheSamplingRegion) {
  FakeClock clock;
  clock.SimulateHost(/*other_busy_cpus=*/0.75, /*steal_cpus=*/0.05);
  FakeWorkload work{&clock, [](long) { return 0.002; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.1, 1, 0.05), clock);
  ASSERT_TRUE(m.host_load.has_value());
  EXPECT_NEAR(m.host_load->busy_cpus, 0.75, 1e-6);
  EXPECT_NEAR(m.host_load->steal_fraction, 0.05 / 1.8, 1e-6);
  EXPECT_TRUE(m.host_load->disturbed);
}

TEST(MeasureWorkloadTest, NoHostLoadWhereTheClockCannotTell) {
  FakeClock clock;
  FakeWorkload work{&clock, [](long) { return 0.002; }};
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.1, 1, 0.05), clock);
  EXPECT_FALSE(m.host_load.has_value());
}

}  // namespace
}  // namespace benchfleet::worker
