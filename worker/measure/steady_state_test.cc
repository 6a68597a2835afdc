#include "worker/measure/steady_state.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace benchfleet::worker {
namespace {

// Deterministic, portable noise (the standard distributions differ between
// standard libraries): approximately standard normal, as the sum of 12
// uniforms from a 64-bit LCG, minus 6.
class Noise {
 public:
  explicit Noise(std::uint64_t seed) : state_(seed * 2654435761u + 1) {}
  double Normal() {
    double sum = 0;
    for (int i = 0; i < 12; ++i) sum += Uniform();
    return sum - 6;
  }
  double Uniform() {
    state_ = state_ * 6364136223846793005u + 1442695040888963407u;
    return static_cast<double>(state_ >> 11) / 9007199254740992.0;  // 2^53
  }

 private:
  std::uint64_t state_;
};

std::vector<double> Flat(std::size_t n, double level, double relative_sigma, std::uint64_t seed) {
  Noise noise(seed);
  std::vector<double> samples;
  for (std::size_t i = 0; i < n; ++i)
    samples.push_back(level * (1 + relative_sigma * noise.Normal()));
  return samples;
}

TEST(FindRegimeChangeTest, StepIsFoundWhereItHappens) {
  // fp32 GEMM 2048 on one core: ~212 ms until the allocator settles, then ~163 ms.
  std::vector<double> samples = Flat(7, 212, 0.01, 1);
  const std::vector<double> after = Flat(13, 163, 0.01, 2);
  samples.insert(samples.end(), after.begin(), after.end());
  EXPECT_EQ(FindRegimeChange(samples), 7u);
}

TEST(FindRegimeChangeTest, StepUpIsFoundToo) {
  std::vector<double> samples = Flat(30, 1.0, 0.02, 3);
  const std::vector<double> after = Flat(20, 1.3, 0.02, 4);
  samples.insert(samples.end(), after.begin(), after.end());
  EXPECT_EQ(FindRegimeChange(samples), 30u);
}

TEST(FindRegimeChangeTest, SmallSeriesCannotShowAChange) {
  // Five distinct samples on each side are not enough evidence, however
  // clean the step; seven are.
  EXPECT_EQ(FindRegimeChange({2.0, 2.1, 2.2, 2.3, 2.4, 1.0, 1.1, 1.2, 1.3, 1.4}), std::nullopt);
  EXPECT_EQ(
      FindRegimeChange({2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6}), 7u);
  EXPECT_EQ(FindRegimeChange({}), std::nullopt);
  EXPECT_EQ(FindRegimeChange({5}), std::nullopt);
}

// A perfect step splits the series into ranks 1..a | a+1..n.
std::vector<double> PerfectStep(std::size_t n) {
  std::vector<double> samples;
  for (std::size_t i = 0; i < n; ++i) samples.push_back(i < n / 2 ? 200.0 + i : 100.0 + i);
  return samples;
}

TEST(FindRegimeChangeTest, SamplesToSeeAChangeIsTheFewestThatCanShowOne) {
  // 6 | 7 samples of a perfect step reach z = 3.0 exactly; 6 | 6 reach 2.88.
  EXPECT_EQ(kSamplesToSeeRegimeChange, 13u);
  EXPECT_EQ(FindRegimeChange(PerfectStep(kSamplesToSeeRegimeChange)),
            kSamplesToSeeRegimeChange / 2);
  for (std::size_t n = 0; n < kSamplesToSeeRegimeChange; ++n) {
    EXPECT_EQ(FindRegimeChange(PerfectStep(n)), std::nullopt) << n << " samples";
  }
}

TEST(FindRegimeChangeTest, TrendIsFoundNearItsMiddle) {
  // 10% slower at the start, falling linearly, 0.5% noise.
  Noise noise(5);
  std::vector<double> samples;
  for (int i = 0; i < 100; ++i)
    samples.push_back(1.0 + 0.1 * (1 - i / 99.0) + 0.005 * noise.Normal());
  const std::optional<std::size_t> change = FindRegimeChange(samples);
  ASSERT_TRUE(change.has_value());
  EXPECT_GT(*change, 30u);
  EXPECT_LT(*change, 70u);
}

TEST(FindRegimeChangeTest, FlatNoisySeriesIsNotAChange) {
  // 10% noise, many lengths and seeds: none may be called a change.
  for (std::size_t n : {10u, 20u, 50u, 200u, 1000u}) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      EXPECT_EQ(FindRegimeChange(Flat(n, 5.0, 0.1, seed * 100 + n)), std::nullopt)
          << "n " << n << " seed " << seed;
    }
  }
}

TEST(FindRegimeChangeTest, AlternatingValuesAreOneRegime) {
  // Bimodal but stationary: the halves' medians can differ by a whole mode.
  std::vector<double> samples;
  for (int i = 0; i < 201; ++i) samples.push_back(i % 2 ? 3.0 : 2.0);
  EXPECT_EQ(FindRegimeChange(samples), std::nullopt);
}

TEST(FindRegimeChangeTest, OutliersAreNotAChange) {
  std::vector<double> samples = Flat(100, 1.0, 0.01, 6);
  samples[10] = samples[11] = samples[12] = 9.0;  // a preemption
  samples[90] = 7.0;
  EXPECT_EQ(FindRegimeChange(samples), std::nullopt);
}

TEST(FindRegimeChangeTest, ShiftWithinTheNoiseIsNotAChange) {
  // A 3% step under 10% noise: significant with 1000 samples per side, but
  // smaller than the spread within each regime.
  std::vector<double> samples = Flat(1000, 1.0, 0.1, 7);
  const std::vector<double> after = Flat(1000, 1.03, 0.1, 8);
  samples.insert(samples.end(), after.begin(), after.end());
  EXPECT_EQ(FindRegimeChange(samples), std::nullopt);
}

TEST(FindRegimeChangeTest, TinyShiftOfAQuietSeriesIsNotAChange) {
  // 1% step, 0.1% noise: clearly real, but below kRegimeMinRelativeShift.
  std::vector<double> samples = Flat(50, 1.0, 0.001, 9);
  const std::vector<double> after = Flat(50, 1.01, 0.001, 10);
  samples.insert(samples.end(), after.begin(), after.end());
  EXPECT_EQ(FindRegimeChange(samples), std::nullopt);
}

TEST(FindRegimeChangeTest, IdenticalSamplesAreOneRegime) {
  EXPECT_EQ(FindRegimeChange(std::vector<double>(50, 2.5)), std::nullopt);
}

}  // namespace
}  // namespace benchfleet::worker
