// ScheduleRunner: the coordinator submits a sweep file by itself at each slot of a cron
// expression in an IANA time zone (docs/schedules.md). Each slot is decided once: fired
// (one sweep, tagged with its schedule and slot), skipped (the schedule's last sweep
// still runs), or missed (the coordinator was down). Every decision and the schedule's
// `handled_until` are written in the loop round's one transaction, so a crash either
// keeps a firing whole or leaves the slot to be decided again after the restart; it
// keeps nothing in memory that a failed round would have to undo.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "common/messages.h"
#include "common/sweep.h"
#include "coordinator/loop/events.h"
#include "coordinator/store/query_runner.h"
#include "coordinator/store/schedule_store.h"

namespace benchfleet {

// A schedule's firing, as it travels with the sweep it submits through the intake.
struct ScheduledFiring {
  int64_t schedule_id = 0;
  std::string slot;                                 // UTC ISO 8601
  FiringOutcome outcome = FiringOutcome::kStarted;  // or kRunNow
};

// What became of a firing, recorded by whoever decided it (the sweep intake): its sweep
// stored, or refused with `reason`. Failures count in `store_errors`.
void RecordFiringStored(ScheduleStore& store, int64_t& store_errors, const ScheduledFiring& firing,
                        int64_t sweep_id);
void RecordFiringRefused(ScheduleStore& store, int64_t& store_errors, const ScheduledFiring& firing,
                         const std::string& reason);

class ScheduleRunner {
 public:
  // `wall_seconds` is the wall clock slots fire by (Unix seconds; tests move it). A
  // schedule's sweep is taken in, and its history read, through `events` (the loop
  // routes them to the sweep intake and the query thread).
  ScheduleRunner(ScheduleStore& store, int64_t& store_errors, std::function<int64_t()> wall_seconds,
                 LoopEvents& events)
      : store_(store),
        store_errors_(store_errors),
        wall_seconds_(std::move(wall_seconds)),
        events_(events) {}

  // A `schedule` request's reply, or nullopt when it went elsewhere to be answered (a
  // run_now sweep taken in, answered by SweepIntake; the history's read).
  std::optional<Message> Reply(const std::string& routing_id, const json& request_id,
                               const ScheduleRequest& request);
  // Once a second of wall-clock time (run by the loop's timer work): each live
  // schedule's slots since it last looked, fired, skipped or recorded missed.
  void FireDueSchedules();

 private:
  void FireDue(const StoredSchedule& schedule, int64_t now_s);

  ScheduleStore& store_;
  int64_t& store_errors_;
  std::function<int64_t()> wall_seconds_;
  LoopEvents& events_;
  int64_t next_check_s_ = 0;
  std::set<int64_t> reported_broken_;  // logged once each
};

}  // namespace benchfleet
