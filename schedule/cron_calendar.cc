// The walk from a local minute to the nearest minute the cron fields match. It skips by
// field (a whole month, a day, an hour at a time), never minute by minute, so even a
// Feb 29 spec resolves in a few hundred steps.
#include <date/date.h>

#include "schedule/cron_fields.h"

namespace benchfleet::schedule {
namespace {

constexpr int64_t kSecondsPerMinute = 60;
constexpr int64_t kSecondsPerHour = 3600;
constexpr int64_t kSecondsPerDay = 86400;
constexpr int kLastHour = 23;
constexpr int kLastMinute = 59;
constexpr int kDecember = 12;

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b < 0 ? 1 : 0); }

// The smallest value >= from in `set`, or -1.
int FirstSetAtOrAfter(uint64_t set, int from) {
  if (from > 63) return -1;
  uint64_t rest = set >> from << from;
  return rest == 0 ? -1 : __builtin_ctzll(rest);
}

// The largest value <= from in `set`, or -1.
int LastSetAtOrBefore(uint64_t set, int from) {
  if (from < 0) return -1;
  uint64_t rest = from >= 63 ? set : set & ((uint64_t{2} << from) - 1);
  return rest == 0 ? -1 : 63 - __builtin_clzll(rest);
}

date::year_month_day DateOf(int64_t day) {
  return date::year_month_day{date::local_days{date::days(static_cast<int>(day))}};
}

int64_t DayOf(date::year_month_day date) {
  return date::local_days{date}.time_since_epoch().count();
}

// A local minute split into the day and the time of day the walk moves separately.
struct Position {
  int64_t day;
  int hour;
  int minute;

  explicit Position(int64_t local_s) : day(FloorDiv(local_s, kSecondsPerDay)) {
    int64_t minute_of_day = (local_s - day * kSecondsPerDay) / kSecondsPerMinute;
    hour = static_cast<int>(minute_of_day / 60);
    minute = static_cast<int>(minute_of_day % 60);
  }
  int64_t LocalSeconds(int h, int m) const {
    return day * kSecondsPerDay + h * kSecondsPerHour + m * kSecondsPerMinute;
  }
  void StartOfDay(int64_t d) {
    day = d;
    hour = 0;
    minute = 0;
  }
  void EndOfDay(int64_t d) {
    day = d;
    hour = kLastHour;
    minute = kLastMinute;
  }
};

bool DayMatches(const CronFields& f, date::year_month_day date) {
  bool by_month_day = f.days_of_month >> unsigned(date.day()) & 1;
  bool by_weekday = f.days_of_week >> date::weekday{date::local_days{date}}.c_encoding() & 1;
  if (!f.any_day_of_month && !f.any_day_of_week) return by_month_day || by_weekday;
  return by_month_day && by_weekday;
}

}  // namespace

int64_t CronFields::FirstMatchAtOrAfter(int64_t local_s) const {
  Position at(local_s);
  // Ends because Parse accepts only specs that match some day within 8 years.
  for (;;) {
    date::year_month_day date = DateOf(at.day);
    int month = static_cast<int>(unsigned(date.month()));
    if (!(months >> month & 1)) {
      int next = FirstSetAtOrAfter(months, month + 1);
      date::year year = date.year();
      if (next < 0) {
        next = FirstSetAtOrAfter(months, 1);
        ++year;
      }
      at.StartOfDay(DayOf(year / next / 1));
      continue;
    }
    if (!DayMatches(*this, date)) {
      at.StartOfDay(at.day + 1);
      continue;
    }
    int hour = FirstSetAtOrAfter(hours, at.hour);
    if (hour < 0) {
      at.StartOfDay(at.day + 1);
      continue;
    }
    int minute = FirstSetAtOrAfter(minutes, hour == at.hour ? at.minute : 0);
    if (minute < 0) {
      at.hour = hour + 1;
      at.minute = 0;
      continue;
    }
    return at.LocalSeconds(hour, minute);
  }
}

std::optional<int64_t> CronFields::LastMatchAtOrBefore(int64_t local_s,
                                                       int64_t floor_local_s) const {
  Position at(local_s);
  const int64_t floor_day = FloorDiv(floor_local_s, kSecondsPerDay);
  while (at.day >= floor_day) {
    date::year_month_day date = DateOf(at.day);
    int month = static_cast<int>(unsigned(date.month()));
    if (!(months >> month & 1)) {
      int previous = LastSetAtOrBefore(months, month - 1);
      date::year year = date.year();
      if (previous < 0) {
        previous = LastSetAtOrBefore(months, kDecember);
        --year;
      }
      at.EndOfDay(DayOf(year / previous / date::last));
      continue;
    }
    if (!DayMatches(*this, date)) {
      at.EndOfDay(at.day - 1);
      continue;
    }
    int hour = LastSetAtOrBefore(hours, at.hour);
    if (hour < 0) {
      at.EndOfDay(at.day - 1);
      continue;
    }
    int minute = LastSetAtOrBefore(minutes, hour == at.hour ? at.minute : kLastMinute);
    if (minute < 0) {
      at.hour = hour - 1;
      at.minute = kLastMinute;
      continue;
    }
    int64_t found = at.LocalSeconds(hour, minute);
    if (found < floor_local_s) return std::nullopt;
    return found;
  }
  return std::nullopt;
}

}  // namespace benchfleet::schedule
