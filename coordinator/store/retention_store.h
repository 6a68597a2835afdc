// The store's retention (benchfleet prune, coordinator/store/pruner.h, coordinator/store/store.h):
// dropping old raw samples in steps and giving their space back to the file system.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

class RetentionStore {
 public:
  // `path` names the store in what is logged.
  RetentionStore(Database& db, std::string path) : db_(&db), path_(std::move(path)) {}

  // The time `seconds_ago` before now, formatted as results.received_at is.
  StatusOr<std::string> ReceivedAtCutoff(double seconds_ago);
  // The highest job id with raw samples (0: none).
  StatusOr<int64_t> LastSampledJobId();
  // Drops the raw samples (result_samples rows) of results received before `cutoff` among
  // job ids in (after, last]; the results and their summaries stay. Returns how many
  // results lost their samples.
  StatusOr<int> DropSamples(const std::string& cutoff, int64_t after, int64_t last);
  // Gives up to `pages` free pages back to the file system (incremental vacuum); returns
  // how many free pages remain. A store still without incremental vacuum (it could not
  // be switched when opened) is vacuumed in full instead (it then returns 0).
  StatusOr<int64_t> ReclaimFreePages(int pages);
  // The database's size: pages in use and free, times the page size.
  StatusOr<int64_t> SizeBytes();

 private:
  Database* db_;
  std::string path_;
};

}  // namespace benchfleet
