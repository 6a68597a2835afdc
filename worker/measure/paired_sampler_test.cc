#include "worker/measure/paired_sampler.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "worker/measure/stats.h"

namespace benchfleet::worker {
namespace {

// Time advances only when a fake workload says so.
class FakeClock final : public Clock {
 public:
  double WallSeconds() override { return wall_; }
  double ProcessCpuSeconds() override { return cpu_; }
  void Advance(double s) {
    wall_ += s;
    cpu_ += s;
  }

 private:
  double wall_ = 100;
  double cpu_ = 1;
};

TimingOptions Options(double warmup, double min_time, double max_time, double target) {
  return TimingOptions{warmup, min_time, max_time, target};
}

TEST(MeasurePairTest, BlocksAlternateABBAAndEachSideIsSampledByItsOwnRule) {
  FakeClock clock;
  std::string order;
  // A takes 100 us, B 110 us: B is 10% slower.
  auto a = [&] {
    clock.Advance(100e-6);
    order += 'a';
  };
  auto b = [&] {
    clock.Advance(110e-6);
    order += 'b';
  };
  const PairedMeasurement m = MeasurePair(a, b, Options(0.01, 0.1, 2, 0.01), false, clock);
  ASSERT_FALSE(m.a.samples_ms.empty());
  ASSERT_FALSE(m.b.samples_ms.empty());
  EXPECT_NEAR(Summarize(m.a.samples_ms, 0.01).median_ms, 0.100, 1e-9);
  EXPECT_NEAR(Summarize(m.b.samples_ms, 0.01).median_ms, 0.110, 1e-9);
  EXPECT_GT(m.groups, 0);
  EXPECT_EQ(m.a.samples_ms.size(), m.b.samples_ms.size()) << "two blocks of each per group";
  EXPECT_EQ(m.a.samples_ms.size(), static_cast<size_t>(2 * m.groups));
  // The sampling region, past the warm-up (alternating single iterations): runs of A's
  // block then B's twice then A's.
  const size_t region = order.find("aaaa");
  ASSERT_NE(region, std::string::npos);
  EXPECT_NE(order.find("bbbbb", region), std::string::npos);
  // Each side at least its own min_time_s of samples, and the whole within 2 x max_time_s.
  EXPECT_GE(m.a.timed_s, 0.1 - 1e-9);
  EXPECT_GE(m.b.timed_s, 0.1 - 1e-9);
  EXPECT_LE(m.a.timed_s + m.b.timed_s, 4 + 0.01);
  EXPECT_GT(m.a.warmup_s, 0);
  EXPECT_EQ(m.a.iters_per_sample, 12);  // 1 ms x kBlockTargetMargin / 100 us
}

TEST(MeasurePairTest, BFirstStartsEveryGroupWithB) {
  FakeClock clock;
  std::string order;
  auto a = [&] {
    clock.Advance(1e-3);
    order += 'a';
  };
  auto b = [&] {
    clock.Advance(1e-3);
    order += 'b';
  };
  MeasurePair(a, b, Options(0.002, 0.02, 0.05, 0.01), true, clock);
  EXPECT_EQ(order.substr(0, 2), "ba") << "the warm-up alternates from B too";
}

TEST(MeasurePairTest, AHostEpisodeLongerThanAGroupFallsOnBothSidesAlike) {
  FakeClock clock;
  // Both sides equally fast, the host 30% slower for a stretch in the middle: each side's
  // median moves the same way, so their ratio stays 1.
  auto pace = [&] {
    const double t = clock.WallSeconds() - 100;
    return t > 0.3 && t < 0.6 ? 1.3 : 1.0;
  };
  auto a = [&] { clock.Advance(200e-6 * pace()); };
  auto b = [&] { clock.Advance(200e-6 * pace()); };
  const PairedMeasurement m = MeasurePair(a, b, Options(0.01, 0.5, 1, 0.001), false, clock);
  const double ma = Summarize(m.a.samples_ms, 0.001).median_ms;
  const double mb = Summarize(m.b.samples_ms, 0.001).median_ms;
  EXPECT_NEAR(mb / ma, 1.0, 0.01);
}

}  // namespace
}  // namespace benchfleet::worker
