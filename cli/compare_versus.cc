// `benchfleet compare SWEEP`: a sweep's `versus`, its paired comparisons (docs/results.md,
// Versus): one row per configuration, B over A from its pairs with the interval, the
// verdict and what it could have detected.
#include <iostream>

#include "cli/ci_output.h"
#include "cli/command_support.h"
#include "cli/compare_commands.h"
#include "cli/queries.h"
#include "cli/results_table.h"

namespace benchfleet {

int CompareVersus(Reads& reads, const CompareOptions& options, RowFormat format) {
  const int64_t sweep = options.sweeps[0];
  auto known = reads.Query(KnownSweepsSql(options.sweeps));
  if (!known.ok()) return CannotCompare(known.status());
  if (known->Objects().empty()) return CannotCompare(NotFound("no sweep " + std::to_string(sweep)));
  const std::string state = FormatCell(known->Objects().front().value("state", json()));
  auto rows = reads.Query(VersusOfSweepSql(sweep));
  if (!rows.ok()) return CannotCompare(rows.status());
  if (rows->Objects().empty()) {
    return CannotCompare(NotFound(
        "sweep " + std::to_string(sweep) + " has no paired comparisons (it is " + state +
        "; a sweep names them with versus, schemas/sweep.md); compare two sweeps, or pivot one "
        "with --rows and --cols"));
  }
  const ChangeCounts counts = CountChanges(*rows);
  if (format == RowFormat::kJunit) {
    std::cout << VersusJunit(*rows, sweep);
  } else {
    if (format == RowFormat::kMarkdown) std::cout << "**" << ChangeSummary(counts) << "**\n\n";
    PrintRows(*rows, format);
  }
  return options.fail_on_slower && counts.slower > 0 ? kExitFound : 0;
}

}  // namespace benchfleet
