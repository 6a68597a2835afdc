// Which columns `benchfleet results` shows of result_summary's rows (docs/results.md,
// `benchfleet results`). The default table is compact, made to fit a 120-column terminal:
// the configuration, the median with its confidence interval in one cell, the throughput
// and the flags that say a figure should not be trusted. JSON and CSV keep every column
// unless columns are named, so scripts never lose a field to the terminal's width.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/format.h"
#include "common/status.h"

namespace benchfleet {

// The width the compact table is made for, in characters.
inline constexpr size_t kCompactTableWidth = 120;

struct ResultColumnChoice {
  enum class Kind {
    kCompact,  // the default: CompactResultColumns()
    kWide,     // the configuration, every result field marked `show`, the thread flag and peak
    kAll,      // every column of result_summary
    kNamed,    // `names`, in that order
  };
  Kind kind = Kind::kCompact;
  std::vector<std::string> names;
};

// Rows ready for FormatRows: the chosen columns, in order.
struct ShownResultRows {
  std::vector<std::string> columns;
  nlohmann::json rows = nlohmann::json::array();
};

// The columns of the compact table: result_summary's own (host, device, ...) and the
// derived ones below.
const std::vector<std::string>& CompactResultColumns();

// Columns made from others, which --columns may name too: "batch" (batch_size),
// "median" ("1.235 ms ±0.27%": median_ms and the half-width of its 95% interval
// relative to it), "throughput" (throughput_per_s, samples/s) and "flags" (a word for
// each of noisy, unsteady, disturbed, threads_mismatch ("threads") and
// calibration_suspect ("calibration") that is set; noisy left out beside unsteady,
// which implies it).
const std::vector<std::string>& DerivedResultColumns();

// The wide table's columns, as the table showed them before the compact one.
std::vector<std::string> WideResultColumns();

// "a, b,c" -> {"a", "b", "c"}; empty items are dropped.
std::vector<std::string> SplitColumnList(const std::string& text);

// Picks and derives the columns `choice` asks for from result_summary's `columns` and
// `rows` (arrays of values). A table shows the choice, after a `site` column where any
// row has a site (a merged store, docs/sites.md); JSON and CSV every column unless
// `choice` names some. A named column that is neither a column of the rows nor a derived
// one is InvalidArgument, listing the known names. Columns of the wide or compact set
// that the rows lack (an older store) are left out.
StatusOr<ShownResultRows> ChooseResultColumns(const std::vector<std::string>& columns,
                                              const nlohmann::json& rows, RowFormat format,
                                              const ResultColumnChoice& choice);

}  // namespace benchfleet
