// What a CI job reads from `compare` and `regressions`: JUnit XML (one <testcase> per
// configuration, a <failure> for each that got slower), a Markdown table for a
// pull-request comment, and the counts behind --fail-on (docs/results.md, CI gates).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/client_replies.h"

namespace benchfleet {

struct JunitCase {
  std::string name;
  std::string classname;
  std::optional<std::string> failure;  // the failure's message; none: the case passed
  std::optional<std::string> skipped;  // why the case was not judged
  std::string detail;                  // the body of <failure>: the figures behind it
};

// A JUnit XML document: one <testsuite> named `suite` holding `cases`, every text
// XML-escaped (EscapeXml, cli/svg_chart.h).
std::string JunitXml(const std::string& suite, const std::vector<JunitCase>& cases);

// A configuration as a test's name, from a row object with (some of) the columns model,
// model_args, mode, dtype, batch_size, threads, device, host:
// "mlp inference fp32 batch 32 threads 2 cpu on devbox" (model_args after the model
// when set, not '' or {}).
std::string ConfigurationName(const nlohmann::json& row);

// The cells `compare A B` judged: each row's `change` column.
struct ChangeCounts {
  int slower = 0;
  int faster = 0;
  int unchanged = 0;
  int host = 0;      // "host slower", "host faster": moved as the host's pace did
  int unjudged = 0;  // "no samples": pruned, nothing to test
  int failed = 0;    // "failed": a side of a versus pair failed (its `why`)
};
ChangeCounts CountChanges(const RowsReply& compared);
// "2 slower, 1 faster, 5 unchanged" (and ", 1 moved with the host's pace", ", 1 without
// samples", ", 1 failed" when any).
std::string ChangeSummary(const ChangeCounts& counts);

// `compare A B`'s rows (the columns CompareTwoSweeps makes) as JUnit: a failure for each
// slower configuration, skipped where there were no samples.
std::string CompareJunit(const RowsReply& compared, int64_t sweep_a, int64_t sweep_b);

// `compare SWEEP`'s paired rows (cli/queries.h, VersusOfSweepSql) as JUnit: one case per
// configuration (its versus axis and values in the name), failed when B is slower than A,
// skipped when its pair failed.
std::string VersusJunit(const RowsReply& compared, int64_t sweep_id);

// `regressions`' rows (cli/queries.h, ConfirmedRegressionsSql) as JUnit: one case per
// configuration, failed when any of its confirmed changes is slower (a regression);
// faster ones (improvements) pass.
std::string RegressionsJunit(const RowsReply& confirmed, const std::string& since);
// The confirmed regressions (direction slower) among `confirmed`.
int CountRegressions(const RowsReply& confirmed);

}  // namespace benchfleet
