// `benchfleet report`: one self-contained HTML page (inline SVG charts and CSS, no
// scripts, no external references) of a sweep or of every sweep within an age:
// throughput against batch size, CPU-vs-GPU speedup, thread scaling against the ideal,
// int8/bf16 against fp32 with their accuracy loss, data- and model-parallel efficiency,
// each series' history with confirmed regressions marked, and per model the
// recommendation of `benchfleet recommend` (docs/results.md, Reports).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "common/client_replies.h"
#include "common/status.h"

namespace benchfleet {

struct ReportOptions {
  std::optional<int64_t> sweep;  // this sweep; else every sweep with results within `since`
  std::string since = "7d";      // ParseAge
  std::string out;               // the HTML file written
};

// Runs one read-only SQL statement; returns its rows.
using ReportQuery = std::function<StatusOr<RowsReply>(const std::string& sql)>;

// The page's HTML. NotFound when `options.sweep` does not exist; InvalidArgument for a
// malformed `since`; a query's own error otherwise.
StatusOr<std::string> BuildReport(const ReportQuery& query, const ReportOptions& options);

// Reads through `reads` (the coordinator, or a store file with --db), writes
// `options.out`. Exit codes as cli/commands.h.
int ReportCommand(Reads& reads, const ReportOptions& options);

}  // namespace benchfleet
