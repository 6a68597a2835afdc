#include "metrics/histogram.h"

#include <algorithm>

namespace benchfleet {

void LatencyHistogram::Record(double seconds) {
  const auto bound =
      std::lower_bound(kLatencyBucketBoundsS.begin(), kLatencyBucketBoundsS.end(), seconds);
  ++buckets_[static_cast<size_t>(bound - kLatencyBucketBoundsS.begin())];
  ++count_;
  sum_s_ += seconds;
}

}  // namespace benchfleet
