// The five fields of a cron expression as sets of allowed values, and the walk over the
// local calendar to the nearest minute they match. Knows nothing of time zones: "local
// seconds" count wall-clock seconds since 1970-01-01 00:00 on the zone's own clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace benchfleet::schedule {

struct CronFields {
  // Bit v is set when value v is allowed.
  uint64_t minutes = 0;        // 0-59
  uint64_t hours = 0;          // 0-23
  uint64_t days_of_month = 0;  // 1-31
  uint64_t months = 0;         // 1-12
  uint64_t days_of_week = 0;   // 0-6, Sunday is 0 (a 7 in the expression is folded in)
  // Whether the field was exactly `*`: cron's day rule ORs the two day fields only when
  // both are restricted.
  bool any_day_of_month = true;
  bool any_day_of_week = true;

  // Parses "minute hour day-of-month month day-of-week" (already trimmed); rejects a spec
  // that can never fire, which is what lets the walks below always end.
  static StatusOr<CronFields> Parse(const std::string& cron);

  // The earliest matching minute at or after `local_s` (a multiple of 60), as local seconds.
  int64_t FirstMatchAtOrAfter(int64_t local_s) const;
  // The latest matching minute at or before `local_s` (a multiple of 60) and not before
  // `floor_local_s`, or std::nullopt when there is none in between.
  std::optional<int64_t> LastMatchAtOrBefore(int64_t local_s, int64_t floor_local_s) const;
};

}  // namespace benchfleet::schedule
