// How `benchfleet merge` copies one site's rows (cli/merge.h, docs/sites.md): table by
// table, each row's ids numbered anew in the merged store through one map per table
// (the site's id -> the merged store's), and every row with an id of its own recorded in
// site_rows, so that the next merge of the same store finds it there and adds it no more.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/merge.h"
#include "common/status.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

// The site in the merged store: its row of `sites`.
struct SiteRow {
  int64_t site_id = 0;
  std::string name;
};

// Copies into `db`'s main store what the store attached to it as `src` has and the main
// store lacks: its ended sweeps with everything that hangs on them, its hosts (each
// matched to a host the main store has, by machine id, or added), schedules, price
// changes and baseline resets. Inside the caller's transaction; counts go to `merged`.
// InvalidArgument when the site's store contradicts what was merged from it before (a
// sweep of one id with another creation time: a copy another coordinator went on
// writing).
Status MergeSiteRows(Database& db, const SiteRow& site, SiteMerged* merged);

// The tables MergeSiteRows copies, in its order, and those it leaves, each with why: with
// the schema's tables they are all (tests/merge_test.cc checks it), so a table added to
// the schema without a rule here fails that test rather than being left out unseen.
std::vector<std::string> MergedTables();
std::vector<std::pair<std::string, std::string>> TablesNotMerged();

}  // namespace benchfleet
