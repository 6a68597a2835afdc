// Whether the host's pace explains a change of a median (docs/regressions.md, Host pace):
// one rule for `compare` and the regression judge.
#pragma once

#include <cmath>

namespace benchfleet {

// A night's (a sweep's) pace on a host is the mean over at least this many of its results
// there: one reference run spreads up to 2x on a shared host.
inline constexpr long kHostPaceMinResults = 3;

// A busy neighbour slows a job more than the agent's small pace reference, whose data
// stays in the core's first caches: measured, a job slowed by the reference's ratio to
// a power of 0.7 to 1.9 (RealRegressionTest: reference x2.2-3.8, the mlp x2.3-4.6). So
// a host whose pace moved explains a change of the median up to that power of 2, and no
// further: a change beyond it is the code's, whatever the host did.
inline constexpr double kHostPaceExplainsPower = 2;

// `ratio`: a median over its baseline (B's over A's); `pace_ratio`: the host's pace
// likewise. The host moved when its pace did beyond `moved` (a ratio above 1, the step
// a change of the code must exceed too), and it explains a change the same way as its
// own up to kHostPaceExplainsPower.
inline bool HostPaceExplains(double ratio, double pace_ratio, double moved) {
  if (!(ratio > 0) || !(pace_ratio > 0) || !(moved > 0)) return false;
  if (pace_ratio > moved && ratio > 1) return ratio <= std::pow(pace_ratio, kHostPaceExplainsPower);
  if (pace_ratio < 1 / moved && ratio < 1)
    return ratio >= std::pow(pace_ratio, kHostPaceExplainsPower);
  return false;
}

}  // namespace benchfleet
