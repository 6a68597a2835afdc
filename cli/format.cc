#include "cli/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace benchfleet {

StatusOr<RowFormat> ParseRowFormat(const std::string& name) {
  if (name == "table") return RowFormat::kTable;
  if (name == "json") return RowFormat::kJson;
  if (name == "csv") return RowFormat::kCsv;
  if (name == "markdown") return RowFormat::kMarkdown;
  if (name == "junit") return RowFormat::kJunit;
  return InvalidArgument("--format must be table, json, csv, markdown or junit, got \"" + name +
                         "\"");
}

std::string FormatCell(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) {
    double v = value.get<double>();
    char buf[64];
    // Four significant digits whatever the magnitude (12.35, 1.235, 0.01235), so a
    // column of times or ratios reads alike; whole numbers from 1000 on, never 1.2e+04.
    const double magnitude = std::fabs(v);
    if (magnitude >= 1000) {
      snprintf(buf, sizeof buf, "%.0f", v);
    } else if (v == 0) {
      return "0";
    } else if (magnitude >= 1e-4) {
      const int decimals = 3 - static_cast<int>(std::floor(std::log10(magnitude)));
      snprintf(buf, sizeof buf, "%.*f", std::max(0, decimals), v);
    } else {
      snprintf(buf, sizeof buf, "%.4g", v);
    }
    return buf;
  }
  return value.dump();
}

namespace {

std::string CsvCell(const nlohmann::json& value) {
  std::string text = value.is_string() ? value.get<std::string>()
                     : value.is_null() ? ""
                                       : value.dump();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

bool IsNumber(const nlohmann::json& value) { return value.is_number(); }

// A cell of a pipe table: '|' escaped, line breaks as <br> (a row is one line).
std::string MarkdownCell(const nlohmann::json& value) {
  std::string out;
  for (char c : FormatCell(value)) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += "<br>";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out;
}

std::string MarkdownRows(const std::vector<std::string>& columns, const nlohmann::json& rows) {
  std::string out = "|";
  for (const auto& name : columns) out += " " + MarkdownCell(name) + " |";
  out += "\n|";
  // Numbers right-aligned, as the text table has them.
  for (size_t c = 0; c < columns.size(); ++c) {
    const bool numbers = !rows.empty() && c < rows[0].size() && IsNumber(rows[0][c]);
    out += numbers ? " ---: |" : " --- |";
  }
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (size_t c = 0; c < columns.size(); ++c)
      out += " " + (c < row.size() ? MarkdownCell(row[c]) : "") + " |";
    out += "\n";
  }
  return out;
}

}  // namespace

std::string FormatRows(const std::vector<std::string>& columns, const nlohmann::json& rows,
                       RowFormat format) {
  std::string out;
  if (format == RowFormat::kJson) {
    nlohmann::json objects = nlohmann::json::array();
    for (const auto& row : rows) {
      nlohmann::json object = nlohmann::json::object();
      for (size_t c = 0; c < columns.size() && c < row.size(); ++c) {
        // A column that holds JSON text (model_args, reruns) nests as JSON, not a string.
        const nlohmann::json& cell = row[c];
        if (cell.is_string() && !cell.get_ref<const std::string&>().empty() &&
            (cell.get_ref<const std::string&>()[0] == '{' ||
             cell.get_ref<const std::string&>()[0] == '[')) {
          nlohmann::json nested = nlohmann::json::parse(cell.get<std::string>(), nullptr, false);
          if (!nested.is_discarded()) {
            object[columns[c]] = std::move(nested);
            continue;
          }
        }
        object[columns[c]] = cell;
      }
      objects.push_back(std::move(object));
    }
    return objects.dump(2) + "\n";
  }
  if (format == RowFormat::kMarkdown) return MarkdownRows(columns, rows);
  if (format == RowFormat::kCsv) {
    for (size_t c = 0; c < columns.size(); ++c) out += (c ? "," : "") + CsvCell(columns[c]);
    out += "\n";
    for (const auto& row : rows) {
      for (size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + CsvCell(row[c]);
      out += "\n";
    }
    return out;
  }
  std::vector<size_t> widths;
  for (const auto& name : columns) widths.push_back(name.size());
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows) {
    std::vector<std::string> line;
    for (size_t c = 0; c < columns.size(); ++c) {
      line.push_back(c < row.size() ? FormatCell(row[c]) : "");
      widths[c] = std::max(widths[c], line.back().size());
    }
    cells.push_back(std::move(line));
  }
  auto pad = [](const std::string& text, size_t width, bool right) {
    std::string fill(width - std::min(width, text.size()), ' ');
    return right ? fill + text : text + fill;
  };
  for (size_t c = 0; c < columns.size(); ++c)
    out += (c ? "  " : "") + pad(columns[c], widths[c], false);
  out += "\n";
  for (size_t c = 0; c < columns.size(); ++c) out += (c ? "  " : "") + std::string(widths[c], '-');
  out += "\n";
  for (size_t r = 0; r < cells.size(); ++r) {
    for (size_t c = 0; c < columns.size(); ++c) {
      bool right = c < rows[r].size() && IsNumber(rows[r][c]);
      out += (c ? "  " : "") + pad(cells[r][c], widths[c], right);
    }
    // Trailing blanks of a left-aligned last column add nothing.
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  return out;
}

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

}  // namespace benchfleet
