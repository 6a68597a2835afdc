// Whether the host's pace explains a change of a median (docs/regressions.md, Host pace):
// one rule for `compare` and the regression judge.
#pragma once

#include <cmath>
#include <optional>
#include <vector>

#include "common/ratio_interval.h"

namespace benchfleet {

// A sweep's (a night's) pace on a host is taken from at least this many of its results
// there (each the geometric mean of its processes' readings): fewer cannot say how much
// the pace itself varies.
inline constexpr long kHostPaceMinResults = 3;

// A busy neighbour slows a job more than the agent's small pace reference, whose data
// stays in the core's first caches: measured, a job slowed by the reference's ratio to
// a power of 0.7 to 1.9 (RealRegressionTest: reference x2.2-3.8, the mlp x2.3-4.6). So
// a host whose pace moved explains a change of the median up to that power of 2, and no
// further: a change beyond it is the code's, whatever the host did.
inline constexpr double kHostPaceExplainsPower = 2;

// The host moved only when its pace's ratio lies beyond its own noise: "no change" is
// outside the pace ratio's 95% interval (Welch's t on the logs of each side's readings).
inline constexpr double kHostPaceAlpha = 0.05;

// B's pace over A's from each side's readings (results' host_pace_ms on one host); none
// when a side has fewer than kHostPaceMinResults.
std::optional<RatioEstimate> HostPaceRatio(const std::vector<double>& a,
                                           const std::vector<double>& b);

// `ratio`: a median over its baseline (B's over A's); `pace`: the host's pace likewise.
// The host explains the change when its pace moved beyond its own noise (kHostPaceAlpha)
// the same way, and far enough: the change within the pace's ratio to
// kHostPaceExplainsPower.
bool HostPaceExplains(double ratio, const std::optional<RatioEstimate>& pace);

// The same for a change that has its own interval (`compare`'s): the change is beyond what
// the host explains only when its interval's end nearest "no change" is (its low end for a
// slowdown, its high end for a speedup); one whose ratio alone lies just beyond the pace's
// power is the host's as far as its own noise can tell. Without an interval, its ratio.
bool HostPaceExplains(const RatioEstimate& change, const std::optional<RatioEstimate>& pace);

}  // namespace benchfleet
