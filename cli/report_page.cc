#include "cli/report_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "cli/format.h"

namespace benchfleet::report_page {

std::string Str(const json& row, const char* key) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

double Real(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_number() ? it->get<double>() : NAN;
}

// "2026-12-02T03:04:05.678Z" -> seconds since the epoch; NaN when malformed.
double ParseUtc(const std::string& text) {
  std::tm tm{};
  double seconds = 0;
  if (sscanf(text.c_str(), "%d-%d-%dT%d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
             &tm.tm_min, &seconds) != 6) {
    return NAN;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + seconds;
}

std::string NowUtc() {
  const time_t now = time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

AxisScale ScaleFor(const std::vector<double>& values) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    if (v <= 0) return AxisScale::kLinear;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return lo < hi && hi / lo > kLogAxisRatio ? AxisScale::kLog : AxisScale::kLinear;
}

// A chart's name for its data-chart attribute: the section and a model name cut to
// letters, digits, '-' and '_'.
std::string ChartName(const std::string& section, const std::string& model) {
  std::string name = section;
  if (!model.empty()) name += "-";
  for (char c : model)
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return name;
}

// One HTML table of `rows` (objects), `columns` as [key, heading] pairs; every cell escaped.
std::string Table(const std::vector<json>& rows,
                  const std::vector<std::pair<std::string, std::string>>& columns) {
  std::string out = "<table>\n<tr>";
  for (const auto& column : columns) out += "<th>" + EscapeXml(column.second) + "</th>";
  out += "</tr>\n";
  for (const json& row : rows) {
    out += "<tr>";
    for (const auto& column : columns) {
      auto it = row.find(column.first);
      const bool number = it != row.end() && it->is_number();
      out += number ? "<td class=\"num\">" : "<td>";
      out += it == row.end()
                 ? ""
                 : EscapeXml(it->is_string() ? it->get<std::string>() : FormatCell(*it));
      out += "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string Section(const std::string& title, const std::string& caption, const std::string& body) {
  return "<section>\n<h2>" + EscapeXml(title) + "</h2>\n<p class=\"caption\">" +
         EscapeXml(caption) + "</p>\n" + body + "</section>\n";
}

std::string Empty(const std::string& title, const std::string& says) {
  return "<section>\n<h2>" + EscapeXml(title) + "</h2>\n<p class=\"empty\">" + EscapeXml(says) +
         "</p>\n</section>\n";
}

constexpr const char* kPartSeparator = " \u00b7 ";

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    out += (out.empty() ? "" : kPartSeparator) + part;
  }
  return out;
}

namespace {

std::string DropSharedParts(const std::vector<std::string*>& names) {
  if (names.size() < 2) return "";
  std::vector<std::vector<std::string>> parts;
  for (const std::string* name : names) {
    std::vector<std::string> split;
    size_t from = 0;
    for (size_t at; (at = name->find(kPartSeparator, from)) != std::string::npos;
         from = at + strlen(kPartSeparator)) {
      split.push_back(name->substr(from, at - from));
    }
    split.push_back(name->substr(from));
    if (!parts.empty() && split.size() != parts[0].size()) return "";
    parts.push_back(std::move(split));
  }
  std::vector<std::string> shared;
  std::vector<bool> is_shared(parts[0].size(), true);
  for (size_t i = 0; i < parts[0].size(); ++i) {
    for (const auto& split : parts) is_shared[i] = is_shared[i] && split[i] == parts[0][i];
    if (is_shared[i]) shared.push_back(parts[0][i]);
  }
  if (shared.size() == parts[0].size()) return "";
  for (size_t n = 0; n < names.size(); ++n) {
    std::vector<std::string> kept;
    for (size_t i = 0; i < parts[n].size(); ++i) {
      if (!is_shared[i]) kept.push_back(parts[n][i]);
    }
    *names[n] = Join(kept);
  }
  return shared.empty() ? "" : " Every series is " + Join(shared) + ".";
}

}  // namespace

std::string DropShared(std::vector<ChartSeries>* series) {
  std::vector<std::string*> names;
  for (ChartSeries& s : *series) names.push_back(&s.name);
  return DropSharedParts(names);
}

std::string DropShared(std::vector<std::string>* categories) {
  std::vector<std::string*> names;
  for (std::string& c : *categories) names.push_back(&c);
  return DropSharedParts(names);
}

std::string Shown(size_t drawn, size_t all, const char* what) {
  if (drawn >= all) return "";
  return " The chart draws " + std::to_string(drawn) + " of " + std::to_string(all) + " " + what +
         "; the table has them all.";
}

// Rows grouped by model, in first-seen order.
std::vector<std::pair<std::string, std::vector<json>>> ByModel(const std::vector<json>& rows) {
  std::vector<std::pair<std::string, std::vector<json>>> groups;
  for (const json& row : rows) {
    const std::string model = Str(row, "model");
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == model; });
    if (it == groups.end()) {
      groups.push_back({model, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(row);
  }
  return groups;
}

// Series of one chart from rows: key(row) names the series, x and y its point.
std::vector<ChartSeries> SeriesOf(const std::vector<json>& rows,
                                  const std::function<std::string(const json&)>& key, const char* x,
                                  const char* y, size_t* all) {
  std::vector<ChartSeries> series;
  for (const json& row : rows) {
    const std::string name = key(row);
    auto it = std::find_if(series.begin(), series.end(),
                           [&](const ChartSeries& s) { return s.name == name; });
    if (it == series.end()) {
      series.push_back({name, {}});
      it = series.end() - 1;
    }
    it->points.push_back({Real(row, x), Real(row, y), PointMark::kNone, name});
  }
  *all = series.size();
  if (series.size() > kMaxSeriesPerChart) series.resize(kMaxSeriesPerChart);
  return series;
}

std::vector<double> Values(const std::vector<json>& rows, const char* key) {
  std::vector<double> values;
  for (const json& row : rows) values.push_back(Real(row, key));
  return values;
}

}  // namespace benchfleet::report_page
