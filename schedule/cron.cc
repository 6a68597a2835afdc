// Slots: matching local minutes carried to UTC. A minute's slot is the first instant the
// clock shows that minute or later, which never decreases as the minute grows. So the
// slots after an instant belong exactly to the minutes above the highest reading the
// clock has shown by then, and the slots at or before it to the minutes at or below it.
#include "schedule/cron.h"

#include <algorithm>
#include <cctype>

namespace benchfleet::schedule {
namespace {

constexpr int64_t kSecondsPerMinute = 60;

// Matching minutes this far before kEarliestUnixSeconds on the local clock cannot have
// slots in range: no zone is more than a day off UTC.
constexpr int64_t kLocalReachSeconds = int64_t{2} * 24 * 3600;

int64_t FloorToMinute(int64_t s) {
  return s / kSecondsPerMinute * kSecondsPerMinute - (s % kSecondsPerMinute < 0 ? 60 : 0);
}

std::string Trim(const std::string& text) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  auto begin = std::find_if_not(text.begin(), text.end(), space);
  auto end = std::find_if_not(text.rbegin(), text.rend(), space).base();
  return begin < end ? std::string(begin, end) : std::string();
}

}  // namespace

CronSchedule::CronSchedule(std::string cron, CronFields fields, TimeZone zone)
    : cron_(std::move(cron)), fields_(fields), zone_(std::move(zone)) {}

StatusOr<CronSchedule> CronSchedule::Parse(const std::string& cron, const std::string& tz) {
  std::string trimmed = Trim(cron);
  ASSIGN_OR_RETURN(CronFields fields, CronFields::Parse(trimmed));
  ASSIGN_OR_RETURN(TimeZone zone, TimeZone::Find(tz));
  return CronSchedule(std::move(trimmed), fields, std::move(zone));
}

int64_t CronSchedule::NextSlot(int64_t after_unix_s) const {
  const int64_t after = std::clamp(after_unix_s, kEarliestUnixSeconds - 1, kLatestUnixSeconds);
  int64_t minute = FloorToMinute(zone_.LatestReadingBy(after)) + kSecondsPerMinute;
  for (;;) {
    minute = fields_.FirstMatchAtOrAfter(minute);
    int64_t slot = zone_.FirstInstantShowing(minute);
    // The first match already lies after `after`; the check keeps the promise of a
    // strictly later slot should the zone's table and its later-years rule disagree.
    if (slot > after) return slot;
    minute += kSecondsPerMinute;
  }
}

std::optional<int64_t> CronSchedule::PreviousSlot(int64_t at_unix_s) const {
  if (at_unix_s < kEarliestUnixSeconds) return std::nullopt;
  const int64_t at = std::min(at_unix_s, kLatestUnixSeconds);
  const int64_t floor_minute = kEarliestUnixSeconds - kLocalReachSeconds;
  int64_t minute = FloorToMinute(zone_.LatestReadingBy(at));
  for (;;) {
    std::optional<int64_t> match = fields_.LastMatchAtOrBefore(minute, floor_minute);
    if (!match) return std::nullopt;
    int64_t slot = zone_.FirstInstantShowing(*match);
    if (slot <= at) {
      if (slot < kEarliestUnixSeconds) return std::nullopt;
      return slot;
    }
    minute = *match - kSecondsPerMinute;
  }
}

}  // namespace benchfleet::schedule
