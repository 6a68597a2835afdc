// An IANA time zone from the system's tzdata, reduced to the questions a schedule asks
// about its wall clock. Local times are "local seconds": seconds since 1970-01-01 00:00
// as the zone's clock reads, so a local minute is a plain number like a Unix time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace benchfleet::schedule {

class TimeZone {
 public:
  // Looks `name` up in the system's tzdata ("Europe/Berlin", "UTC"); InvalidArgument
  // 'time zone "Mars/Olympus": unknown IANA time zone' when it is not there.
  static StatusOr<TimeZone> Find(const std::string& name);

  const std::string& name() const { return name_; }

  // The latest reading the clock has shown at or before `unix_s`. That is the reading at
  // `unix_s`, except for a while after the clock was set back: in Berlin at 02:30 CET on
  // 2026-10-25 it has already shown 02:59:59 CEST.
  int64_t LatestReadingBy(int64_t unix_s) const;

  // The first instant at which the clock shows `local_s` or later: that instant when the
  // reading occurs once, the first of the two when it repeats, and the end of the gap
  // when the clock jumped over it.
  int64_t FirstInstantShowing(int64_t local_s) const;

 private:
  struct Rules;  // the zone's offsets; defined beside the tz library in time_zone.cc
  TimeZone(std::string name, std::shared_ptr<const Rules> rules);

  std::string name_;
  std::shared_ptr<const Rules> rules_;
};

}  // namespace benchfleet::schedule
