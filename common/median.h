// The median of a handful of values (a sweep's medians, a series' baseline, alternated
// pairs): sorted, the middle one or the mean of the middle two; 0 for none.
#pragma once

#include <algorithm>
#include <vector>

namespace benchfleet {

inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace benchfleet
