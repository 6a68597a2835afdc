// What the schedule tests share: UTC instants written as dates, and slot sequences.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "schedule/cron.h"

namespace benchfleet::schedule::testing {

// Unix seconds of a UTC date and time, by the proleptic Gregorian calendar (days from
// civil, as in H. Hinnant's "chrono-Compatible Low-Level Date Algorithms"), computed here
// rather than with the code under test.
constexpr int64_t Utc(int64_t year, int64_t month, int64_t day, int64_t hour = 0,
                      int64_t minute = 0) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  const int64_t days = era * 146097 + day_of_era - 719468;
  return days * 86400 + hour * 3600 + minute * 60;
}
static_assert(Utc(1970, 1, 1) == 0);
static_assert(Utc(2026, 3, 29, 1) == 1774746000);

// A schedule the test expects to parse; gtest reports the exception as the test's failure.
inline CronSchedule MustParse(const std::string& cron, const std::string& tz = "UTC") {
  StatusOr<CronSchedule> schedule = CronSchedule::Parse(cron, tz);
  if (!schedule.ok()) {
    throw std::invalid_argument(cron + " in " + tz + ": " + schedule.status().ToString());
  }
  return std::move(schedule).value();
}

// The first `count` slots strictly after `after`.
inline std::vector<int64_t> NextSlots(const CronSchedule& schedule, int64_t after, int count) {
  std::vector<int64_t> slots;
  for (int64_t slot = after; count-- > 0;) slots.push_back(slot = schedule.NextSlot(slot));
  return slots;
}

}  // namespace benchfleet::schedule::testing
