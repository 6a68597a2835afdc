// Renders rows (column names + arrays of JSON values) as an aligned text table, JSON (an
// array of objects) or CSV (RFC 4180 quoting).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

enum class RowFormat { kTable, kJson, kCsv };

StatusOr<RowFormat> ParseRowFormat(const std::string& name);

std::string FormatRows(const std::vector<std::string>& columns, const nlohmann::json& rows,
                       RowFormat format);

// A table cell: integers as they are, reals with a precision that suits their size.
std::string FormatCell(const nlohmann::json& value);

// 1536 -> "1.5 KiB", 3.2e9 -> "3.0 GiB".
std::string FormatBytes(double bytes);

}  // namespace benchfleet
