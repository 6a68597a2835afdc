#include "common/clock.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

// Every stored time has this one format: it must sort as text as it does in time.
TEST(ClockTest, Iso8601IsTheStoredFormatAndSortsAsText) {
  EXPECT_EQ(UtcIso8601(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(UtcIso8601(1795954402113870), "2026-11-29T12:13:22.113Z");
  EXPECT_EQ(UtcIso8601(1795954402999999), "2026-11-29T12:13:22.999Z");  // truncated
  EXPECT_EQ(UtcIso8601(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_LT(UtcIso8601(1795954402113870), UtcIso8601(1795954402114870));
  const std::string now = UtcNowIso8601();
  ASSERT_EQ(now.size(), 24u);
  EXPECT_EQ(now.back(), 'Z');
  EXPECT_LE(UtcIso8601(UnixMicrosNow() - 1000000), now);
}

}  // namespace
}  // namespace benchfleet
