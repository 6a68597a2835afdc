// The store's schedules: their rows, what became of each slot, and the tag that makes a
// firing's sweep one per slot (schemas/migrations/001_baseline.sql).
#include "coordinator/store/schedule_store.h"

#include "common/clock.h"

namespace benchfleet {
namespace {

constexpr const char* kScheduleColumns =
    "schedule_id, name, cron, tz, sweep, overlap, start_deadline_s, created_at, handled_until";

StoredSchedule ReadSchedule(const Statement& row) {
  StoredSchedule s;
  s.schedule_id = row.Int(0);
  s.name = row.Text(1);
  s.cron = row.Text(2);
  s.tz = row.Text(3);
  s.sweep = json::parse(row.Text(4), nullptr, false);
  s.overlap_queue = row.Text(5) == "queue";
  if (!row.IsNull(6)) s.start_deadline_s = row.Real(6);
  s.created_at = row.Text(7);
  s.handled_until = row.Text(8);
  return s;
}

}  // namespace

const char* FiringOutcomeName(FiringOutcome outcome) {
  switch (outcome) {
    case FiringOutcome::kStarted:
      return "started";
    case FiringOutcome::kRunNow:
      return "run_now";
    case FiringOutcome::kMissed:
      return "missed";
    case FiringOutcome::kSkipped:
      return "skipped";
    case FiringOutcome::kFailed:
      return "failed";
  }
  return "failed";
}

StatusOr<StoredSchedule> ScheduleStore::AddSchedule(StoredSchedule schedule) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(auto taken,
                   db_->Prepare("SELECT 1 FROM schedules WHERE name = ?1 AND removed_at IS NULL"));
  taken.Bind(1, schedule.name);
  ASSIGN_OR_RETURN(bool exists, taken.Step());
  if (exists) {
    return FailedPrecondition("a schedule named \"" + schedule.name +
                              "\" exists already; remove it first (benchfleet schedule remove " +
                              schedule.name + ")");
  }
  RETURN_IF_ERROR(
      InsertRow(*db_, "schedules",
                {{"name", schedule.name},
                 {"cron", schedule.cron},
                 {"tz", schedule.tz},
                 {"sweep", schedule.sweep.dump()},
                 {"overlap", schedule.overlap_queue ? "queue" : "skip"},
                 {"start_deadline_s",
                  schedule.start_deadline_s ? json(*schedule.start_deadline_s) : json(nullptr)},
                 {"created_at", schedule.created_at},
                 {"handled_until", schedule.handled_until}}));
  schedule.schedule_id = db_->LastInsertRowid();
  RETURN_IF_ERROR(tx.Commit());
  return schedule;
}

StatusOr<std::vector<StoredSchedule>> ScheduleStore::LiveSchedules() {
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare(std::string("SELECT ") + kScheduleColumns +
                                " FROM schedules WHERE removed_at IS NULL ORDER BY name"));
  std::vector<StoredSchedule> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    out.push_back(ReadSchedule(stmt));
  }
  return out;
}

StatusOr<StoredSchedule> ScheduleStore::FindSchedule(const std::string& name) {
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare(std::string("SELECT ") + kScheduleColumns +
                                " FROM schedules WHERE name = ?1 AND removed_at IS NULL"));
  stmt.Bind(1, name);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NotFound("no schedule named \"" + name + "\" (benchfleet schedule list)");
  return ReadSchedule(stmt);
}

StatusOr<StoredSchedule> ScheduleStore::RemoveSchedule(const std::string& name) {
  ASSIGN_OR_RETURN(StoredSchedule schedule, FindSchedule(name));
  Transaction tx(*db_);  // every write joins the loop round's group commit
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare("UPDATE schedules SET removed_at = ?2 WHERE schedule_id = ?1"));
  RETURN_IF_ERROR(stmt.Bind(1, schedule.schedule_id).Bind(2, UtcNowIso8601()).Run());
  RETURN_IF_ERROR(tx.Commit());
  return schedule;
}

StatusOr<bool> ScheduleStore::RecordFiring(int64_t schedule_id, const std::string& slot,
                                           FiringOutcome outcome, const std::string& reason) {
  Transaction tx(*db_);  // every write joins the loop round's group commit
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare("INSERT OR IGNORE INTO schedule_firings(schedule_id, slot, "
                                "outcome, decided_at, reason) VALUES (?1, ?2, ?3, ?4, ?5)"));
  stmt.Bind(1, schedule_id)
      .Bind(2, slot)
      .Bind(3, FiringOutcomeName(outcome))
      .Bind(4, UtcNowIso8601());
  if (reason.empty()) {
    stmt.BindNull(5);
  } else {
    stmt.Bind(5, reason);
  }
  RETURN_IF_ERROR(stmt.Run());
  const bool recorded = db_->Changes() > 0;
  RETURN_IF_ERROR(tx.Commit());
  return recorded;
}

Status ScheduleStore::SetHandledUntil(int64_t schedule_id, const std::string& slot) {
  // Times compare as text (one format); a slot handled late never moves it back.
  Transaction tx(*db_);  // every write joins the loop round's group commit
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("UPDATE schedules SET handled_until = ?2 "
                                           "WHERE schedule_id = ?1 AND handled_until < ?2"));
  RETURN_IF_ERROR(stmt.Bind(1, schedule_id).Bind(2, slot).Run());
  return tx.Commit();
}

Status ScheduleStore::TagScheduledSweep(int64_t sweep_id, int64_t schedule_id,
                                        const std::string& slot) {
  Transaction tx(*db_);  // every write joins the loop round's group commit
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("UPDATE sweeps SET schedule_id = ?2, schedule_slot = ?3 "
                                           "WHERE sweep_id = ?1 AND schedule_id IS NULL"));
  RETURN_IF_ERROR(stmt.Bind(1, sweep_id).Bind(2, schedule_id).Bind(3, slot).Run());
  return tx.Commit();
}

StatusOr<std::optional<int64_t>> ScheduleStore::RunningSweepOfSchedule(int64_t schedule_id) {
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare("SELECT max(sweep_id) FROM sweeps WHERE schedule_id = ?1 "
                                "AND state = 'running'"));
  stmt.Bind(1, schedule_id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row || stmt.IsNull(0)) return std::optional<int64_t>();
  return std::optional<int64_t>(stmt.Int(0));
}

}  // namespace benchfleet
