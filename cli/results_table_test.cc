#include "cli/results_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "common/result_fields.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// result_summary's columns as a store has them: the configuration, every declared result
// column, then the calibration and bookkeeping columns (docs/results.md).
std::vector<std::string> SummaryColumns() {
  std::vector<std::string> columns = {
      "sweep",      "sweep_id", "job_id",          "host",   "device",    "model", "mode", "dtype",
      "batch_size", "threads",  "interop_threads", "onednn", "model_args"};
  for (const ResultField& field : ResultFields()) {
    if (!field.column.empty()) columns.push_back(field.column);
  }
  for (const char* c : {"peak_gflops", "fraction_of_peak", "calibration_suspect", "attempt",
                        "finished_at", "site"}) {
    columns.push_back(c);
  }
  return columns;
}

// One row by column name; every other column null, as for a field a job did not report.
json Row(const std::vector<std::string>& columns, const json& values) {
  json row = json::array();
  for (const std::string& c : columns) row.push_back(values.contains(c) ? values[c] : json());
  return row;
}

// Rows like the quickstart's and a GPU fleet's: long host names, the longest model and
// mode names, a flagged result, a slow one and a fast one.
json RealisticRows(const std::vector<std::string>& columns) {
  json rows = json::array();
  rows.push_back(Row(columns, {{"sweep", "cpu-mlp"},
                               {"sweep_id", 1},
                               {"job_id", 3},
                               {"host", "quickstart-a"},
                               {"device", "cpu"},
                               {"model", "mlp"},
                               {"mode", "inference"},
                               {"dtype", "fp32"},
                               {"batch_size", 64},
                               {"threads", 2},
                               {"model_args", "{\"hidden\": [1024, 1024]}"},
                               {"n", 1181},
                               {"median_ms", 1.0612},
                               {"median_ci_low_ms", 1.0581},
                               {"median_ci_high_ms", 1.0639},
                               {"median_ci_relative", 0.0027},
                               {"noisy", 0},
                               {"unsteady", 0},
                               {"disturbed", 0},
                               {"throughput_per_s", 60309.1},
                               {"threads_mismatch", 0},
                               {"calibration_suspect", 0},
                               {"finished_at", "2026-12-03T17:49:12Z"}}));
  rows.push_back(Row(columns, {{"sweep", "zoo"},
                               {"sweep_id", 2},
                               {"job_id", 41},
                               {"host", "quickstart-b"},
                               {"device", "cpu"},
                               {"model", "transformer"},
                               {"mode", "inference"},
                               {"dtype", "int8"},
                               {"batch_size", 8},
                               {"threads", 2},
                               {"n", 356},
                               {"median_ms", 18.734},
                               {"median_ci_low_ms", 16.9},
                               {"median_ci_high_ms", 20.8},
                               {"median_ci_relative", 0.104},
                               {"noisy", 1},
                               {"unsteady", 1},
                               {"disturbed", 1},
                               {"throughput_per_s", 427.0},
                               {"threads_mismatch", 0}}));
  rows.push_back(Row(columns, {{"sweep", "gpu-nightly"},
                               {"sweep_id", 3},
                               {"job_id", 9071},
                               {"host", "gpu-h100-01"},
                               {"device", "cuda:0"},
                               {"model", "cnn"},
                               {"mode", "train"},
                               {"dtype", "bf16"},
                               {"batch_size", 256},
                               {"threads", 1},
                               {"n", 40},
                               {"median_ms", 1234.6},
                               {"median_ci_low_ms", 1230.1},
                               {"median_ci_high_ms", 1240.2},
                               {"noisy", 0},
                               {"unsteady", 0},
                               {"disturbed", 0},
                               {"throughput_per_s", 207.4},
                               {"threads_mismatch", 1},
                               {"calibration_suspect", 1}}));
  return rows;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Characters as a terminal counts them: "±" is two bytes of UTF-8, one column.
size_t DisplayWidth(const std::string& line) {
  return std::count_if(line.begin(), line.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

TEST(ResultsTableTest, TheDefaultTableIsCompactAndFitsIn120Columns) {
  const auto columns = SummaryColumns();
  auto shown = ChooseResultColumns(columns, RealisticRows(columns), RowFormat::kTable, {});
  ASSERT_TRUE(shown.ok()) << shown.status().message();
  EXPECT_EQ(shown->columns, CompactResultColumns());
  const std::string table = FormatRows(shown->columns, shown->rows, RowFormat::kTable);
  const auto lines = Lines(table);
  ASSERT_EQ(lines.size(), 5u) << table;
  for (const std::string& line : lines) EXPECT_LE(DisplayWidth(line), kCompactTableWidth) << line;
  EXPECT_EQ(lines[0].rfind("host", 0), 0u) << lines[0];
  // The median with the half-width of its interval, relative to it.
  EXPECT_NE(lines[2].find("1.061 ms ±0.27%"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("18.73 ms ±10%"), std::string::npos) << lines[3];
  // No median_ci_relative: from the interval's ends, (1240.2 - 1230.1) / 2 / 1234.6.
  EXPECT_NE(lines[4].find("1235 ms ±0.41%"), std::string::npos) << lines[4];
  // Flags: unsteady says noisy too; a clean row has none.
  EXPECT_NE(lines[3].find("unsteady,disturbed"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[3].find("noisy"), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find("threads,calibration"), std::string::npos) << lines[4];
  EXPECT_EQ(shown->rows[0][9], "");
}

// A merged store's rows (docs/sites.md): the site first, wider by that column alone.
TEST(ResultsTableTest, AMergedStoresTableNamesTheSiteFirst) {
  const auto columns = SummaryColumns();
  json rows = RealisticRows(columns);
  const size_t site = columns.size() - 1;
  for (json& row : rows) row[site] = "frankfurt-lab";
  for (auto kind : {ResultColumnChoice::Kind::kCompact, ResultColumnChoice::Kind::kWide}) {
    auto shown = ChooseResultColumns(columns, rows, RowFormat::kTable, {kind, {}});
    ASSERT_TRUE(shown.ok());
    ASSERT_FALSE(shown->columns.empty());
    EXPECT_EQ(shown->columns[0], "site");
    EXPECT_EQ(shown->rows[0][0], "frankfurt-lab");
  }
  auto compact = ChooseResultColumns(columns, rows, RowFormat::kTable, {});
  ASSERT_TRUE(compact.ok());
  for (const std::string& line :
       Lines(FormatRows(compact->columns, compact->rows, RowFormat::kTable))) {
    EXPECT_LE(DisplayWidth(line), kCompactTableWidth + std::string("frankfurt-lab  ").size())
        << line;
  }
}

TEST(ResultsTableTest, WideAndAllColumnsShowMore) {
  const auto columns = SummaryColumns();
  const json rows = RealisticRows(columns);
  auto wide =
      ChooseResultColumns(columns, rows, RowFormat::kTable, {ResultColumnChoice::Kind::kWide, {}});
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->columns, WideResultColumns());
  EXPECT_EQ(wide->rows[2][wide->columns.size() - 1], nullptr);  // fraction_of_peak: not calibrated
  auto all =
      ChooseResultColumns(columns, rows, RowFormat::kTable, {ResultColumnChoice::Kind::kAll, {}});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->columns, columns);
  EXPECT_EQ(all->rows, rows);
}

TEST(ResultsTableTest, NamedColumnsInTheirOrderDerivedOnesIncluded) {
  const auto columns = SummaryColumns();
  ResultColumnChoice choice{ResultColumnChoice::Kind::kNamed,
                            SplitColumnList("model, median,p99_ms,flags")};
  auto shown = ChooseResultColumns(columns, RealisticRows(columns), RowFormat::kTable, choice);
  ASSERT_TRUE(shown.ok()) << shown.status().message();
  EXPECT_EQ(shown->columns, (std::vector<std::string>{"model", "median", "p99_ms", "flags"}));
  EXPECT_EQ(shown->rows[2], json::parse(R"(["cnn", "1235 ms ±0.41%", null,
                                            "threads,calibration"])"));
  // Named columns narrow JSON and CSV too.
  auto csv = ChooseResultColumns(columns, RealisticRows(columns), RowFormat::kCsv, choice);
  ASSERT_TRUE(csv.ok());
  EXPECT_EQ(csv->columns.size(), 4u);
}

TEST(ResultsTableTest, JsonAndCsvKeepEveryColumnUnlessNamed) {
  const auto columns = SummaryColumns();
  const json rows = RealisticRows(columns);
  for (RowFormat format : {RowFormat::kJson, RowFormat::kCsv}) {
    for (auto kind : {ResultColumnChoice::Kind::kCompact, ResultColumnChoice::Kind::kWide}) {
      auto shown = ChooseResultColumns(columns, rows, format, {kind, {}});
      ASSERT_TRUE(shown.ok());
      EXPECT_EQ(shown->columns, columns);
      EXPECT_EQ(shown->rows, rows);
    }
  }
}

TEST(ResultsTableTest, AnUnknownColumnIsAnErrorListingTheKnownOnes) {
  const auto columns = SummaryColumns();
  auto shown = ChooseResultColumns(columns, RealisticRows(columns), RowFormat::kJson,
                                   {ResultColumnChoice::Kind::kNamed, {"host", "medain"}});
  ASSERT_FALSE(shown.ok());
  EXPECT_EQ(shown.status().code(), StatusCode::kInvalidArgument);  // the CLI exits 2
  const std::string& message = shown.status().message();
  EXPECT_NE(message.find("unknown column \"medain\""), std::string::npos) << message;
  EXPECT_NE(message.find("median, throughput, flags"), std::string::npos) << message;
  EXPECT_NE(message.find("median_ms"), std::string::npos) << message;
  EXPECT_NE(message.find("finished_at"), std::string::npos) << message;
  EXPECT_FALSE(ChooseResultColumns(columns, json::array(), RowFormat::kTable,
                                   {ResultColumnChoice::Kind::kNamed, SplitColumnList(" , ")})
                   .ok());
}

TEST(ResultsTableTest, ColumnsAnOlderStoreLacksAreLeftOutOfTheDefault) {
  const std::vector<std::string> columns = {"host", "model", "batch_size", "median_ms"};
  auto shown =
      ChooseResultColumns(columns, json::parse(R"([["a", "mlp", 8, 2.5]])"), RowFormat::kTable, {});
  ASSERT_TRUE(shown.ok());
  // host, model, then the derived ones, which read what there is.
  EXPECT_EQ(shown->columns,
            (std::vector<std::string>{"host", "model", "batch", "median", "throughput", "flags"}));
  EXPECT_EQ(shown->rows[0], json::parse(R"(["a", "mlp", 8, "2.500 ms", null, ""])"));
}

}  // namespace
}  // namespace benchfleet
