#include "coordinator/intake/schedule_runner.h"

#include <algorithm>

#include "common/client_replies.h"
#include "common/clock.h"
#include "common/log.h"
#include "schedule/cron.h"

namespace benchfleet {
namespace {

// Missed slots recorded one by one after downtime, at most (a minutely schedule down for
// a month would otherwise write 40,000 rows); the rest are only logged as a count.
constexpr int kMaxMissedRecorded = 100;
// A sweep checked when a schedule is added: its shape, and its first combinations
// against the job rules (all of a small one); a later firing checks all of it again.
constexpr size_t kCombinationsCheckedAtAdd = 1000;

std::string IsoSeconds(int64_t unix_s) { return UtcIso8601(unix_s * 1000000); }

// Whole seconds of a stored time (its milliseconds dropped: slots fall on minutes).
int64_t StoredSeconds(const std::string& iso) {
  int64_t micros = 0;
  if (!ParseUtcIso8601(iso, &micros)) return 0;
  return micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
}

ScheduleEntry EntryOf(const StoredSchedule& s, int64_t now_s) {
  ScheduleEntry entry;
  entry.name = s.name;
  entry.cron = s.cron;
  entry.tz = s.tz;
  entry.overlap = s.overlap_queue ? "queue" : "skip";
  entry.start_deadline_s = s.start_deadline_s;
  entry.created_at = s.created_at;
  entry.handled_until = s.handled_until;
  if (auto cron = schedule::CronSchedule::Parse(s.cron, s.tz); cron.ok()) {
    entry.next_slot = IsoSeconds(cron->NextSlot(std::max(StoredSeconds(s.handled_until), now_s)));
  }
  if (s.sweep.is_object() && s.sweep.contains("name") && s.sweep["name"].is_string()) {
    entry.sweep_name = s.sweep["name"].get<std::string>();
  }
  return entry;
}

}  // namespace

std::optional<Message> ScheduleRunner::Reply(const std::string& routing_id, const json& request_id,
                                             const ScheduleRequest& request) {
  using Action = ScheduleRequest::Action;
  const int64_t now_s = wall_seconds_();
  switch (request.action) {
    case Action::kAdd: {
      auto cron = schedule::CronSchedule::Parse(request.cron, request.tz);
      if (!cron.ok()) return MakeError(cron.status(), request_id);
      auto sweep = ParseSweepShape(request.sweep);
      if (!sweep.ok()) return MakeError(sweep.status(), request_id);
      Status checked = sweep->CheckCombinations(
          0, std::min(sweep->combination_count, kCombinationsCheckedAtAdd));
      if (!checked.ok()) return MakeError(checked, request_id);
      StoredSchedule schedule;
      schedule.name = request.name;
      schedule.cron = cron->cron();
      schedule.tz = cron->tz();
      schedule.sweep = request.sweep;
      schedule.overlap_queue = request.overlap_queue;
      schedule.start_deadline_s = request.start_deadline_s;
      schedule.created_at = IsoSeconds(now_s);
      // Its first slot is the first after now: nothing is made up for the past.
      schedule.handled_until = IsoSeconds(now_s);
      auto added = store_.AddSchedule(std::move(schedule));
      if (!added.ok()) return MakeError(added.status(), request_id);
      LOG_INFO("schedule \"" << added->name << "\" added: " << added->cron << " (" << added->tz
                             << ")");
      return ToMessage(SchedulesReply{request_id, {EntryOf(*added, now_s)}});
    }
    case Action::kList: {
      auto schedules = store_.LiveSchedules();
      if (!schedules.ok()) return MakeError(schedules.status(), request_id);
      std::vector<ScheduleEntry> out;
      for (const StoredSchedule& s : *schedules) out.push_back(EntryOf(s, now_s));
      return ToMessage(SchedulesReply{request_id, std::move(out)});
    }
    case Action::kRemove: {
      auto removed = store_.RemoveSchedule(request.name);
      if (!removed.ok()) return MakeError(removed.status(), request_id);
      LOG_INFO("schedule \"" << removed->name << "\" removed");
      return ToMessage(SchedulesReply{request_id, {EntryOf(*removed, now_s)}});
    }
    case Action::kRunNow: {
      auto found = store_.FindSchedule(request.name);
      if (!found.ok()) return MakeError(found.status(), request_id);
      const std::string slot = UtcNowIso8601();
      const std::string submission_id =
          !request.submission_id.empty()
              ? request.submission_id
              : "schedule-" + std::to_string(found->schedule_id) + "-now-" + slot;
      ScheduledFiring firing{found->schedule_id, slot, FiringOutcome::kRunNow};
      return events_.SubmitScheduled(routing_id, request_id, {found->sweep, submission_id}, firing);
    }
    case Action::kHistory: {
      // The name was checked (letters, digits, '-', '_', '.'): safe inside quotes.
      std::string sql =
          "SELECT schedule, slot, outcome, reason, sweep_id, sweep_state, decided_at FROM "
          "schedule_history";
      if (!request.name.empty()) sql += " WHERE schedule = '" + request.name + "'";
      sql += " ORDER BY slot DESC";
      return events_.PostRead({routing_id, request_id, sql, std::nullopt, request.limit});
    }
  }
  return MakeError(InvalidArgument("schedule.action: unknown"), request_id);
}

void ScheduleRunner::FireDueSchedules() {
  const int64_t now_s = wall_seconds_();
  if (now_s < next_check_s_) return;
  next_check_s_ = now_s + 1;
  auto schedules = store_.LiveSchedules();
  if (!schedules.ok()) {
    ++store_errors_;
    LOG_ERROR("cannot read the schedules: " << schedules.status().message());
    return;
  }
  for (const StoredSchedule& schedule : *schedules) FireDue(schedule, now_s);
}

void ScheduleRunner::FireDue(const StoredSchedule& s, int64_t now_s) {
  auto cron = schedule::CronSchedule::Parse(s.cron, s.tz);
  if (!cron.ok()) {
    // It parsed when it was added: only a change of the rules or the zone data since.
    if (reported_broken_.insert(s.schedule_id).second) {
      LOG_ERROR("schedule \"" << s.name << "\" no longer parses and does not fire: "
                              << cron.status().message());
    }
    return;
  }
  const int64_t first = cron->NextSlot(StoredSeconds(s.handled_until));
  if (first > now_s) return;  // nothing due
  const int64_t latest = cron->PreviousSlot(now_s).value_or(first);
  auto record = [&](int64_t slot_s, FiringOutcome outcome, const std::string& reason) {
    auto recorded = store_.RecordFiring(s.schedule_id, IsoSeconds(slot_s), outcome, reason);
    if (!recorded.ok()) ++store_errors_;
  };
  // After downtime only the latest slot may run; the ones before it are missed.
  int missed = 0;
  for (int64_t slot_s = first; slot_s < latest; slot_s = cron->NextSlot(slot_s)) {
    if (++missed > kMaxMissedRecorded) break;
    record(slot_s, FiringOutcome::kMissed,
           "the coordinator was not running at this slot; only the latest "
           "slot missed runs");
  }
  if (missed > kMaxMissedRecorded) {
    LOG_WARN("schedule \"" << s.name << "\": more than " << kMaxMissedRecorded
                           << " slots missed before " << IsoSeconds(latest) << "; the first "
                           << kMaxMissedRecorded << " are recorded");
  }
  const std::string slot = IsoSeconds(latest);
  auto handled = [&] {
    if (!store_.SetHandledUntil(s.schedule_id, slot).ok()) ++store_errors_;
  };
  const double deadline_s =
      s.start_deadline_s.value_or(static_cast<double>(cron->NextSlot(latest) - latest));
  if (static_cast<double>(now_s - latest) > deadline_s) {
    record(latest, FiringOutcome::kMissed,
           "past its start deadline: " + std::to_string(now_s - latest) +
               " s late, the deadline is " + std::to_string(static_cast<int64_t>(deadline_s)) +
               " s");
    handled();
    return;
  }
  if (!s.overlap_queue) {
    auto running = store_.RunningSweepOfSchedule(s.schedule_id);
    if (!running.ok()) {
      ++store_errors_;
      return;  // decided again a second later
    }
    if (*running) {
      record(latest, FiringOutcome::kSkipped,
             "sweep " + std::to_string(**running) + " of this schedule still runs (overlap skip)");
      LOG_INFO("schedule \"" << s.name << "\": slot " << slot << " skipped, sweep " << **running
                             << " still runs");
      handled();
      return;
    }
  }
  LOG_INFO("schedule \"" << s.name << "\": slot " << slot << " fires");
  ScheduledFiring firing{s.schedule_id, slot, FiringOutcome::kStarted};
  // One sweep per slot, even if this round's decision is taken again: the submission
  // id is the slot's.
  (void)events_.SubmitScheduled(
      "", nullptr, {s.sweep, "schedule-" + std::to_string(s.schedule_id) + "@" + slot}, firing);
}

void RecordFiringStored(ScheduleStore& store, int64_t& store_errors, const ScheduledFiring& firing,
                        int64_t sweep_id) {
  const bool ok = store.TagScheduledSweep(sweep_id, firing.schedule_id, firing.slot).ok() &&
                  store.RecordFiring(firing.schedule_id, firing.slot, firing.outcome, "").ok() &&
                  (firing.outcome != FiringOutcome::kStarted ||
                   store.SetHandledUntil(firing.schedule_id, firing.slot).ok());
  if (!ok) ++store_errors;
}

void RecordFiringRefused(ScheduleStore& store, int64_t& store_errors, const ScheduledFiring& firing,
                         const std::string& reason) {
  LOG_WARN("schedule " << firing.schedule_id << ": slot " << firing.slot << " refused: " << reason);
  const bool ok =
      store.RecordFiring(firing.schedule_id, firing.slot, FiringOutcome::kFailed, reason).ok() &&
      (firing.outcome != FiringOutcome::kStarted ||
       store.SetHandledUntil(firing.schedule_id, firing.slot).ok());
  if (!ok) ++store_errors;
}

}  // namespace benchfleet
