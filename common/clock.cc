#include "common/clock.h"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace benchfleet {

const MonotonicClock& SystemMonotonicClock() {
  struct System final : MonotonicClock {
    MonoTime Now() const override { return MonoClock::now(); }
  };
  static const System clock;
  return clock;
}

std::string UtcIso8601(int64_t unix_micros) {
  // Floor division, so a time before 1970 still has its milliseconds in 0..999.
  int64_t seconds = unix_micros / 1000000;
  int64_t micros = unix_micros % 1000000;
  if (micros < 0) {
    micros += 1000000;
    seconds -= 1;
  }
  const time_t t = static_cast<time_t>(seconds);
  tm utc{};
  gmtime_r(&t, &utc);
  char buf[48];
  size_t len = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(buf + len, sizeof buf - len, ".%03ldZ", static_cast<long>(micros / 1000));
  return buf;
}

bool ParseUtcIso8601(const std::string& text, int64_t* unix_micros) {
  tm utc{};
  int millis = 0;
  int consumed = 0;
  if (sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &utc.tm_year, &utc.tm_mon, &utc.tm_mday,
             &utc.tm_hour, &utc.tm_min, &utc.tm_sec, &consumed) != 6 ||
      consumed != 19) {
    return false;
  }
  std::string rest = text.substr(19);
  if (rest.size() == 5 && rest[0] == '.' && rest[4] == 'Z' &&
      std::isdigit(static_cast<unsigned char>(rest[1])) &&
      std::isdigit(static_cast<unsigned char>(rest[2])) &&
      std::isdigit(static_cast<unsigned char>(rest[3]))) {
    millis = std::stoi(rest.substr(1, 3));
  } else if (rest != "Z") {
    return false;
  }
  if (utc.tm_mon < 1 || utc.tm_mon > 12 || utc.tm_mday < 1 || utc.tm_mday > 31 ||
      utc.tm_hour > 23 || utc.tm_min > 59 || utc.tm_sec > 60) {
    return false;
  }
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  *unix_micros = int64_t{timegm(&utc)} * 1000000 + int64_t{millis} * 1000;
  return true;
}

int64_t UnixMicrosNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace benchfleet
