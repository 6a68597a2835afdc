#include "worker/measure/profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "common/op_profile.h"
#include "worker/measure/profiler_compat.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

struct OperatorTotals {
  int64_t calls = 0;
  double self_us = 0;
  double total_us = 0;
  std::map<std::string, double> self_us_by_shapes;  // input shapes (JSON) -> self time
};

// The shapes within common/op_profile.h's limits, as JSON.
json ShapesJson(const std::vector<std::vector<int64_t>>& shapes) {
  json out = json::array();
  for (size_t i = 0; i < shapes.size() && i < kMaxOpInputs; ++i) {
    json dims = json::array();
    for (size_t d = 0; d < shapes[i].size() && d < kMaxShapeDims; ++d)
      dims.push_back(std::max<int64_t>(0, shapes[i][d]));
    out.push_back(std::move(dims));
  }
  return out;
}

}  // namespace

const char* ProfileTimeName(ProfileTime time) {
  return time == ProfileTime::kDevice ? "device" : "cpu";
}

json TopOperators(const std::vector<ProfiledCall>& calls, size_t rows, ProfileTime time) {
  const bool device = time == ProfileTime::kDevice;
  // Per thread, in order of start (an enclosing call before the calls it encloses): a
  // stack of the calls still open gives each call its parent.
  std::vector<size_t> order(calls.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ProfiledCall& x = calls[a];
    const ProfiledCall& y = calls[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start_us != y.start_us) return x.start_us < y.start_us;
    return x.duration_us > y.duration_us;
  });
  std::vector<double> self(calls.size());
  std::vector<double> total(calls.size());
  std::vector<size_t> parent(calls.size(), calls.size());  // calls.size(): none
  std::vector<size_t> open;
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    const ProfiledCall& call = calls[i];
    self[i] = device ? call.device_us : static_cast<double>(call.duration_us);
    total[i] = self[i];
    while (!open.empty()) {
      const ProfiledCall& top = calls[open.back()];
      // Times are whole microseconds: a nested call may seem to end a microsecond after
      // its parent; only a call that starts after the other ended is not nested in it.
      if (top.thread == call.thread && call.start_us < top.start_us + top.duration_us) break;
      open.pop_back();
    }
    if (!open.empty()) {
      parent[i] = open.back();
      if (!device)
        self[open.back()] =
            std::max(0.0, self[open.back()] - static_cast<double>(call.duration_us));
    }
    open.push_back(i);
  }
  if (device) {
    // A call's total device time: its own kernels' and those of every call nested in it
    // (children come after their parents in `order`: added up from the last).
    for (size_t k = order.size(); k-- > 0;) {
      const size_t i = order[k];
      if (parent[i] < calls.size()) total[parent[i]] += total[i];
    }
  } else {
    for (size_t i = 0; i < calls.size(); ++i) total[i] = static_cast<double>(calls[i].duration_us);
  }
  std::map<std::string, OperatorTotals> totals;
  for (size_t i = 0; i < calls.size(); ++i) {
    OperatorTotals& t = totals[calls[i].name.substr(0, kMaxOpNameBytes)];
    ++t.calls;
    t.self_us += self[i];
    t.total_us += total[i];
    t.self_us_by_shapes[ShapesJson(calls[i].input_shapes).dump()] += self[i];
  }
  std::vector<std::pair<std::string, const OperatorTotals*>> ranked;
  for (const auto& [name, t] : totals) ranked.emplace_back(name, &t);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second->self_us > b.second->self_us;
  });
  json out = json::array();
  for (size_t r = 0; r < ranked.size() && r < rows; ++r) {
    const OperatorTotals& t = *ranked[r].second;
    const auto shapes =
        std::max_element(t.self_us_by_shapes.begin(), t.self_us_by_shapes.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    out.push_back({{"op", ranked[r].first},
                   {"calls", t.calls},
                   {"self_us", t.self_us},
                   {"total_us", t.total_us},
                   {"input_shapes", json::parse(shapes->first)}});
  }
  return out;
}

int64_t ProfileIterations(int64_t iters_per_sample, double median_ms) {
  const double to_fill = median_ms > 0 ? std::ceil(kMinProfileSeconds * 1e3 / median_ms) : 1;
  const int64_t wanted = std::max(iters_per_sample, static_cast<int64_t>(std::min(to_fill, 1e9)));
  return std::clamp<int64_t>(wanted, 1, kMaxProfileIterations);
}

json ProfileOperators(const std::function<void()>& iteration,
                      const std::function<void()>& block_end, int64_t iterations,
                      ProfileTime time) {
  const std::vector<ProfiledCall> calls = RecordOperatorCalls(
      [&] {
        for (int64_t i = 0; i < iterations; ++i) iteration();
        if (block_end) block_end();
      },
      time == ProfileTime::kDevice);
  return TopOperators(calls, kOpProfileRows, time);
}

}  // namespace benchfleet::worker
