// `benchfleet compare`: the flags checked, then two sweeps configuration by
// configuration (compare_sweeps.cc), one sweep's paired `versus` (compare_versus.cc), or
// a pivot (here).
#include <algorithm>
#include <map>

#include "cli/command_support.h"
#include "cli/compare_commands.h"
#include "cli/queries.h"
#include "cli/results_table.h"
#include "common/median.h"

namespace benchfleet {

namespace {

// A row's value by column name; null when the reply has no such column.
json Cell(const json& row, const std::string& column) {
  auto it = row.find(column);
  return it == row.end() ? json() : *it;
}

std::string SweepList(const std::vector<int64_t>& sweeps) {
  std::string list;
  for (int64_t id : sweeps) list += (list.empty() ? "" : ", ") + std::to_string(id);
  return list;
}

}  // namespace

// One or two sweeps' medians pivoted: `rows` by `cols`, with each cell's precision (its
// median's 95% interval, half-width / median; the widest where a cell has several
// results) and the ratio to the baseline column.
int PivotSweeps(Reads& reads, const CompareOptions& options, RowFormat format) {
  static const std::vector<std::string> kRowKeys = {"model",   "batch_size", "mode", "dtype",
                                                    "threads", "device",     "host", "model_args"};
  static const std::vector<std::string> kColKeys = {"host", "device", "dtype", "threads", "sweep"};
  for (const std::string& r : options.rows) {
    if (std::find(kRowKeys.begin(), kRowKeys.end(), r) == kRowKeys.end()) {
      return CannotCompare(
          InvalidArgument("--rows: \"" + r +
                          "\" is not one of model, batch_size, mode, dtype, threads, "
                          "device, host, model_args"));
    }
  }
  if (std::find(kColKeys.begin(), kColKeys.end(), options.cols) == kColKeys.end()) {
    return CannotCompare(InvalidArgument(
        "--cols must be host, device, dtype, threads or sweep, got \"" + options.cols + "\""));
  }
  auto results = reads.Query(PivotMediansSql(options.rows, options.cols, options.sweeps));
  if (!results.ok()) return CannotCompare(results.status());
  std::map<std::string, std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>>
      cells;
  std::vector<std::string> row_order;
  std::vector<std::string> col_values;
  for (const json& row : results->Objects()) {
    json key = json::array();
    for (const std::string& name : options.rows) key.push_back(Cell(row, name));
    const std::string col_value = FormatCell(Cell(row, "pivot_column"));
    if (!cells.count(key.dump())) row_order.push_back(key.dump());
    if (std::find(col_values.begin(), col_values.end(), col_value) == col_values.end())
      col_values.push_back(col_value);
    auto& cell = cells[key.dump()][col_value];
    if (const json median = Cell(row, "median_ms"); median.is_number()) {
      cell.first.push_back(median.get<double>());
      if (const json relative = Cell(row, "median_ci_relative"); relative.is_number()) {
        cell.second.push_back(relative.get<double>());
      }
    }
  }
  if (row_order.empty())
    return CannotCompare(NotFound("no results in sweep(s) " + SweepList(options.sweeps)));
  std::sort(row_order.begin(), row_order.end());
  std::sort(col_values.begin(), col_values.end());
  const std::string baseline = options.baseline.empty() ? col_values.front() : options.baseline;
  if (std::find(col_values.begin(), col_values.end(), baseline) == col_values.end()) {
    return CannotCompare(
        InvalidArgument("--baseline \"" + baseline + "\" is no value of " + options.cols));
  }
  std::vector<std::string> columns = options.rows;
  for (const std::string& v : col_values) {
    columns.push_back(options.cols + " " + v + " ms");
    columns.push_back(options.cols + " " + v + " ci +-");
    if (v != baseline) columns.push_back(options.cols + " " + v + " / " + baseline);
  }
  json rows = json::array();
  for (const std::string& key : row_order) {
    json row = json::parse(key);
    const auto& by_col = cells[key];
    auto median_at = [&](const std::string& v) -> json {
      auto it = by_col.find(v);
      return it == by_col.end() || it->second.first.empty() ? json(nullptr)
                                                            : json(Median(it->second.first));
    };
    const json base = median_at(baseline);
    for (const std::string& v : col_values) {
      const json median = median_at(v);
      row.push_back(median);
      auto it = by_col.find(v);
      row.push_back(
          it == by_col.end() || it->second.second.empty()
              ? json(nullptr)
              : json(*std::max_element(it->second.second.begin(), it->second.second.end())));
      if (v != baseline) {
        row.push_back(median.is_number() && base.is_number() && base.get<double>() > 0
                          ? json(median.get<double>() / base.get<double>())
                          : json(nullptr));
      }
    }
    rows.push_back(std::move(row));
  }
  PrintRows(LocalRows(columns, rows), format);
  return 0;
}

int CompareCommand(Reads& reads, const CompareOptions& options, RowFormat format) {
  if (options.sweeps.empty() || options.sweeps.size() > 2) {
    return CannotCompare(InvalidArgument("compare takes one or two sweep ids"));
  }
  const bool pivot = !options.rows.empty() || !options.cols.empty();
  if (pivot && (options.rows.empty() || options.cols.empty())) {
    return CannotCompare(InvalidArgument("a pivot needs both --rows and --cols"));
  }

  if (options.sweeps.size() == 2 && options.sweeps[0] == options.sweeps[1]) {
    return CannotCompare(InvalidArgument("compare needs two different sweeps, got sweep " +
                                         std::to_string(options.sweeps[0]) + " twice"));
  }
  if (!(options.ratio > 1)) return CannotCompare(InvalidArgument("--ratio must be above 1"));
  // A pivot has medians, not verdicts: nothing to fail on, no tests to report.
  if (pivot && options.fail_on_slower)
    return CannotCompare(
        InvalidArgument("--fail-on slower needs verdicts: two sweeps, or one with "
                        "versus, not a pivot"));
  if (pivot && format == RowFormat::kJunit) {
    return CannotCompare(
        InvalidArgument("--format junit needs verdicts: two sweeps, or one with "
                        "versus, not a pivot"));
  }
  if (pivot) return PivotSweeps(reads, options, format);
  // One sweep: its paired comparisons (versus); two: unpaired, cell by cell.
  return options.sweeps.size() == 1 ? CompareVersus(reads, options, format)
                                    : CompareTwoSweeps(reads, options, format);
}

}  // namespace benchfleet
