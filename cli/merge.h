// `benchfleet merge OUT SITE...` (docs/sites.md): the stores of several coordinators
// merged into one store for reading (--db), which no coordinator serves.
//
// Each store merged is a site, known by its store id (store_identity), so merging a
// store, or a copy of it, again adds only what it gained since. Sweeps that have ended
// are taken whole, with their jobs, results, samples, ranks, processes, profiles,
// calibrations and regressions; a sweep still running at its site is left out until it
// has ended. Sweeps, jobs and the other rows with an id of their own are numbered anew in
// the merged store, each keeping its site and its id there (site_rows); a host seen by
// several sites is one host, by its machine id. The store is written beside OUT and
// renamed over it only once whole: a merge that fails leaves OUT as it was, or absent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

// A store to merge, as `merge` takes it: PATH, or NAME=PATH to name its site.
struct MergeInput {
  std::string path;
  std::string site;  // empty: the file's name without its extension
};
// "PATH" or "NAME=PATH" (an argument that names an existing file is a path, '=' or not).
MergeInput ParseMergeInput(const std::string& argument);

// What merging one store added.
struct SiteMerged {
  std::string site;
  std::string path;
  int64_t sweeps = 0, jobs = 0, results = 0;
  int64_t hosts_added = 0;     // hosts new to the merged store
  int64_t hosts_matched = 0;   // hosts it already had (the same machine seen by another site)
  int64_t sweeps_before = 0;   // sweeps of this site merged by an earlier merge
  int64_t sweeps_running = 0;  // left out: still running at the site
};

struct MergeSummary {
  std::vector<SiteMerged> merged;                         // one per input, in order
  int64_t sites = 0, sweeps = 0, hosts = 0, results = 0;  // the merged store's, in all
};

// Merges `inputs` into the store at `out` (made when absent; else a store an earlier
// merge wrote). Every input is checked before anything is written. InvalidArgument for
// what the user gave: a file that is missing, not an SQLite database, not a benchfleet
// store, a merged store, a store of another schema version than this benchfleet's (both
// named), a store another process has open (a coordinator serving it), a store whose
// rows contradict those merged from it before (a copy that another coordinator went on
// writing), an `out` that is a coordinator's store. Other errors (a full disk) are
// Unavailable or Internal. Either way `out` is as it was.
StatusOr<MergeSummary> MergeStores(const std::string& out, const std::vector<MergeInput>& inputs);

}  // namespace benchfleet
