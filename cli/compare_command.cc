// `benchfleet compare`: two sweeps configuration by configuration, or a pivot.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "cli/ci_output.h"
#include "cli/client.h"
#include "cli/command_support.h"
#include "cli/compare.h"
#include "cli/model_upload.h"
#include "cli/queries.h"
#include "cli/results_table.h"
#include "common/client_replies.h"
#include "common/clock.h"
#include "common/files.h"
#include "common/host_pace.h"
#include "common/job_spec.h"
#include "common/median.h"
#include "common/messages.h"
#include "common/model_files.h"
#include "common/result_fields.h"
#include "common/status_reply.h"
#include "common/sweep.h"

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

// Two sweeps, configuration by configuration, on their raw samples.
int CompareTwoSweeps(Reads& reads, const CompareOptions& options, RowFormat format) {
  const int64_t a = options.sweeps[0], b = options.sweeps[1];
  auto known = reads.Query(KnownSweepsSql(options.sweeps));
  if (!known.ok()) return CannotCompare(known.status());
  std::map<int64_t, std::string> state_of;
  for (const json& row : known->Objects())
    state_of[Cell(row, "sweep_id").get<int64_t>()] = FormatCell(Cell(row, "state"));
  for (int64_t id : options.sweeps) {
    if (!state_of.count(id)) return CannotCompare(NotFound("no sweep " + std::to_string(id)));
  }
  auto results = reads.Query(ResultsOfSweepsSql(options.sweeps));
  if (!results.ok()) return CannotCompare(results.status());
  // The first result of each configuration in each sweep (a rerun confirming a
  // regression candidate is a later one).
  std::map<std::string, std::pair<json, json>> cells;  // key -> (row in A, row in B)
  std::vector<std::string> order;
  // The host's pace of each sweep on each host: its results' (docs/regressions.md, Host pace).
  std::map<std::pair<int64_t, std::string>, std::vector<double>> paces;
  for (json& row : results->Objects()) {
    if (const json pace = Cell(row, "host_pace_ms"); pace.is_number() && pace.get<double>() > 0) {
      paces[{Cell(row, "sweep_id").get<int64_t>(), FormatCell(Cell(row, "host"))}].push_back(
          pace.get<double>());
    }
    json config = json::array();
    for (const std::string& name : ConfigColumnNames()) config.push_back(Cell(row, name));
    const std::string key = config.dump();
    if (!cells.count(key)) order.push_back(key);
    auto& cell = cells[key];
    json& side = Cell(row, "sweep_id") == a ? cell.first : cell.second;
    if (side.is_null()) side = std::move(row);
  }
  for (int64_t id : options.sweeps) {
    const bool any = std::any_of(cells.begin(), cells.end(), [&](const auto& entry) {
      return !(id == a ? entry.second.first : entry.second.second).is_null();
    });
    if (!any) {
      return CannotCompare(
          NotFound("sweep " + std::to_string(id) + " has no results (it is " + state_of[id] + ")"));
    }
  }
  std::vector<int64_t> jobs;
  for (const auto& [key, cell] : cells) {
    if (cell.first.is_null() || cell.second.is_null()) continue;
    jobs.push_back(Cell(cell.first, "job_id").get<int64_t>());
    jobs.push_back(Cell(cell.second, "job_id").get<int64_t>());
  }
  if (jobs.empty()) {
    return CannotCompare(NotFound("sweeps " + std::to_string(a) + " and " + std::to_string(b) +
                                  " have no configuration in common with results"));
  }
  // One row per job: its samples as a list (the reply's row limit counts jobs).
  auto samples = reads.Query(CompareSamplesSql(jobs));
  if (!samples.ok()) return CannotCompare(samples.status());
  auto lists = [](const RowsReply& reply, const char* column) {
    std::map<int64_t, std::vector<double>> by_job;
    for (const json& row : reply.Objects()) {
      const json list_text = Cell(row, column);
      std::stringstream list(list_text.is_string() ? list_text.get<std::string>() : "");
      std::string value;
      while (std::getline(list, value, ','))
        by_job[Cell(row, "job_id").get<int64_t>()].push_back(std::stod(value));
    }
    return by_job;
  };
  std::map<int64_t, std::vector<double>> by_job = lists(*samples, "samples");
  // A store from before repeats in processes has no result_processes: compared on samples.
  auto process_rows = reads.Query(CompareProcessMediansSql(jobs));
  const std::map<int64_t, std::vector<double>> processes_of =
      process_rows.ok() ? lists(*process_rows, "medians")
                        : std::map<int64_t, std::vector<double>>();
  // Each side's median with its 95% confidence interval as the worker measured it.
  std::vector<std::string> columns = ConfigColumnNames();
  for (const char* name :
       {"a_median_ms", "a_ci_low_ms", "a_ci_high_ms", "b_median_ms", "b_ci_low_ms", "b_ci_high_ms",
        "ratio", "p", "change", "a_samples", "b_samples", "host_pace_ratio"}) {
    columns.push_back(name);
  }
  json rows = json::array();
  for (const std::string& key : order) {
    const auto& [in_a, in_b] = cells[key];
    if (in_a.is_null() || in_b.is_null()) continue;
    json row = json::parse(key);
    const std::vector<double>& sa = by_job[Cell(in_a, "job_id").get<int64_t>()];
    const std::vector<double>& sb = by_job[Cell(in_b, "job_id").get<int64_t>()];
    const json low_a = Cell(in_a, "median_ci_low_ms"), high_a = Cell(in_a, "median_ci_high_ms");
    const json low_b = Cell(in_b, "median_ci_low_ms"), high_b = Cell(in_b, "median_ci_high_ms");
    const auto pa = processes_of.find(Cell(in_a, "job_id").get<int64_t>());
    const auto pb = processes_of.find(Cell(in_b, "job_id").get<int64_t>());
    // B's host pace over A's, each the mean over its sweep's results on the host; 0: a side
    // has fewer than kHostPaceMinResults (one reference run spreads too much to say).
    auto sweep_pace = [&](int64_t sweep) {
      const auto it = paces.find({sweep, FormatCell(Cell(in_a, "host"))});
      if (it == paces.end() || static_cast<long>(it->second.size()) < kHostPaceMinResults)
        return 0.0;
      double sum = 0;
      for (double pace : it->second) sum += pace;
      return sum / static_cast<double>(it->second.size());
    };
    const double pace_a = sweep_pace(a), pace_b = sweep_pace(b);
    const double pace_ratio = pace_a > 0 && pace_b > 0 ? pace_b / pace_a : 0;
    const json pace_cell = pace_ratio > 0 ? json(pace_ratio) : json(nullptr);
    const bool by_processes = pa != processes_of.end() && pb != processes_of.end() &&
                              pa->second.size() >= 2 && pb->second.size() >= 2;
    if (!by_processes && (sa.empty() || sb.empty())) {
      // Samples pruned: the medians alone cannot say whether the change is real.
      const json median_a = Cell(in_a, "median_ms"), median_b = Cell(in_b, "median_ms");
      const double ma = median_a.is_number() ? median_a.get<double>() : 0;
      const double mb = median_b.is_number() ? median_b.get<double>() : 0;
      for (const json& v :
           {median_a, low_a, high_a, median_b, low_b, high_b, json(ma > 0 ? mb / ma : 0.0),
            json(nullptr), json("no samples"), json(sa.size()), json(sb.size()), pace_cell}) {
        row.push_back(v);
      }
      rows.push_back(std::move(row));
      continue;
    }
    auto judge = [&]() {
      // Both ran in several processes: tested on their medians, the run-to-run spread.
      if (by_processes) return CompareProcesses(pa->second, pb->second, options.ratio);
      SampleComparison c = CompareSamples(sa, sb, options.ratio);
      // Samples taken one after another lean on each other, which the rank test takes
      // for more evidence than it is: a change must also part the two medians' intervals
      // (each already widened for that dependence).
      const bool intervals =
          low_a.is_number() && high_a.is_number() && low_b.is_number() && high_b.is_number();
      if (intervals && low_b.get<double>() <= high_a.get<double>() &&
          low_a.get<double>() <= high_b.get<double>()) {
        c.change = Change::kUnchanged;
      }
      return c;
    };
    const SampleComparison c = judge();
    std::string change = ChangeName(c.change);
    // The host's pace moved beyond the ratio a change must exceed, the same way, and far
    // enough to explain it (common/host_pace.h): the host's.
    if (c.change != Change::kUnchanged && HostPaceExplains(c.ratio, pace_ratio, options.ratio)) {
      change = std::string("host ") + ChangeName(c.change);
    }
    for (const json& v :
         {json(c.median_a), low_a, high_a, json(c.median_b), low_b, high_b, json(c.ratio),
          json(c.test.p), json(change), json(sa.size()), json(sb.size()), pace_cell}) {
      row.push_back(v);
    }
    rows.push_back(std::move(row));
  }
  const RowsReply compared = LocalRows(columns, rows);
  const ChangeCounts counts = CountChanges(compared);
  if (format == RowFormat::kJunit) {
    std::cout << CompareJunit(compared, a, b);
  } else {
    // A pull-request comment opens with the verdict.
    if (format == RowFormat::kMarkdown) std::cout << "**" << ChangeSummary(counts) << "**\n\n";
    PrintRows(compared, format);
  }
  return options.fail_on_slower && counts.slower > 0 ? kExitFound : 0;
}

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

}  // namespace

int CompareCommand(Reads& reads, const CompareOptions& options, RowFormat format) {
  if (options.sweeps.empty() || options.sweeps.size() > 2) {
    return CannotCompare(InvalidArgument("compare takes one or two sweep ids"));
  }
  const bool pivot = !options.rows.empty() || !options.cols.empty();
  if (pivot && (options.rows.empty() || options.cols.empty())) {
    return CannotCompare(InvalidArgument("a pivot needs both --rows and --cols"));
  }
  if (!pivot && options.sweeps.size() != 2) {
    return CannotCompare(
        InvalidArgument("compare SWEEP_A SWEEP_B, or one sweep with --rows and --cols"));
  }
  if (options.sweeps.size() == 2 && options.sweeps[0] == options.sweeps[1]) {
    return CannotCompare(InvalidArgument("compare needs two different sweeps, got sweep " +
                                         std::to_string(options.sweeps[0]) + " twice"));
  }
  if (!(options.ratio > 1)) return CannotCompare(InvalidArgument("--ratio must be above 1"));
  // A pivot has medians, not verdicts: nothing to fail on, no tests to report.
  if (pivot && options.fail_on_slower)
    return CannotCompare(InvalidArgument("--fail-on slower needs two sweeps, not a pivot"));
  if (pivot && format == RowFormat::kJunit) {
    return CannotCompare(InvalidArgument("--format junit needs two sweeps, not a pivot"));
  }
  return pivot ? PivotSweeps(reads, options, format) : CompareTwoSweeps(reads, options, format);
}

}  // namespace benchfleet
