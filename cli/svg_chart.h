// A small SVG chart writer for `benchfleet report`: line/scatter charts and horizontal
// bar charts with titled axes, ticks and a legend, as inline SVG text (no scripts, no
// fonts, no external references). Every data point is one element of class "point" (a
// <circle> in a line chart, a <rect> in a bar chart), so a reader or a test can count
// them; a point with an interval has one element of class "error-bar" too. All text is
// escaped: names come from peers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace benchfleet {

// Text for XML/HTML content and attribute values: & < > " ' escaped; bytes that are
// not allowed in XML 1.0 (control characters) dropped.
std::string EscapeXml(std::string_view text);

// How an axis maps values: linear, logarithmic (values must be > 0; others are
// left out), or time (seconds since the Unix epoch, ticks labelled in UTC).
enum class AxisScale { kLinear, kLog, kTime };

struct ChartAxis {
  std::string title;  // with its unit: "batch size (samples)", "throughput (samples/s)"
  AxisScale scale = AxisScale::kLinear;
  bool from_zero = false;  // a linear axis that must include 0
};

// A marked point gets a ring around it, named in the legend.
enum class PointMark { kNone, kRegression, kImprovement };

struct ChartPoint {
  ChartPoint(double x_value, double y_value, PointMark point_mark = PointMark::kNone,
             std::string point_tip = "")
      : x(x_value), y(y_value), mark(point_mark), tip(std::move(point_tip)) {}
  double x = 0;
  double y = 0;
  PointMark mark = PointMark::kNone;
  std::string tip;  // shown on hover (<title>); may be empty
  // An interval around y (a median's 95% confidence interval), drawn as an error bar
  // (a vertical line with caps, class "error-bar"); absent: none.
  std::optional<double> y_low, y_high;
};

struct ChartSeries {
  std::string name;  // the legend's label
  std::vector<ChartPoint> points;
};

struct LineChart {
  std::string name;  // the data-chart attribute
  ChartAxis x;
  ChartAxis y;
  std::vector<ChartSeries> series;
  bool connect = true;          // join each series' points (sorted by x) with a line
  bool ideal_diagonal = false;  // a dashed y = x line, named "ideal (linear)" in the legend
};

// One line chart as an <svg data-chart="NAME"> element.
std::string RenderLineChart(const LineChart& chart);

struct Bar {
  size_t category = 0;  // index into BarChart::categories
  size_t series = 0;    // index into BarChart::series (its colour and legend entry)
  double value = 0;
  std::string note;  // written at the bar's end, e.g. "2.1x, max err 3e-3"
};

// Horizontal bars: one row per category, one bar per series within it.
struct BarChart {
  std::string name;
  std::string value_title;  // the value axis' title, with unit
  std::vector<std::string> categories;
  std::vector<std::string> series;
  std::vector<Bar> bars;
  std::optional<double> reference;  // a dashed line at this value (e.g. 1 for "no change")
  std::string reference_label;
};

std::string RenderBarChart(const BarChart& chart);

// Tick values for a linear axis over [lo, hi] (about `count` of them, at 1, 2 or 5
// times a power of ten) and for a log axis (1, 2, 5 per decade, or decades only).
std::vector<double> LinearTicks(double lo, double hi, int count);
std::vector<double> LogTicks(double lo, double hi);

}  // namespace benchfleet
