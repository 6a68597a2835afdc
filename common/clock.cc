#include "common/clock.h"

#include <ctime>

namespace benchfleet {

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

int64_t UnixMicrosNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace benchfleet
