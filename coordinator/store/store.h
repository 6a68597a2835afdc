// The coordinator's store: results.db (SQLite, WAL), opened once with its schema made
// current, and the stores of each concern over its one writable connection: jobs and
// sweeps (JobQueue), results (ResultWriter), the processes of repeated jobs
// (ProcessResults) and the pairs of paired ones (PairResults), hosts (HostStore), schedules
// (ScheduleStore), regressions (RegressionStore) and retention (RetentionStore).
//
// When a write is durable: outside a group, every method that writes commits before it
// returns OK, so a caller may acknowledge to a peer as soon as the call succeeded, and
// must not when it failed. Inside a group (OpenGroup .. CommitGroup, one per round of
// the coordinator's loop, coordinator/loop/round.h), a write that returned OK is durable
// only once CommitGroup returned OK: the round sends what depends on its writes after
// that, and nothing when the commit failed (every write of the group is then undone).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "coordinator/store/checkpointer.h"
#include "coordinator/store/host_store.h"
#include "coordinator/store/job_queue.h"
#include "coordinator/store/pair_results.h"
#include "coordinator/store/process_results.h"
#include "coordinator/store/regression_store.h"
#include "coordinator/store/result_writer.h"
#include "coordinator/store/retention_store.h"
#include "coordinator/store/schedule_store.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

class Store {
 public:
  // Opens (creating if needed) the database at `path`, sets WAL and full fsync, applies
  // the migrations not yet applied (converting a store from before the baseline first),
  // adds the columns of result fields declared since (schemas/result_fields.json) and
  // makes every view of schemas/views.sql again over them (schemas/README.md).
  static StatusOr<std::unique_ptr<Store>> Open(const std::string& path);

  // PRAGMA user_version: the migrations applied.
  StatusOr<int> SchemaVersion();

  // Group commit (Database::OpenGroup): every write between the two joins one
  // transaction, made durable by one sync at CommitGroup. On a failed commit every
  // write of the group is undone, and so is what the stores remembered of it.
  void OpenGroup();
  Status CommitGroup();
  // Whether the open group has written anything, so that CommitGroup has a commit (and
  // a sync) to make.
  bool GroupWrote() const;

  JobQueue& jobs() { return jobs_; }
  ResultWriter& results() { return results_; }
  ProcessResults& processes() { return processes_; }
  PairResults& pairs() { return pairs_; }
  HostStore& hosts() { return hosts_; }
  ScheduleStore& schedules() { return schedules_; }
  RegressionStore& regressions() { return regressions_; }
  RetentionStore& retention() { return retention_; }

  const std::string& path() const { return path_; }

 private:
  Store(std::unique_ptr<Database> db, std::string path);
  // Switches an older store to auto_vacuum=INCREMENTAL (best effort, logged).
  void UseIncrementalVacuum();
  // Adds a column for every declared field a table lacks; makes every view again.
  Status ApplyFieldTables();

  std::unique_ptr<Database> db_;
  std::string path_;
  JobQueue jobs_;
  HostStore hosts_;
  ResultWriter results_;
  ProcessResults processes_;
  PairResults pairs_;
  ScheduleStore schedules_;
  RegressionStore regressions_;
  RetentionStore retention_;
  // Copies the log back into the database off this thread (coordinator/store/checkpointer.h).
  // Last, so that it stops before the connection it hooks closes.
  std::unique_ptr<WalCheckpointer> checkpointer_;
};

}  // namespace benchfleet
