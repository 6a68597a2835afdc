// Renders rows (column names + arrays of JSON values) as an aligned text table, JSON (an
// array of objects), CSV (RFC 4180 quoting) or a Markdown table (GitHub's pipe tables,
// for a pull-request comment).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

// kJunit is JUnit XML, which only `compare` and `regressions` write (cli/ci_output.h):
// their rows are tests that pass or fail. FormatRows writes it as a table.
enum class RowFormat { kTable, kJson, kCsv, kMarkdown, kJunit };

StatusOr<RowFormat> ParseRowFormat(const std::string& name);

std::string FormatRows(const std::vector<std::string>& columns, const nlohmann::json& rows,
                       RowFormat format);

// A table cell: integers as they are, reals with a precision that suits their size.
std::string FormatCell(const nlohmann::json& value);

// 1536 -> "1.5 KiB", 3.2e9 -> "3.0 GiB".
std::string FormatBytes(double bytes);

}  // namespace benchfleet
