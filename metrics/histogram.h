// LatencyHistogram: how long something took, counted into fixed buckets the way
// Prometheus' histograms expose it (docs/metrics.md; ExpositionWriter renders one).
// Recording is a short search over the bounds and three additions, cheap enough for every
// pass of a daemon's loop; the loop records, and copies the whole histogram into a
// metrics snapshot now and then. Not thread-safe: one thread records, copies travel to
// the others.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace benchfleet {

// The buckets' upper bounds in seconds (Prometheus' `le`); a +Inf bucket follows. Steps
// of 1 - 2.5 - 5 from 100 µs to 10 s bracket what docs/performance.md measured of the
// loop with room on both sides: an idle pass and a commit that wrote little take well
// under a millisecond, a round of agents' messages ends by 40 ms (kMaxAgentRoundMs),
// `status` at 1,000 agents takes 11 ms (p50) to ~100 ms (max), the target for any
// reply is 100 ms, and anything past a second is a stall worth an alert.
inline constexpr std::array<double, 16> kLatencyBucketBoundsS = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};

class LatencyHistogram {
 public:
  static constexpr size_t kBuckets = kLatencyBucketBoundsS.size() + 1;  // the last: +Inf

  // Counts one observation: the first bucket whose bound is >= `seconds`.
  void Record(double seconds);

  // Observations per bucket, each counted once (not cumulative); the last is +Inf's.
  const std::array<int64_t, kBuckets>& buckets() const { return buckets_; }
  int64_t count() const { return count_; }
  double sum_s() const { return sum_s_; }

 private:
  std::array<int64_t, kBuckets> buckets_{};
  int64_t count_ = 0;
  double sum_s_ = 0;
};

}  // namespace benchfleet
