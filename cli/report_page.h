// The building blocks of the `benchfleet report` page: rows of a query reply, the
// page's sections and tables (every cell escaped), and the series of its charts.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/svg_chart.h"

namespace benchfleet::report_page {

using nlohmann::json;

// Series drawn in one chart; the rest stay in its table (a chart of 100 lines is
// unreadable).
inline constexpr size_t kMaxSeriesPerChart = 12;
// An axis spanning more than this ratio of its largest to its smallest value is
// drawn logarithmic.
inline constexpr double kLogAxisRatio = 20;

// A row's value as text ("" when absent or null), or as a number (NaN when not one).
std::string Str(const json& row, const char* key);
double Real(const json& row, const char* key);
// "2026-12-02T03:04:05.678Z" -> seconds since the epoch; NaN when malformed.
double ParseUtc(const std::string& text);
// "2026-12-02 03:04:05 UTC"
std::string NowUtc();

// Logarithmic when every value is positive and they span more than kLogAxisRatio.
AxisScale ScaleFor(const std::vector<double>& values);
// `values[key]` of each row.
std::vector<double> Values(const std::vector<json>& rows, const char* key);
// A chart's data-chart name: the section and a model name cut to letters, digits, '-', '_'.
std::string ChartName(const std::string& section, const std::string& model);

// One HTML table of `rows`, `columns` as [key, heading] pairs; every cell escaped.
std::string Table(const std::vector<json>& rows,
                  const std::vector<std::pair<std::string, std::string>>& columns);
// A section: its <h2> title, a one-line caption, then `body` (HTML).
std::string Section(const std::string& title, const std::string& caption, const std::string& body);
// A section without data: its title and the one line that says so.
std::string Empty(const std::string& title, const std::string& says);

// The non-empty parts joined with " · ".
std::string Join(const std::vector<std::string>& parts);
// Drops from the names ("devbox · cpu · fp32 · 1 thr", ...) the parts every one of them
// shares, so a legend names only what differs; returns a caption sentence naming the
// shared parts ("" when none).
std::string DropShared(std::vector<ChartSeries>* series);
std::string DropShared(std::vector<std::string>* categories);
// The caption's note when a chart draws fewer of `what` than its table has ("" when all).
std::string Shown(size_t drawn, size_t all, const char* what);

// Rows grouped by model, in first-seen order.
std::vector<std::pair<std::string, std::vector<json>>> ByModel(const std::vector<json>& rows);
// The series of one chart: key(row) names a row's series, columns x and y its point; at
// most kMaxSeriesPerChart of them, `*all` says how many there were.
std::vector<ChartSeries> SeriesOf(const std::vector<json>& rows,
                                  const std::function<std::string(const json&)>& key, const char* x,
                                  const char* y, size_t* all);

}  // namespace benchfleet::report_page
