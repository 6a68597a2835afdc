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

TEST(ClockTest, AStoredTimeReadsBackToTheMillisecond) {
  int64_t micros = 0;
  ASSERT_TRUE(ParseUtcIso8601("2026-11-29T12:13:22.113Z", &micros));
  EXPECT_EQ(micros, 1795954402113000);
  ASSERT_TRUE(ParseUtcIso8601("1970-01-01T00:00:00Z", &micros));
  EXPECT_EQ(micros, 0);
  for (int64_t t : {int64_t{0}, int64_t{1795954402113000}, int64_t{1900000000000000}}) {
    ASSERT_TRUE(ParseUtcIso8601(UtcIso8601(t), &micros));
    EXPECT_EQ(micros, t);
  }
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T12:13:22", "2026-11-29T12:13:22.1Z", "2026-13-29T12:13:22Z",
        "2026-11-29T12:13:22.113Z ", "2026-11-29 12:13:22Z"}) {
    EXPECT_FALSE(ParseUtcIso8601(bad, &micros)) << bad;
  }
}

}  // namespace
}  // namespace benchfleet
