#include "coordinator/store/store.h"

#include "common/log.h"
#include "coordinator/store/sample_blob.h"
#include "sqlite/schema.h"

namespace benchfleet {
namespace {

// A writer waits this long for a lock held by another process (a user's sqlite3 shell
// in a write transaction) before the operation fails and is retried later.
constexpr int kBusyTimeoutMs = 500;

// A store `benchfleet merge` wrote (docs/sites.md) holds other fleets' sweeps, numbered
// for reading: a coordinator serving it would queue its own among them, and a later merge
// into it would take them for sites' rows. Checked before any migration touches it.
Status RefuseMergedStore(Database& db, const std::string& path) {
  ASSIGN_OR_RETURN(auto has_identity,
                   db.Prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                              "name = 'store_identity'"));
  ASSIGN_OR_RETURN(bool found, has_identity.Step());
  if (!found) return Status::Ok();
  ASSIGN_OR_RETURN(auto merged, db.Prepare("SELECT merged FROM store_identity"));
  ASSIGN_OR_RETURN(bool row, merged.Step());
  if (row && merged.Int(0) == 1) {
    return FailedPrecondition(path +
                              " is a merged store (benchfleet merge wrote it from other fleets' "
                              "stores): read it with benchfleet results --db " +
                              path + "; a coordinator serves only a store of its own");
  }
  return Status::Ok();
}

}  // namespace

Store::Store(std::unique_ptr<Database> db, std::string path)
    : db_(std::move(db)),
      path_(std::move(path)),
      jobs_(*db_),
      hosts_(*db_),
      results_(*db_, jobs_, hosts_),
      processes_(*db_, jobs_),
      pairs_(*db_, jobs_),
      schedules_(*db_),
      regressions_(*db_, jobs_),
      retention_(*db_, path_) {}

StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto db, Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  sqlite3_busy_timeout(db->handle(), kBusyTimeoutMs);
  // Every statement the store runs is compiled once (the dispatcher and results run the
  // same few thousands of times a second).
  db->CacheStatements();
  // WAL lets readers (the CLI's queries, a user's sqlite3 shell) run beside the writer;
  // synchronous=FULL makes every commit durable before we acknowledge it to a peer.
  // auto_vacuum takes effect only in a new, empty database (an older one is switched by
  // UseIncrementalVacuum below): pruned samples' space then goes back in steps.
  // Every write is a savepoint of the loop's round (group commit): their journals kept
  // in memory, not in temporary files, halve the CPU a job costs; a 16 MB page cache
  // keeps a round's pages from spilling to the log before its commit.
  RETURN_IF_ERROR(
      db->Exec("PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
               "PRAGMA cache_size=-16384; PRAGMA temp_store=MEMORY;"));
  // Converting a store from before the baseline packs its old per-sample rows with it
  // (schemas/legacy_upgrade.sql).
  RETURN_IF_ERROR(RegisterSampleFunctions(db->handle()));
  RETURN_IF_ERROR(RefuseMergedStore(*db, path));
  std::unique_ptr<Store> store(new Store(std::move(db), path));
  // Foreign keys are enforced once the schema is current: a conversion or a migration
  // that rebuilds a table others refer to drops the old one first, which enforcement
  // would refuse (SQLite's procedure for changing a table's layout asks for it off).
  RETURN_IF_ERROR(MigrateSchema(*store->db_, path));
  RETURN_IF_ERROR(store->db_->Exec("PRAGMA foreign_keys=ON"));
  RETURN_IF_ERROR(store->ApplyFieldTables());
  store->UseIncrementalVacuum();
  ASSIGN_OR_RETURN(store->checkpointer_, WalCheckpointer::Start(path, store->db_->handle()));
  return store;
}

void Store::UseIncrementalVacuum() {
  {
    auto mode = db_->Prepare("PRAGMA auto_vacuum");  // finished before the VACUUM
    if (!mode.ok() || !mode->Step().ok() || mode->Int(0) == 2) return;
  }
  // A store made before auto_vacuum was set (its old per-sample table, packed into
  // result_samples and dropped, left most of it free): one full VACUUM, outside WAL mode
  // where the switch can happen, while no other connection of ours is open. A user's
  // reader holding the file makes it wait for another start; prunes then vacuum in full.
  LOG_INFO("vacuuming " << path_ << " once, so that pruned space goes back in steps");
  Status left_wal = db_->Exec("PRAGMA journal_mode=DELETE");
  Status vacuumed = left_wal.ok() ? db_->Exec("PRAGMA auto_vacuum=INCREMENTAL; VACUUM") : left_wal;
  Status back = db_->Exec("PRAGMA journal_mode=WAL");
  if (!vacuumed.ok() || !back.ok()) {
    LOG_WARN("left " << path_ << " without incremental vacuum for now: "
                     << (vacuumed.ok() ? back : vacuumed).message());
  }
  // Back in WAL mode the log and its index are opened by the next read. That read is
  // the writer's, here, before any other connection exists: otherwise the first reads
  // of the checkpointer thread and of a user's client race to build the index, and the
  // loser gets SQLITE_BUSY at once unless it has a busy handler (a plain sqlite3 shell
  // does not).
  Status indexed = db_->Exec("SELECT count(*) FROM sqlite_master");
  if (!indexed.ok())
    LOG_WARN("cannot read " << path_ << " after the vacuum: " << indexed.message());
}

StatusOr<int> Store::SchemaVersion() {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("PRAGMA user_version"));
  RETURN_IF_ERROR(stmt.Step().status());
  return static_cast<int>(stmt.Int(0));
}

Status Store::ApplyFieldTables() {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(AddDeclaredColumns(*db_, /*log=*/true));
  RETURN_IF_ERROR(RecreateViews(*db_));
  return tx.Commit();
}

void Store::OpenGroup() {
  results_.OpenGroup();
  db_->OpenGroup();
}

bool Store::GroupWrote() const { return sqlite3_get_autocommit(db_->handle()) == 0; }

Status Store::CommitGroup() {
  Status finished = results_.FinishGroupSweeps();
  if (finished.ok()) finished = db_->CommitGroup();
  if (!finished.ok()) {
    // A sweep whose last result is kept must end with it: the whole group is undone,
    // so its results are not acked and come again.
    if (sqlite3_get_autocommit(db_->handle()) == 0) (void)db_->Exec("ROLLBACK");
    (void)db_->CommitGroup();
    hosts_.ForgetFingerprints();
  }
  return finished;
}

}  // namespace benchfleet
