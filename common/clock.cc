#include "common/clock.h"

#include <ctime>

namespace benchfleet {

std::string UtcNowIso8601() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  gmtime_r(&ts.tv_sec, &utc);
  char buf[40];
  size_t len = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(buf + len, sizeof buf - len, ".%03ldZ", ts.tv_nsec / 1000000);
  return buf;
}

int64_t UnixMicrosNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace benchfleet
