#include "cli/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

namespace benchfleet {
namespace {

// Layout, in SVG pixels (the page shows charts at their natural size).
constexpr double kWidth = 980;
constexpr double kLegendWidth = 270;  // right of the plot
constexpr double kLineHeight = 380;
constexpr double kMarginLeft = 78;
constexpr double kMarginTop = 16;
constexpr double kMarginBottom = 58;
constexpr double kLegendRow = 18;
constexpr size_t kLegendChars = 40;  // longer labels are cut with an ellipsis
constexpr size_t kCategoryChars = 46;
constexpr double kCategoryWidth = 300;  // bar chart: room for category labels
constexpr double kBarHeight = 14;
constexpr double kBarGap = 10;  // between categories
constexpr int kTargetTicks = 6;

// Colour-blind-safe palette (Okabe-Ito, then Tol's muted); cycles with dashes.
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                    "#56B4E9", "#332288", "#882255", "#117733", "#999933"};
constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];
constexpr const char* kRegressionColour = "#C00000";
constexpr const char* kImprovementColour = "#008000";

std::string Colour(size_t i) { return kPalette[i % kPaletteSize]; }
// Series past the palette's end are dashed, so no two look alike.
std::string DashFor(size_t i) { return i < kPaletteSize ? "" : " stroke-dasharray=\"6 3\""; }

std::string Num(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tick label: up to four significant digits; k, M, G from 10,000 on ("200k", "1.5M");
// an exponent only below 1e-3.
std::string TickLabel(double v) {
  char buf[32];
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e4) {
    const char* suffix = a >= 1e9 ? "G" : a >= 1e6 ? "M" : "k";
    const double scaled = v / (a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : 1e3);
    snprintf(buf, sizeof buf, "%.4g%s", scaled, suffix);
  } else if (a < 1e-3) {
    snprintf(buf, sizeof buf, "%.2g", v);
  } else {
    snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

std::string TimeLabel(double epoch_s, bool with_date) {
  const time_t t = static_cast<time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, with_date ? "%m-%d %H:%M" : "%H:%M:%S", &tm);
  return buf;
}

// Cuts `text` to `limit` bytes at a UTF-8 character boundary, with an ellipsis.
std::string Shorten(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t cut = limit - 1;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "\u2026";
}

// Maps data values on one axis to pixels.
struct Mapper {
  AxisScale scale = AxisScale::kLinear;
  double lo = 0, hi = 1;  // data range (for log: of log10 values)
  double p0 = 0, p1 = 1;  // pixel range
  double operator()(double v) const {
    const double t = scale == AxisScale::kLog ? std::log10(v) : v;
    return p0 + (t - lo) / (hi - lo) * (p1 - p0);
  }
};

bool Usable(const ChartAxis& axis, double v) {
  return std::isfinite(v) && (axis.scale != AxisScale::kLog || v > 0);
}

// The data range of an axis, widened so that no point sits on the frame and a single
// value still has a range.
Mapper MakeMapper(const ChartAxis& axis, double lo, double hi, double p0, double p1) {
  Mapper m;
  m.scale = axis.scale;
  m.p0 = p0;
  m.p1 = p1;
  if (axis.scale == AxisScale::kLog) {
    lo = std::log10(lo);
    hi = std::log10(hi);
    const double pad = std::max(0.05, (hi - lo) * 0.06);
    m.lo = lo - pad;
    m.hi = hi + pad;
    return m;
  }
  if (axis.from_zero) lo = std::min(lo, 0.0);
  double span = hi - lo;
  if (span <= 0) span = axis.scale == AxisScale::kTime ? 600 : std::max(std::fabs(hi), 1.0);
  if (hi == lo) {
    lo -= span / 2;
    hi += span / 2;
  }
  m.lo = axis.from_zero && lo == 0 ? 0 : lo - span * 0.06;
  m.hi = hi + span * 0.06;
  return m;
}

// Time ticks at a round step (minutes to weeks) giving about kTargetTicks.
std::vector<double> TimeTicks(double lo, double hi) {
  static const double kSteps[] = {1,     5,         15,        30,         60,        300,
                                  900,   1800,      3600,      3 * 3600,   6 * 3600,  12 * 3600,
                                  86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400};
  double step = kSteps[sizeof kSteps / sizeof kSteps[0] - 1];
  for (double s : kSteps) {
    if ((hi - lo) / s <= kTargetTicks) {
      step = s;
      break;
    }
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi && ticks.size() < 40; t += step)
    ticks.push_back(t);
  return ticks;
}

std::string Text(double x, double y, const std::string& text, const std::string& attrs = "") {
  return "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"" + attrs + ">" + EscapeXml(text) +
         "</text>\n";
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
         Num(y2) + "\" " + attrs + "/>\n";
}

std::string SvgOpen(const std::string& name, double height, const std::string& label) {
  // No xmlns: inline SVG in HTML needs none, and the page names no URL at all.
  return "<svg data-chart=\"" + EscapeXml(name) + "\" width=\"" + Num(kWidth) + "\" height=\"" +
         Num(height) + "\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(height) +
         "\" role=\"img\" aria-label=\"" + EscapeXml(label) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n"
         "<rect x=\"0\" y=\"0\" width=\"" +
         Num(kWidth) + "\" height=\"" + Num(height) + "\" fill=\"#ffffff\"/>\n";
}

struct LegendEntry {
  std::string label;
  std::string swatch;  // SVG drawn at (0,0)-(24,12), translated into place
};

std::string Legend(const std::vector<LegendEntry>& entries, double x, double y) {
  std::string out = "<g class=\"legend\">\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    const double row = y + i * kLegendRow;
    out += "<g transform=\"translate(" + Num(x) + "," + Num(row) + ")\">" + entries[i].swatch +
           "</g>\n";
    out += Text(x + 30, row + 10, Shorten(entries[i].label, kLegendChars));
  }
  return out + "</g>\n";
}

std::string LineSwatch(size_t i) {
  return "<line x1=\"0\" y1=\"6\" x2=\"24\" y2=\"6\" stroke=\"" + Colour(i) +
         "\" stroke-width=\"2\"" + DashFor(i) + "/><circle cx=\"12\" cy=\"6\" r=\"3.5\" fill=\"" +
         Colour(i) + "\"/>";
}

std::string Ring(double cx, double cy, const char* colour) {
  return "<circle class=\"mark\" cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) +
         "\" r=\"8\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2.5\"/>";
}

}  // namespace

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        out += c;
    }
  }
  return out;
}

std::vector<double> LinearTicks(double lo, double hi, int count) {
  std::vector<double> ticks;
  if (!(hi > lo) || count < 1) return ticks;
  const double raw = (hi - lo) / count;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  double step = power * 10;
  for (double f : {1.0, 2.0, 5.0, 10.0}) {
    if (power * f >= raw) {
      step = power * f;
      break;
    }
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

std::vector<double> LogTicks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi >= lo)) return ticks;
  const int first = static_cast<int>(std::floor(std::log10(lo)));
  const int last = static_cast<int>(std::ceil(std::log10(hi)));
  const bool dense = last - first <= 3;  // 1, 2, 5 per decade when few decades
  for (int e = first; e <= last; ++e) {
    for (double f : {1.0, 2.0, 5.0}) {
      if (!dense && f != 1.0) continue;
      const double v = f * std::pow(10, e);
      if (v >= lo * 0.999 && v <= hi * 1.001) ticks.push_back(v);
    }
  }
  return ticks;
}

std::string RenderLineChart(const LineChart& chart) {
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  bool regressions = false, improvements = false;
  for (const ChartSeries& s : chart.series) {
    for (const ChartPoint& p : s.points) {
      if (!Usable(chart.x, p.x) || !Usable(chart.y, p.y)) continue;
      xlo = std::min(xlo, p.x);
      xhi = std::max(xhi, p.x);
      ylo = std::min(ylo, p.y);
      yhi = std::max(yhi, p.y);
      // The error bar must fit in the frame too.
      if (p.y_low && Usable(chart.y, *p.y_low)) ylo = std::min(ylo, *p.y_low);
      if (p.y_high && Usable(chart.y, *p.y_high)) yhi = std::max(yhi, *p.y_high);
      regressions |= p.mark == PointMark::kRegression;
      improvements |= p.mark == PointMark::kImprovement;
    }
  }
  if (xlo > xhi) xlo = xhi = ylo = yhi = 1;  // nothing drawable: an empty frame
  if (chart.ideal_diagonal) {                // the ideal line's span must show
    ylo = std::min(ylo, xlo);
    yhi = std::max(yhi, xhi);
  }
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < chart.series.size(); ++i)
    legend.push_back({chart.series[i].name, LineSwatch(i)});
  if (chart.ideal_diagonal) {
    legend.push_back(
        {"ideal (linear)",
         "<line x1=\"0\" y1=\"6\" x2=\"24\" y2=\"6\" stroke=\"#444\" stroke-width=\"1.5\" "
         "stroke-dasharray=\"5 4\"/>"});
  }
  if (regressions) legend.push_back({"confirmed regression", Ring(12, 6, kRegressionColour)});
  if (improvements) legend.push_back({"confirmed improvement", Ring(12, 6, kImprovementColour)});
  const double height = std::max(kLineHeight, kMarginTop + legend.size() * kLegendRow + 20);
  const double plot_left = kMarginLeft, plot_right = kWidth - kLegendWidth - 10;
  const double plot_top = kMarginTop, plot_bottom = height - kMarginBottom;
  const Mapper mx = MakeMapper(chart.x, xlo, xhi, plot_left, plot_right);
  const Mapper my = MakeMapper(chart.y, ylo, yhi, plot_bottom, plot_top);

  std::string out = SvgOpen(chart.name, height, chart.y.title + " against " + chart.x.title);
  out += "<rect x=\"" + Num(plot_left) + "\" y=\"" + Num(plot_top) + "\" width=\"" +
         Num(plot_right - plot_left) + "\" height=\"" + Num(plot_bottom - plot_top) +
         "\" fill=\"none\" stroke=\"#888\"/>\n";
  // Ticks and grid.
  auto ticks_for = [](const ChartAxis& axis, const Mapper& m) {
    const double lo = axis.scale == AxisScale::kLog ? std::pow(10, m.lo) : m.lo;
    const double hi = axis.scale == AxisScale::kLog ? std::pow(10, m.hi) : m.hi;
    if (axis.scale == AxisScale::kLog) return LogTicks(lo, hi);
    if (axis.scale == AxisScale::kTime) return TimeTicks(lo, hi);
    return LinearTicks(lo, hi, kTargetTicks);
  };
  const std::vector<double> xticks = ticks_for(chart.x, mx);
  const bool with_date = chart.x.scale == AxisScale::kTime && !xticks.empty() &&
                         xticks.back() - xticks.front() >= 86400;
  for (double t : xticks) {
    const double px = mx(t);
    out += Line(px, plot_top, px, plot_bottom, "stroke=\"#e4e4e4\"");
    out += Line(px, plot_bottom, px, plot_bottom + 5, "stroke=\"#444\"");
    out += Text(px, plot_bottom + 18,
                chart.x.scale == AxisScale::kTime ? TimeLabel(t, with_date) : TickLabel(t),
                " text-anchor=\"middle\"");
  }
  for (double t : ticks_for(chart.y, my)) {
    const double py = my(t);
    out += Line(plot_left, py, plot_right, py, "stroke=\"#e4e4e4\"");
    out += Line(plot_left - 5, py, plot_left, py, "stroke=\"#444\"");
    out += Text(plot_left - 8, py + 4, TickLabel(t), " text-anchor=\"end\"");
  }
  // Axis titles; a time axis whose ticks show no date names the day.
  std::string x_title = chart.x.title;
  if (chart.x.scale == AxisScale::kTime && !with_date && !xticks.empty()) {
    const time_t first = static_cast<time_t>(xticks.front());
    std::tm tm{};
    gmtime_r(&first, &tm);
    char day[16];
    strftime(day, sizeof day, "%Y-%m-%d", &tm);
    x_title += ", " + std::string(day);
  }
  out += Text((plot_left + plot_right) / 2, height - 14, x_title,
              " text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\" class=\"axis-title\"");
  out += "<text class=\"axis-title\" transform=\"translate(16," +
         Num((plot_top + plot_bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">" +
         EscapeXml(chart.y.title) + "</text>\n";
  if (chart.ideal_diagonal) {
    const double a = std::max(xlo, ylo), b = std::min(xhi, yhi);
    if (b > a) {
      out += Line(mx(a), my(a), mx(b), my(b),
                  "stroke=\"#444\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\" class=\"ideal\"");
    }
  }
  for (size_t i = 0; i < chart.series.size(); ++i) {
    std::vector<ChartPoint> points;
    for (const ChartPoint& p : chart.series[i].points) {
      if (Usable(chart.x, p.x) && Usable(chart.y, p.y)) points.push_back(p);
    }
    std::stable_sort(points.begin(), points.end(),
                     [](const ChartPoint& a, const ChartPoint& b) { return a.x < b.x; });
    out += "<g class=\"series\">\n";
    if (chart.connect && points.size() > 1) {
      std::string path;
      for (const ChartPoint& p : points)
        path += (path.empty() ? "" : " ") + Num(mx(p.x)) + "," + Num(my(p.y));
      out += "<polyline points=\"" + path + "\" fill=\"none\" stroke=\"" + Colour(i) +
             "\" stroke-width=\"2\"" + DashFor(i) + "/>\n";
    }
    for (const ChartPoint& p : points) {
      const double cx = mx(p.x), cy = my(p.y);
      if (p.y_low && p.y_high && Usable(chart.y, *p.y_low) && Usable(chart.y, *p.y_high)) {
        const double top = my(*p.y_high), bottom = my(*p.y_low);
        constexpr double kCap = 3;
        out += "<path class=\"error-bar\" d=\"M" + Num(cx) + "," + Num(bottom) + "V" + Num(top) +
               "M" + Num(cx - kCap) + "," + Num(top) + "H" + Num(cx + kCap) + "M" + Num(cx - kCap) +
               "," + Num(bottom) + "H" + Num(cx + kCap) + "\" stroke=\"" + Colour(i) +
               "\" stroke-width=\"1.2\" fill=\"none\"/>\n";
      }
      if (p.mark != PointMark::kNone) {
        out += Ring(cx, cy,
                    p.mark == PointMark::kRegression ? kRegressionColour : kImprovementColour) +
               "\n";
      }
      out += "<circle class=\"point\" cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) +
             "\" r=\"4\" fill=\"" + Colour(i) + "\">";
      if (!p.tip.empty()) out += "<title>" + EscapeXml(p.tip) + "</title>";
      out += "</circle>\n";
    }
    out += "</g>\n";
  }
  out += Legend(legend, plot_right + 16, plot_top + 4);
  return out + "</svg>\n";
}

std::string RenderBarChart(const BarChart& chart) {
  const size_t per_category = std::max<size_t>(1, chart.series.size());
  const double group = per_category * kBarHeight + kBarGap;
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    legend.push_back({chart.series[i], "<rect x=\"0\" y=\"0\" width=\"24\" height=\"12\" fill=\"" +
                                           Colour(i) + "\"/>"});
  }
  if (chart.reference) {
    legend.push_back(
        {chart.reference_label.empty() ? "reference" : chart.reference_label,
         "<line x1=\"0\" y1=\"6\" x2=\"24\" y2=\"6\" stroke=\"#444\" stroke-dasharray=\"5 4\"/>"});
  }
  const double plot_left = kCategoryWidth,
               plot_right = kWidth - kLegendWidth - 60;  // room for notes
  const double plot_top = kMarginTop;
  const double plot_bottom = plot_top + std::max<double>(1, chart.categories.size()) * group;
  const double height =
      std::max(plot_bottom + kMarginBottom, kMarginTop + legend.size() * kLegendRow + 20);
  double hi = chart.reference.value_or(0);
  for (const Bar& b : chart.bars) {
    if (std::isfinite(b.value)) hi = std::max(hi, b.value);
  }
  if (hi <= 0) hi = 1;
  ChartAxis axis{chart.value_title, AxisScale::kLinear, true};
  const Mapper mx = MakeMapper(axis, 0, hi, plot_left, plot_right);

  std::string out = SvgOpen(chart.name, height, chart.value_title);
  for (double t : LinearTicks(mx.lo, mx.hi, kTargetTicks)) {
    const double px = mx(t);
    out += Line(px, plot_top, px, plot_bottom, "stroke=\"#e4e4e4\"");
    out += Line(px, plot_bottom, px, plot_bottom + 5, "stroke=\"#444\"");
    out += Text(px, plot_bottom + 18, TickLabel(t), " text-anchor=\"middle\"");
  }
  out += Line(plot_left, plot_top, plot_left, plot_bottom, "stroke=\"#444\"");
  out += Line(plot_left, plot_bottom, plot_right, plot_bottom, "stroke=\"#444\"");
  out += Text((plot_left + plot_right) / 2, plot_bottom + 40, chart.value_title,
              " text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\" class=\"axis-title\"");
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    const double y = plot_top + c * group + kBarGap / 2;
    out += Text(plot_left - 8, y + per_category * kBarHeight / 2 + 4,
                Shorten(chart.categories[c], kCategoryChars), " text-anchor=\"end\"");
  }
  for (const Bar& b : chart.bars) {
    if (!std::isfinite(b.value) || b.category >= chart.categories.size()) continue;
    const double y = plot_top + b.category * group + kBarGap / 2 + b.series * kBarHeight;
    const double w = std::max(0.0, mx(b.value) - plot_left);
    out += "<rect class=\"point\" x=\"" + Num(plot_left) + "\" y=\"" + Num(y + 1) + "\" width=\"" +
           Num(w) + "\" height=\"" + Num(kBarHeight - 2) + "\" fill=\"" + Colour(b.series) +
           "\"><title>" + EscapeXml(chart.categories[b.category] + ": " + TickLabel(b.value)) +
           "</title></rect>\n";
    if (!b.note.empty())
      out += Text(plot_left + w + 4, y + kBarHeight - 3, b.note, " font-size=\"11\"");
  }
  if (chart.reference) {
    const double px = mx(*chart.reference);
    out += Line(px, plot_top, px, plot_bottom,
                "stroke=\"#444\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"");
  }
  out += Legend(legend, kWidth - kLegendWidth + 6, plot_top + 4);
  return out + "</svg>\n";
}

}  // namespace benchfleet
