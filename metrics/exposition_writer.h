// Prometheus' text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), written family by
// family: each daemon renders its own snapshot with this writer (the coordinator's
// families in coordinator/metrics/exposition.h, the agent's in agent/agent_metrics.h),
// so both follow the same conventions (docs/metrics.md): a HELP and a TYPE line per
// family, then its samples; label values escaped; values as Prometheus writes them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "metrics/histogram.h"

namespace benchfleet {

// The Content-Type of the text a writer makes.
inline constexpr const char* kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

// A sample's labels, written in the order given (callers give them in key order).
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class ExpositionWriter {
 public:
  // Starts a family: its HELP and TYPE lines. `type` is "counter", "gauge" or
  // "histogram"; a counter's name ends in _total (the caller's to give).
  void Family(const std::string& name, const char* type, const std::string& help);
  // One sample line: `name` (the family's, or a histogram's _bucket, _sum, _count).
  void Sample(const std::string& name, const MetricLabels& labels, double value);
  void Sample(const std::string& name, const MetricLabels& labels, int64_t value);

  // A family of one sample.
  void Gauge(const std::string& name, const std::string& help, double value,
             const MetricLabels& labels = {});
  void Counter(const std::string& name, const std::string& help, int64_t value,
               const MetricLabels& labels = {});
  // A gauge family with a sample per key of `values`, labelled `label`, in key order.
  void GaugesByLabel(const std::string& name, const std::string& help, const std::string& label,
                     const std::map<std::string, int64_t>& values);
  // A histogram family: its cumulative buckets (`le`, the last +Inf), _sum and _count.
  void Histogram(const std::string& name, const std::string& help,
                 const LatencyHistogram& histogram);

  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// A label value with backslash, double quote and newline escaped (\\, \", \n).
std::string EscapeLabelValue(const std::string& value);

// A sample value as Prometheus writes one: shortest round-trip digits, fixed notation
// from 1e-4 up to 1e21 ("0.0001", "2.5", "10"), else scientific; NaN, +Inf, -Inf.
std::string FormatSampleValue(double value);

}  // namespace benchfleet
