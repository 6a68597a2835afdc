#include "metrics/exposition_writer.h"

#include <charconv>
#include <cmath>

namespace benchfleet {
namespace {

// HELP text escapes backslash and newline (not quotes).
std::string EscapeHelp(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void AppendSample(std::string& out, const std::string& name, const MetricLabels& labels,
                  const std::string& value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out += ',';
      out += labels[i].first + "=\"" + EscapeLabelValue(labels[i].second) + "\"";
    }
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

}  // namespace

void ExpositionWriter::Family(const std::string& name, const char* type, const std::string& help) {
  out_ += "# HELP " + name + " " + EscapeHelp(help) + "\n";
  out_ += "# TYPE " + name + " " + type + "\n";
}

void ExpositionWriter::Sample(const std::string& name, const MetricLabels& labels, double value) {
  AppendSample(out_, name, labels, FormatSampleValue(value));
}

void ExpositionWriter::Sample(const std::string& name, const MetricLabels& labels, int64_t value) {
  AppendSample(out_, name, labels, std::to_string(value));
}

void ExpositionWriter::Gauge(const std::string& name, const std::string& help, double value,
                             const MetricLabels& labels) {
  Family(name, "gauge", help);
  Sample(name, labels, value);
}

void ExpositionWriter::Counter(const std::string& name, const std::string& help, int64_t value,
                               const MetricLabels& labels) {
  Family(name, "counter", help);
  Sample(name, labels, value);
}

void ExpositionWriter::GaugesByLabel(const std::string& name, const std::string& help,
                                     const std::string& label,
                                     const std::map<std::string, int64_t>& values) {
  Family(name, "gauge", help);
  for (const auto& [key, value] : values) Sample(name, {{label, key}}, value);
}

void ExpositionWriter::Histogram(const std::string& name, const std::string& help,
                                 const LatencyHistogram& histogram) {
  Family(name, "histogram", help);
  int64_t cumulative = 0;
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    cumulative += histogram.buckets()[i];
    const std::string le =
        i < kLatencyBucketBoundsS.size() ? FormatSampleValue(kLatencyBucketBoundsS[i]) : "+Inf";
    Sample(name + "_bucket", {{"le", le}}, cumulative);
  }
  Sample(name + "_sum", {}, histogram.sum_s());
  Sample(name + "_count", {}, histogram.count());
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  const double magnitude = std::fabs(value);
  const bool fixed = magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e21);
  char text[400];  // the longest fixed form below 1e21 with shortest digits fits easily
  const auto written =
      std::to_chars(text, text + sizeof text, value,
                    fixed ? std::chars_format::fixed : std::chars_format::scientific);
  return std::string(text, written.ptr);
}

}  // namespace benchfleet
