#include "worker/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "worker/stats.h"

namespace benchfleet::worker {
namespace {

// Time advances only when the fake workload says so.
class FakeClock final : public Clock {
 public:
  double WallSeconds() override { return wall_; }
  double ProcessCpuSeconds() override { return cpu_; }
  void Advance(double wall_s, double busy_threads) {
    wall_ += wall_s;
    cpu_ += wall_s * busy_threads;
  }

 private:
  double wall_ = 1000;
  double cpu_ = 5;
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
  // Alternating 2 ms and 3 ms: IQR / median stays far above the target.
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
}

TEST(MeasureWorkloadTest, EffectiveThreadsIsCpuOverWallOfSamplingRegion) {
  FakeClock clock;
  FakeWorkload work{&clock, [](long) { return 0.002; }};
  work.busy_threads = 1.75;
  const Measurement m = MeasureWorkload(work.AsIteration(), Options(0.01, 0.1, 1, 0.05), clock);
  EXPECT_NEAR(m.effective_threads, 1.75, 1e-9);
  EXPECT_NEAR(m.cpu_s, 1.75 * m.timed_s, 1e-9);
}

}  // namespace
}  // namespace benchfleet::worker
