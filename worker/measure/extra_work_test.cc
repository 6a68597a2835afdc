#include "worker/measure/extra_work.h"

#include <gtest/gtest.h>

#include <chrono>

namespace benchfleet::worker {
namespace {

class FakeClock final : public Clock {
 public:
  double WallSeconds() override { return wall_; }
  double ProcessCpuSeconds() override { return wall_; }
  void Advance(double s) { wall_ += s; }

 private:
  double wall_ = 0;
};

TEST(ExtraWorkTest, NoSlowdownAddsNothing) {
  FakeClock clock;
  int calls = 0;
  const ExtraWork none = ExtraWork::Calibrate([&] { ++calls; }, nullptr, 0, clock);
  EXPECT_EQ(none.units(), 0);
  EXPECT_EQ(calls, 0) << "nothing to size: the iteration is not even timed";
  int wrapped = 0;
  none.Wrap([&] { ++wrapped; })();
  EXPECT_EQ(wrapped, 1);
}

TEST(ExtraWorkTest, TheUnitsAreSizedFromTheIterationsOwnTime) {
  // The iteration takes 1 ms on the fake clock; a unit takes whatever the real one takes,
  // which the fake clock does not see, so time the unit through a real clock instead:
  // SystemClock is what the worker uses.
  const ExtraWork extra = ExtraWork::Calibrate(
      [] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
        while (std::chrono::steady_clock::now() < until) {
        }
      },
      nullptr, 0.05, SystemClock());
  const nlohmann::json report = extra.Report();
  EXPECT_DOUBLE_EQ(report["fraction"].get<double>(), 0.05);
  EXPECT_NEAR(report["iteration_ms"].get<double>(), 0.5, 0.25);
  ASSERT_GT(report["unit_ns"].get<double>(), 0);
  // 5% of 0.5 ms in units of unit_ns.
  const double expected =
      0.05 * report["iteration_ms"].get<double>() * 1e6 / report["unit_ns"].get<double>();
  EXPECT_NEAR(static_cast<double>(extra.units()), expected, expected * 0.01 + 1);
  EXPECT_GE(extra.units(), 1);
}

TEST(ExtraWorkTest, AWrappedIterationDoesItsUnitsAfterTheIteration) {
  const ExtraWork extra = ExtraWork::Calibrate(
      [] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        while (std::chrono::steady_clock::now() < until) {
        }
      },
      nullptr, 0.5, SystemClock());
  int calls = 0;
  auto wrapped = extra.Wrap([&] { ++calls; });
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) wrapped();
  const double per_call_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      50;
  EXPECT_EQ(calls, 50);
  // Half of a 200 us iteration: about 100 us of units each call (a loaded host only adds).
  EXPECT_GT(per_call_us, 50);
}

}  // namespace
}  // namespace benchfleet::worker
