// Cron expressions evaluated in an IANA time zone, and the UTC instants ("slots") at which
// they fire: the timetable of nightly runs. Times cross this interface as Unix seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "schedule/cron_fields.h"
#include "schedule/time_zone.h"

namespace benchfleet::schedule {

// Slots are computed for instants from 1970-01-01 00:00:00 UTC to 9999-12-31 23:59:59 UTC.
// An argument outside that range is treated as the nearest end of it, so no input can
// overflow the calendar arithmetic.
inline constexpr int64_t kEarliestUnixSeconds = 0;
inline constexpr int64_t kLatestUnixSeconds = 253402300799;

// A parsed schedule. Immutable; copies are cheap and may be used from several threads.
//
// The expression matches local wall-clock minutes in its time zone. Each matching minute
// fires at the first instant the zone's clock shows that minute or later:
//   - a minute that occurs once fires at that instant;
//   - a minute skipped when clocks jump forward fires when the gap ends (Europe/Berlin,
//     2026-03-29: 02:00-02:59 all fire once, at 03:00 CEST = 01:00 UTC);
//   - a minute that occurs twice when clocks go back fires at its first occurrence only.
// So a daily job runs exactly once on every day, including both days of daylight saving.
class CronSchedule {
 public:
  // Parses a standard 5-field cron expression (minute hour day-of-month month
  // day-of-week) in the IANA time zone `tz` ("Europe/Berlin", "UTC").
  // Each field is a comma-separated list of `*`, a number, a range `1-5`, or a step
  // `*/15` or `10-50/20`. Month names JAN-DEC and weekday names SUN-SAT are accepted in
  // any case, also in ranges and lists. Day-of-week runs 0-7 with 0 and 7 both Sunday; a
  // range that ends on Sunday may end in 0 or SUN (FRI-SUN is 5-7).
  // Day rule of cron: when both day-of-month and day-of-week are restricted (neither is
  // exactly `*`), a day matches if either matches; otherwise it must match both.
  // Returns InvalidArgument naming the field and the fault, e.g.
  //   "cron field 2 (hour): 25 is out of range 0-23"; also for an unknown time zone and
  // for a spec that can never fire ("0 0 30 2 *"). FailedPrecondition when the system's
  // tz database (the tzdata package) cannot be read.
  static StatusOr<CronSchedule> Parse(const std::string& cron, const std::string& tz);

  // The first slot strictly after `after_unix_s`. Iterating slot = NextSlot(slot) gives
  // strictly increasing instants, each slot once.
  int64_t NextSlot(int64_t after_unix_s) const;

  // The last slot at or before `at_unix_s`, for catching up after downtime: then no slot
  // lies in (result, at_unix_s], and PreviousSlot(NextSlot(t)) == NextSlot(t). The search
  // is not cut off at a day or a year: every valid spec fires at least once in 8 years
  // (Feb 29 across 2100, which is no leap year), so std::nullopt means only that no slot
  // lies between kEarliestUnixSeconds and `at_unix_s`. How far back to catch up is the
  // caller's policy.
  std::optional<int64_t> PreviousSlot(int64_t at_unix_s) const;

  const std::string& cron() const { return cron_; }  // as given, without outer spaces
  const std::string& tz() const { return zone_.name(); }

 private:
  CronSchedule(std::string cron, CronFields fields, TimeZone zone);

  std::string cron_;
  CronFields fields_;
  TimeZone zone_;
};

}  // namespace benchfleet::schedule
