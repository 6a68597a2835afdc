// The parts of `benchfleet compare` (docs/results.md, Compare), one file each:
// CompareCommand (compare_command.cc) checks the flags and picks one.
#pragma once

#include "cli/commands.h"
#include "cli/reads.h"

namespace benchfleet {

// Two sweeps, configuration by configuration, unpaired (compare_sweeps.cc).
int CompareTwoSweeps(Reads& reads, const CompareOptions& options, RowFormat format);
// One sweep's `versus`: its paired comparisons (compare_versus.cc).
int CompareVersus(Reads& reads, const CompareOptions& options, RowFormat format);
// One or two sweeps' medians pivoted (compare_command.cc).
int PivotSweeps(Reads& reads, const CompareOptions& options, RowFormat format);

}  // namespace benchfleet
