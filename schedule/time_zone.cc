// TimeZone on the date library's reader of the system tzdata. That reader takes offsets
// from the transitions listed in a zone file only, and zic lists them up to 2037; after
// the last one, the zone file's closing TZ rule ("CET-1CEST,M3.5.0,M10.5.0/3") says how
// the clocks change in every later year. Without it Berlin would stay on winter time
// from 2038 on, so the rule is read here and answers for the years after the table.
#include "schedule/time_zone.h"

#include <date/ptz.h>
#include <date/tz.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <iterator>
#include <optional>

namespace benchfleet::schedule {
namespace {

// Where Debian's tzdata installs the zone files, which date's reader also reads.
constexpr const char* kZoneInfoDirectory = "/usr/share/zoneinfo";

// A bound on how far a clock is set back at once: an hour for daylight saving, and a day
// covers a zone moving across the date line. For that long after such a step the clock
// shows readings below those it showed before it.
constexpr int64_t kLongestSetBackSeconds = int64_t{24} * 3600;

// The table answers up to this long after its last transition; offsets never exceed a
// day, so the readings on both sides of that transition stay with the table.
constexpr int64_t kTableMarginSeconds = int64_t{24} * 3600;

// A date far past the last transition any zone file lists.
constexpr date::year kPastEveryTable{9999};

// The TZ rule that closes a version 2+ zone file ("\n<rule>\n" after the binary data),
// when it changes the clocks; a zone without daylight saving keeps its last offset.
std::optional<Posix::time_zone> RuleAfterTable(const std::string& zone_name) {
  std::ifstream file(std::string(kZoneInfoDirectory) + "/" + zone_name, std::ios::binary);
  std::string content{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (content.compare(0, 4, "TZif") != 0 || content.size() < 2 || content.back() != '\n')
    return std::nullopt;
  size_t newline = content.rfind('\n', content.size() - 2);
  if (newline == std::string::npos) return std::nullopt;
  std::string rule = content.substr(newline + 1, content.size() - newline - 2);
  if (rule.find(',') == std::string::npos) return std::nullopt;
  try {
    return Posix::time_zone(rule);
  } catch (const std::exception&) {
    // A rule the library cannot read (hours past 24, as Greenland's) leaves the table's
    // last offset in force, as the reader alone would.
    return std::nullopt;
  }
}

int64_t Seconds(date::sys_seconds t) { return t.time_since_epoch().count(); }

}  // namespace

struct TimeZone::Rules {
  const date::time_zone* table = nullptr;
  std::optional<Posix::time_zone> after_table;
  int64_t after_table_from = 0;  // Unix seconds, and local seconds, from which it answers

  date::sys_info InfoAt(int64_t unix_s) const {
    date::sys_seconds t{std::chrono::seconds(unix_s)};
    if (after_table && unix_s >= after_table_from) return after_table->get_info(t);
    return table->get_info(t);
  }
  date::local_info InfoAtReading(int64_t local_s) const {
    date::local_seconds t{std::chrono::seconds(local_s)};
    if (after_table && local_s >= after_table_from) return after_table->get_info(t);
    return table->get_info(t);
  }
};

TimeZone::TimeZone(std::string name, std::shared_ptr<const Rules> rules)
    : name_(std::move(name)), rules_(std::move(rules)) {}

StatusOr<TimeZone> TimeZone::Find(const std::string& name) {
  try {
    date::get_tzdb();
  } catch (const std::exception& e) {
    return FailedPrecondition(std::string("time zones: cannot read the system tz database "
                                          "(is the tzdata package installed?): ") +
                              e.what());
  }
  auto rules = std::make_shared<Rules>();
  try {
    rules->table = date::locate_zone(name);
  } catch (const std::exception&) {
    return InvalidArgument("time zone \"" + name + "\": unknown IANA time zone");
  }
  rules->after_table = RuleAfterTable(rules->table->name());
  date::sys_info last_period = rules->table->get_info(date::sys_days{kPastEveryTable / 1 / 1});
  rules->after_table_from = Seconds(last_period.begin) + kTableMarginSeconds;
  return TimeZone(name, std::move(rules));
}

int64_t TimeZone::LatestReadingBy(int64_t unix_s) const {
  date::sys_info info = rules_->InfoAt(unix_s);
  int64_t latest = unix_s + info.offset.count();
  // Only a transition recent enough can have left a higher reading behind.
  int64_t period_begin = Seconds(info.begin);
  while (period_begin > unix_s - kLongestSetBackSeconds) {
    date::sys_info before = rules_->InfoAt(period_begin - 1);
    latest = std::max(latest, period_begin - 1 + before.offset.count());
    period_begin = Seconds(before.begin);
  }
  return latest;
}

int64_t TimeZone::FirstInstantShowing(int64_t local_s) const {
  date::local_info info = rules_->InfoAtReading(local_s);
  if (info.result == date::local_info::nonexistent) return Seconds(info.first.end);
  return local_s - info.first.offset.count();  // once, or the first of two (ambiguous)
}

}  // namespace benchfleet::schedule
