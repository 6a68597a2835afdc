#include "coordinator/store/retention_store.h"

#include <cmath>

#include "common/clock.h"
#include "common/log.h"

namespace benchfleet {

StatusOr<std::string> RetentionStore::ReceivedAtCutoff(double seconds_ago) {
  // Formatted as every stored time is (UtcIso8601), so the cutoff compares as text.
  // Up to 10,000 years back: beyond that there is no time to format.
  if (!std::isfinite(seconds_ago) || std::fabs(seconds_ago) > 3.2e11) {
    return InvalidArgument("no time " + std::to_string(seconds_ago) + " s ago");
  }
  return UtcIso8601(UnixMicrosNow() - static_cast<int64_t>(std::llround(seconds_ago * 1e6)));
}

StatusOr<int64_t> RetentionStore::LastSampledJobId() {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT COALESCE(max(job_id), 0) FROM result_samples"));
  RETURN_IF_ERROR(stmt.Step().status());
  return stmt.Int(0);
}

StatusOr<int> RetentionStore::DropSamples(const std::string& cutoff, int64_t after, int64_t last) {
  ASSIGN_OR_RETURN(auto drop,
                   db_->Prepare("DELETE FROM result_samples WHERE job_id > ?1 AND job_id <= ?2 AND "
                                "job_id IN (SELECT job_id FROM results WHERE job_id > ?1 AND "
                                "job_id <= ?2 AND received_at < ?3)"));
  RETURN_IF_ERROR(drop.Bind(1, after).Bind(2, last).Bind(3, cutoff).Run());
  return db_->Changes();
}

StatusOr<int64_t> RetentionStore::ReclaimFreePages(int pages) {
  auto pragma = [&](const std::string& sql) -> StatusOr<int64_t> {
    ASSIGN_OR_RETURN(auto stmt, db_->Prepare(sql));
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    return row ? stmt.Int(0) : 0;
  };
  ASSIGN_OR_RETURN(int64_t auto_vacuum, pragma("PRAGMA auto_vacuum"));
  if (auto_vacuum != 2) {
    // The store could not be switched when it was opened (see UseIncrementalVacuum): a
    // full VACUUM gives the space back, with the loop waiting for it.
    LOG_WARN("vacuuming " << path_ << " in full: it has no incremental vacuum");
    RETURN_IF_ERROR(db_->Exec("VACUUM"));
    return 0;
  }
  RETURN_IF_ERROR(db_->Exec("PRAGMA incremental_vacuum(" + std::to_string(pages) + ")"));
  ASSIGN_OR_RETURN(int64_t free_pages, pragma("PRAGMA freelist_count"));
  // In WAL mode the file shrinks when the log is copied back; a passive checkpoint
  // waits for no reader.
  if (free_pages == 0) RETURN_IF_ERROR(db_->Exec("PRAGMA wal_checkpoint(PASSIVE)"));
  return free_pages;
}

StatusOr<int64_t> RetentionStore::SizeBytes() {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT page_count * page_size FROM "
                                           "pragma_page_count(), pragma_page_size()"));
  RETURN_IF_ERROR(stmt.Step().status());
  return stmt.Int(0);
}

}  // namespace benchfleet
