// The store's schedules (coordinator/store/store.h, docs/schedules.md): their rows, what
// became of each slot, and the tag that makes a firing's sweep one per slot. When to
// fire is the runner's (coordinator/intake/schedule_runner.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

using nlohmann::json;

// A schedule as stored (schemas/migrations/001_baseline.sql, docs/schedules.md).
struct StoredSchedule {
  int64_t schedule_id = 0;
  std::string name;
  std::string cron;
  std::string tz = "UTC";
  json sweep;                              // the sweep file, submitted at each slot
  bool overlap_queue = false;              // else skip
  std::optional<double> start_deadline_s;  // none: one period
  std::string created_at;
  std::string handled_until;  // the latest slot handled (UTC ISO 8601)
};

// What became of one slot of a schedule (schedule_firings.outcome).
enum class FiringOutcome { kStarted, kRunNow, kMissed, kSkipped, kFailed };
const char* FiringOutcomeName(FiringOutcome outcome);

class ScheduleStore {
 public:
  explicit ScheduleStore(Database& db) : db_(&db) {}

  // Fails with FailedPrecondition when a live schedule has the name already.
  StatusOr<StoredSchedule> AddSchedule(StoredSchedule schedule);
  StatusOr<std::vector<StoredSchedule>> LiveSchedules();
  // The live schedule of that name; NotFound when there is none.
  StatusOr<StoredSchedule> FindSchedule(const std::string& name);
  // Marks it removed (it fires no more; its history stays); NotFound when none.
  StatusOr<StoredSchedule> RemoveSchedule(const std::string& name);
  // Records a slot's outcome once: a second record of the same slot changes nothing
  // (a firing decided again after a restart). Returns whether it was new.
  StatusOr<bool> RecordFiring(int64_t schedule_id, const std::string& slot, FiringOutcome outcome,
                              const std::string& reason);
  // Every slot up to `slot` is handled; never moves back.
  Status SetHandledUntil(int64_t schedule_id, const std::string& slot);
  // The sweep of a firing carries its schedule and slot (one sweep per slot).
  Status TagScheduledSweep(int64_t sweep_id, int64_t schedule_id, const std::string& slot);
  // The latest sweep of the schedule still running, if any.
  StatusOr<std::optional<int64_t>> RunningSweepOfSchedule(int64_t schedule_id);

 private:
  Database* db_;
};

}  // namespace benchfleet
