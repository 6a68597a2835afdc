#include "cli/results_table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "common/result_fields.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// The flags, in the order the cell lists them: each a 0/1 column of result_summary and
// the word that stands for it (short, so that two flags fit the compact table).
struct Flag {
  const char* column;
  const char* word;
};
constexpr Flag kFlags[] = {{"noisy", "noisy"},
                           {"unsteady", "unsteady"},
                           {"disturbed", "disturbed"},
                           {"threads_mismatch", "threads"},
                           {"calibration_suspect", "calibration"}};

// One row read by column name; a column the rows lack reads as null.
class RowView {
 public:
  RowView(const std::map<std::string, size_t>& index, const json& row) : index_(index), row_(row) {}
  const json& operator[](const std::string& name) const {
    static const json kNull;
    auto it = index_.find(name);
    return it == index_.end() || it->second >= row_.size() ? kNull : row_[it->second];
  }

 private:
  const std::map<std::string, size_t>& index_;
  const json& row_;
};

std::optional<double> Number(const json& value) {
  if (value.is_number()) return value.get<double>();
  return std::nullopt;
}

bool IsSet(const json& value) {
  return (value.is_boolean() && value.get<bool>()) ||
         (value.is_number() && value.get<double>() != 0);
}

// "1.235 ms ±0.27%": the interval's half-width relative to the median, as sampling
// stopped on it (median_ci_relative), or from its ends where only they are stored.
json MedianCell(const RowView& row) {
  const std::optional<double> median = Number(row["median_ms"]);
  if (!median) return nullptr;
  std::string text = FormatCell(json(*median)) + " ms";
  std::optional<double> relative = Number(row["median_ci_relative"]);
  const std::optional<double> low = Number(row["median_ci_low_ms"]);
  const std::optional<double> high = Number(row["median_ci_high_ms"]);
  if (!relative && low && high && *median > 0) relative = (*high - *low) / 2 / *median;
  if (relative) {
    const double percent = *relative * 100;
    char buf[32];
    std::snprintf(buf, sizeof buf,
                  percent < 1    ? " ±%.2f%%"
                  : percent < 10 ? " ±%.1f%%"
                                 : " ±%.0f%%",
                  percent);
    text += buf;
  }
  return text;
}

json FlagsCell(const RowView& row) {
  std::string flags;
  for (const Flag& flag : kFlags) {
    // An unsteady result is always noisy too (docs/results.md): one word says both.
    if (flag.column == std::string("noisy") && IsSet(row["unsteady"])) continue;
    if (IsSet(row[flag.column])) flags += (flags.empty() ? "" : ",") + std::string(flag.word);
  }
  return flags;
}

json DerivedCell(const std::string& name, const RowView& row) {
  if (name == "batch") return row["batch_size"];
  if (name == "median") return MedianCell(row);
  if (name == "throughput") return row["throughput_per_s"];
  return FlagsCell(row);  // "flags"
}

bool IsDerived(const std::string& name) {
  const auto& derived = DerivedResultColumns();
  return std::find(derived.begin(), derived.end(), name) != derived.end();
}

}  // namespace

const std::vector<std::string>& CompactResultColumns() {
  static const auto* columns =
      new std::vector<std::string>{"host",  "device",  "model",  "mode",       "dtype",
                                   "batch", "threads", "median", "throughput", "flags"};
  return *columns;
}

const std::vector<std::string>& DerivedResultColumns() {
  static const auto* columns =
      new std::vector<std::string>{"batch", "median", "throughput", "flags"};
  return *columns;
}

std::vector<std::string> WideResultColumns() {
  // Across sweeps and models a row must say which sweep, which device and which model
  // arguments it is, and whether the threads asked for were the threads used.
  std::vector<std::string> columns = {"sweep_id",   "job_id", "host",  "device",     "model",
                                      "model_args", "mode",   "dtype", "batch_size", "threads"};
  for (const ResultField& field : ResultFields()) {
    if (field.show && !field.column.empty()) columns.push_back(field.column);
  }
  columns.push_back("threads_mismatch");
  columns.push_back("fraction_of_peak");
  return columns;
}

std::vector<std::string> SplitColumnList(const std::string& text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string name = text.substr(start, comma - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) names.push_back(name);
    start = comma + 1;
  }
  return names;
}

StatusOr<ShownResultRows> ChooseResultColumns(const std::vector<std::string>& columns,
                                              const json& rows, RowFormat format,
                                              const ResultColumnChoice& choice) {
  std::map<std::string, size_t> index;
  for (size_t c = 0; c < columns.size(); ++c) index.emplace(columns[c], c);
  using Kind = ResultColumnChoice::Kind;
  if (choice.kind == Kind::kNamed) {
    if (choice.names.empty()) return InvalidArgument("--columns: name at least one column");
    for (const std::string& name : choice.names) {
      if (index.count(name) || IsDerived(name)) continue;
      std::string known;
      for (const std::string& d : DerivedResultColumns()) known += (known.empty() ? "" : ", ") + d;
      for (const std::string& c : columns) known += ", " + c;
      return InvalidArgument("--columns: unknown column \"" + name + "\"; known: " + known);
    }
  }
  std::vector<std::string> chosen;
  if (choice.kind == Kind::kNamed) {
    chosen = choice.names;
  } else if (format != RowFormat::kTable || choice.kind == Kind::kAll) {
    return ShownResultRows{columns, rows};
  } else {
    std::vector<std::string> wanted =
        choice.kind == Kind::kWide ? WideResultColumns() : CompactResultColumns();
    // A merged store's rows say which site each came from (docs/sites.md).
    const auto site = index.find("site");
    if (site != index.end() && std::any_of(rows.begin(), rows.end(), [&](const json& row) {
          return site->second < row.size() && !row[site->second].is_null();
        })) {
      wanted.insert(wanted.begin(), "site");
    }
    for (const std::string& name : wanted) {
      if (index.count(name) || IsDerived(name)) chosen.push_back(name);
    }
  }
  ShownResultRows shown{chosen, json::array()};
  for (const json& row : rows) {
    const RowView view(index, row);
    json line = json::array();
    for (const std::string& name : chosen) {
      line.push_back(index.count(name) ? view[name] : DerivedCell(name, view));
    }
    shown.rows.push_back(std::move(line));
  }
  return shown;
}

}  // namespace benchfleet
