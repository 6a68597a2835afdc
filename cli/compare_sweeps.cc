// `benchfleet compare A B`: two sweeps, configuration by configuration, unpaired
// (docs/results.md, Compare).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/ci_output.h"
#include "cli/command_support.h"
#include "cli/compare.h"
#include "cli/compare_commands.h"
#include "cli/queries.h"
#include "cli/results_table.h"
#include "common/host_pace.h"

namespace benchfleet {
namespace {

// A row's value by column name; null when the reply has no such column.
json Cell(const json& row, const std::string& column) {
  auto it = row.find(column);
  return it == row.end() ? json() : *it;
}

std::optional<double> Number(const json& row, const std::string& column) {
  const json value = Cell(row, column);
  return value.is_number() ? std::optional<double>(value.get<double>()) : std::nullopt;
}

// The configuration a result is of, as compare pairs them: ConfigColumnNames(), with a
// model shipped by content and given a `name` keyed on that name instead of its content
// (model_args without sha256), so that "my model before and after a change" pairs.
// `content`: the sha256 left out, if any.
json ConfigKey(const json& row, std::string* content) {
  json config = json::array();
  for (const std::string& name : ConfigColumnNames()) {
    json cell = Cell(row, name);
    if (name == "model_args" && cell.is_string()) {
      json args = json::parse(cell.get<std::string>(), nullptr, false);
      if (args.is_object() && args.contains("name") && args["name"].is_string() &&
          args.contains("sha256")) {
        *content = args["sha256"].is_string() ? args["sha256"].get<std::string>() : "";
        args.erase("sha256");
        cell = args.dump();
      }
    }
    config.push_back(std::move(cell));
  }
  return config;
}

std::map<int64_t, std::vector<double>> ListsByJob(const RowsReply& reply, const char* column) {
  std::map<int64_t, std::vector<double>> by_job;
  for (const json& row : reply.Objects()) {
    const json list_text = Cell(row, column);
    std::stringstream list(list_text.is_string() ? list_text.get<std::string>() : "");
    std::string value;
    while (std::getline(list, value, ','))
      by_job[Cell(row, "job_id").get<int64_t>()].push_back(std::stod(value));
  }
  return by_job;
}

// One configuration both sweeps ran: its row in each, and the content of a model paired
// by name on each side ("" when not).
struct Cell2 {
  json a, b;
  std::string content_a, content_b;
};

std::string PairedByNameNote(const json& key_row, const Cell2& cell) {
  if (cell.content_a.empty() || cell.content_a == cell.content_b) return "";
  json args = json::parse(Cell(key_row, "model_args").get<std::string>(), nullptr, false);
  const std::string name = args.is_object() ? args.value("name", std::string()) : "";
  return "paired by name \"" + name + "\": its contents differ (A " + cell.content_a.substr(0, 12) +
         ", B " + cell.content_b.substr(0, 12) + ")";
}

}  // namespace

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
  std::map<std::string, Cell2> cells;
  std::vector<std::string> order;
  // The host's pace of each sweep on each host: its results' (docs/regressions.md, Host pace).
  std::map<std::pair<int64_t, std::string>, std::vector<double>> paces;
  for (json& row : results->Objects()) {
    if (const auto pace = Number(row, "host_pace_ms"); pace && *pace > 0)
      paces[{Cell(row, "sweep_id").get<int64_t>(), FormatCell(Cell(row, "host"))}].push_back(*pace);
    std::string content;
    const std::string key = ConfigKey(row, &content).dump();
    if (!cells.count(key)) order.push_back(key);
    Cell2& cell = cells[key];
    const bool in_a = Cell(row, "sweep_id") == a;
    json& side = in_a ? cell.a : cell.b;
    if (side.is_null()) {
      side = std::move(row);
      (in_a ? cell.content_a : cell.content_b) = content;
    }
  }
  for (int64_t id : options.sweeps) {
    const bool any = std::any_of(cells.begin(), cells.end(), [&](const auto& entry) {
      return !(id == a ? entry.second.a : entry.second.b).is_null();
    });
    if (!any) {
      return CannotCompare(
          NotFound("sweep " + std::to_string(id) + " has no results (it is " + state_of[id] + ")"));
    }
  }
  std::vector<int64_t> jobs;
  for (const auto& [key, cell] : cells) {
    if (cell.a.is_null() || cell.b.is_null()) continue;
    jobs.push_back(Cell(cell.a, "job_id").get<int64_t>());
    jobs.push_back(Cell(cell.b, "job_id").get<int64_t>());
  }
  if (jobs.empty()) {
    return CannotCompare(NotFound("sweeps " + std::to_string(a) + " and " + std::to_string(b) +
                                  " have no configuration in common with results"));
  }
  // One row per job: its samples as a list (the reply's row limit counts jobs).
  auto samples = reads.Query(CompareSamplesSql(jobs));
  if (!samples.ok()) return CannotCompare(samples.status());
  std::map<int64_t, std::vector<double>> by_job = ListsByJob(*samples, "samples");
  // A store from before repeats in processes has no result_processes: compared on samples.
  auto process_rows = reads.Query(CompareProcessMediansSql(jobs));
  const std::map<int64_t, std::vector<double>> processes_of =
      process_rows.ok() ? ListsByJob(*process_rows, "medians")
                        : std::map<int64_t, std::vector<double>>();
  std::vector<std::string> columns = ConfigColumnNames();
  for (const char* name :
       {"a_median_ms", "a_ci_low_ms", "a_ci_high_ms", "b_median_ms", "b_ci_low_ms", "b_ci_high_ms",
        "ratio", "ratio_ci_low", "ratio_ci_high", "p", "change", "detectable", "a_samples",
        "b_samples", "host_pace_ratio", "host_pace_ci_low", "host_pace_ci_high", "note"}) {
    columns.push_back(name);
  }
  json rows = json::array();
  for (const std::string& key : order) {
    const Cell2& cell = cells[key];
    if (cell.a.is_null() || cell.b.is_null()) continue;
    json row = json::parse(key);
    json key_row = json::object();
    for (size_t i = 0; i < ConfigColumnNames().size(); ++i)
      key_row[ConfigColumnNames()[i]] = row[i];
    const int64_t job_a = Cell(cell.a, "job_id").get<int64_t>();
    const int64_t job_b = Cell(cell.b, "job_id").get<int64_t>();
    const std::vector<double>& sa = by_job[job_a];
    const std::vector<double>& sb = by_job[job_b];
    const json low_a = Cell(cell.a, "median_ci_low_ms"), high_a = Cell(cell.a, "median_ci_high_ms");
    const json low_b = Cell(cell.b, "median_ci_low_ms"), high_b = Cell(cell.b, "median_ci_high_ms");
    const auto pa = processes_of.find(job_a);
    const auto pb = processes_of.find(job_b);
    // B's host pace over A's, from their sweeps' results on the host (at least
    // kHostPaceMinResults a side), with its own interval.
    const std::string host = FormatCell(Cell(cell.a, "host"));
    const std::optional<RatioEstimate> pace = HostPaceRatio(paces[{a, host}], paces[{b, host}]);
    const json pace_cells[] = {pace ? json(pace->ratio) : json(nullptr),
                               pace && pace->valid() ? json(pace->low) : json(nullptr),
                               pace && pace->valid() ? json(pace->high) : json(nullptr)};
    const std::string note = PairedByNameNote(key_row, cell);
    const bool by_processes = pa != processes_of.end() && pb != processes_of.end() &&
                              pa->second.size() >= 2 && pb->second.size() >= 2;
    if (!by_processes && (sa.empty() || sb.empty())) {
      // Samples pruned: the medians alone cannot say whether the change is real.
      const auto ma = Number(cell.a, "median_ms"), mb = Number(cell.b, "median_ms");
      for (const json& v :
           {Cell(cell.a, "median_ms"), low_a, high_a, Cell(cell.b, "median_ms"), low_b, high_b,
            json(ma && mb && *ma > 0 ? *mb / *ma : 0.0), json(nullptr), json(nullptr),
            json(nullptr), json("no samples"), json(nullptr), json(sa.size()), json(sb.size()),
            pace_cells[0], pace_cells[1], pace_cells[2],
            note.empty() ? json(nullptr) : json(note)}) {
        row.push_back(v);
      }
      rows.push_back(std::move(row));
      continue;
    }
    auto interval = [](const json& low, const json& high) -> std::optional<MedianInterval> {
      if (!low.is_number() || !high.is_number()) return std::nullopt;
      return MedianInterval{low.get<double>(), high.get<double>()};
    };
    // Both ran in several processes: tested on their medians, the run-to-run spread.
    const SampleComparison c = by_processes
                                   ? CompareProcesses(pa->second, pb->second, options.ratio)
                                   : CompareSamples(sa, sb, interval(low_a, high_a),
                                                    interval(low_b, high_b), options.ratio);
    std::string change = ChangeName(c.change);
    // The host's pace moved beyond its own noise, the same way, and far enough to explain
    // the change as far as the change's own interval can tell (common/host_pace.h).
    if (c.change != Change::kUnchanged && HostPaceExplains(c.estimate, pace))
      change = std::string("host ") + ChangeName(c.change);
    const bool ranged = c.estimate.valid();
    for (const json& v :
         {json(c.median_a), low_a, high_a, json(c.median_b), low_b, high_b, json(c.estimate.ratio),
          ranged ? json(c.estimate.low) : json(nullptr),
          ranged ? json(c.estimate.high) : json(nullptr), json(c.estimate.p), json(change),
          std::isfinite(c.detectable) ? json(c.detectable) : json(nullptr), json(sa.size()),
          json(sb.size()), pace_cells[0], pace_cells[1], pace_cells[2],
          note.empty() ? json(nullptr) : json(note)}) {
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

}  // namespace benchfleet
