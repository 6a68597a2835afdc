// Schedules in zones with daylight saving. Transitions used below (UTC):
//   Europe/Berlin     2026-03-29 01:00 (02:00 CET -> 03:00 CEST), 2026-10-25 01:00 (03:00
//                     CEST -> 02:00 CET); 2040-03-25 01:00, 2040-10-28 01:00.
//   America/New_York  2026-03-08 07:00 (02:00 EST -> 03:00 EDT), 2026-11-01 06:00 (02:00
//                     EDT -> 01:00 EST).
#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "schedule/cron.h"
#include "schedule/cron_testing.h"

namespace benchfleet::schedule {
namespace {

using testing::MustParse;
using testing::NextSlots;
using testing::Utc;
using Slots = std::vector<int64_t>;

TEST(CronDaylightSavingTest, WinterAndSummerOffsets) {
  CronSchedule berlin = MustParse("30 2 * * *", "Europe/Berlin");
  EXPECT_EQ(berlin.NextSlot(Utc(2026, 1, 15)), Utc(2026, 1, 15, 1, 30));  // CET, UTC+1
  EXPECT_EQ(berlin.NextSlot(Utc(2026, 7, 15)), Utc(2026, 7, 15, 0, 30));  // CEST, UTC+2
  // Monday 2026-01-05 09:00 EST (UTC-5); Monday 2026-07-06 09:00 EDT (UTC-4).
  CronSchedule new_york = MustParse("0 9 * * MON-FRI", "America/New_York");
  EXPECT_EQ(new_york.NextSlot(Utc(2026, 1, 5)), Utc(2026, 1, 5, 14));
  EXPECT_EQ(new_york.NextSlot(Utc(2026, 7, 6)), Utc(2026, 7, 6, 13));
}

TEST(CronDaylightSavingTest, SkippedTimeFiresOnceWhenTheGapEnds) {
  // 02:30 does not exist in Berlin on 2026-03-29: the job runs at 03:00 CEST, 01:00 UTC.
  CronSchedule daily = MustParse("30 2 * * *", "Europe/Berlin");
  EXPECT_EQ(NextSlots(daily, Utc(2026, 3, 27, 12), 3),
            (Slots{Utc(2026, 3, 28, 1, 30), Utc(2026, 3, 29, 1), Utc(2026, 3, 30, 0, 30)}));
  EXPECT_EQ(daily.PreviousSlot(Utc(2026, 3, 29, 12)), Utc(2026, 3, 29, 1));

  // All four minutes of the skipped hour fire once, together, at the end of the gap.
  CronSchedule quarterly = MustParse("*/15 2 * * *", "Europe/Berlin");
  EXPECT_EQ(NextSlots(quarterly, Utc(2026, 3, 28, 12), 5),
            (Slots{Utc(2026, 3, 29, 1), Utc(2026, 3, 30, 0), Utc(2026, 3, 30, 0, 15),
                   Utc(2026, 3, 30, 0, 30), Utc(2026, 3, 30, 0, 45)}));
  EXPECT_EQ(quarterly.PreviousSlot(Utc(2026, 3, 29, 23)), Utc(2026, 3, 29, 1));

  // New York: 02:30 EST on the 7th, the gap's end 03:00 EDT on the 8th, 02:30 EDT on the 9th.
  CronSchedule new_york = MustParse("30 2 * * *", "America/New_York");
  EXPECT_EQ(NextSlots(new_york, Utc(2026, 3, 7), 3),
            (Slots{Utc(2026, 3, 7, 7, 30), Utc(2026, 3, 8, 7), Utc(2026, 3, 9, 6, 30)}));
}

TEST(CronDaylightSavingTest, RepeatedTimeFiresOnceAtItsFirstOccurrence) {
  // Berlin shows 02:30 twice on 2026-10-25: at 00:30 UTC (CEST) and 01:30 UTC (CET).
  CronSchedule daily = MustParse("30 2 * * *", "Europe/Berlin");
  EXPECT_EQ(NextSlots(daily, Utc(2026, 10, 24, 12), 2),
            (Slots{Utc(2026, 10, 25, 0, 30), Utc(2026, 10, 26, 1, 30)}));
  // During the second pass, before the second 02:30, the next slot is the next day's.
  EXPECT_EQ(daily.NextSlot(Utc(2026, 10, 25, 1, 15)), Utc(2026, 10, 26, 1, 30));
  EXPECT_EQ(daily.PreviousSlot(Utc(2026, 10, 25, 1, 45)), Utc(2026, 10, 25, 0, 30));

  // Half-hourly: 01:30, 02:00, 02:30 CEST, then 03:00 CET; the second pass through 02:00
  // and 02:30 fires nothing, so no instant comes twice.
  CronSchedule half_hourly = MustParse("*/30 * * * *", "Europe/Berlin");
  EXPECT_EQ(NextSlots(half_hourly, Utc(2026, 10, 24, 23), 6),
            (Slots{Utc(2026, 10, 24, 23, 30), Utc(2026, 10, 25, 0), Utc(2026, 10, 25, 0, 30),
                   Utc(2026, 10, 25, 2), Utc(2026, 10, 25, 2, 30), Utc(2026, 10, 25, 3)}));
  EXPECT_EQ(half_hourly.PreviousSlot(Utc(2026, 10, 25, 1, 45)), Utc(2026, 10, 25, 0, 30));
  EXPECT_EQ(half_hourly.NextSlot(Utc(2026, 10, 25, 1)), Utc(2026, 10, 25, 2));
  // At 02:15 CET the clock has already shown 02:59 CEST, whose slot is the latest.
  EXPECT_EQ(MustParse("* * * * *", "Europe/Berlin").PreviousSlot(Utc(2026, 10, 25, 1, 15)),
            Utc(2026, 10, 25, 0, 59));

  // New York repeats 01:00-02:00 on 2026-11-01: 01:30 EDT is 05:30 UTC; the next day's
  // 01:30 EST is 06:30 UTC.
  CronSchedule new_york = MustParse("30 1 * * *", "America/New_York");
  EXPECT_EQ(NextSlots(new_york, Utc(2026, 11, 1), 2),
            (Slots{Utc(2026, 11, 1, 5, 30), Utc(2026, 11, 2, 6, 30)}));
}

TEST(CronDaylightSavingTest, ClocksKeepChangingAfterTheZoneFilesTable) {
  // The zone files list transitions up to 2037; later years follow their closing rule.
  CronSchedule daily = MustParse("30 2 * * *", "Europe/Berlin");
  EXPECT_EQ(NextSlots(daily, Utc(2040, 3, 24, 12), 2),
            (Slots{Utc(2040, 3, 25, 1), Utc(2040, 3, 26, 0, 30)}));
  EXPECT_EQ(daily.NextSlot(Utc(2040, 7, 1)), Utc(2040, 7, 1, 0, 30));
  EXPECT_EQ(NextSlots(daily, Utc(2040, 10, 27, 12), 2),
            (Slots{Utc(2040, 10, 28, 0, 30), Utc(2040, 10, 29, 1, 30)}));
  EXPECT_EQ(MustParse("0 9 * * *", "America/New_York").NextSlot(Utc(2050, 7, 1)),
            Utc(2050, 7, 1, 13));
}

TEST(CronDaylightSavingTest, AYearOfMinutesInBerlin) {
  // 2026 in Berlin, from 00:00 CET on Jan 1 to 00:00 CET on Jan 1 2027: 525600 local
  // minutes, of which the 60 skipped in March share their slot with 03:00.
  CronSchedule every_minute = MustParse("* * * * *", "Europe/Berlin");
  const int64_t begin = Utc(2025, 12, 31, 23);
  const int64_t end = Utc(2026, 12, 31, 23);
  int64_t count = 0;
  int64_t last = begin - 1;
  for (int64_t slot = every_minute.NextSlot(last); slot < end; slot = every_minute.NextSlot(slot)) {
    ASSERT_GT(slot, last);
    ASSERT_EQ(slot % 60, 0);
    last = slot;
    ++count;
  }
  EXPECT_EQ(count, 525600 - 60);
}

// The zone as glibc reads it (TZ and localtime_r): a second reader of the zone files,
// independent of the date library.
class GlibcClock {
 public:
  explicit GlibcClock(const std::string& zone) {
    if (const char* tz = std::getenv("TZ")) saved_tz_ = tz;
    setenv("TZ", zone.c_str(), 1);
    tzset();
  }
  ~GlibcClock() {
    if (saved_tz_) {
      setenv("TZ", saved_tz_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  int64_t ReadingAt(int64_t unix_s) const {
    time_t t = unix_s;
    struct tm local {};
    localtime_r(&t, &local);
    return unix_s + local.tm_gmtoff;
  }
  // The instants in `year` at which the offset changes (all fall on a half hour).
  std::vector<int64_t> Transitions(int year) const {
    std::vector<int64_t> found;
    for (int64_t t = Utc(year, 1, 1); t < Utc(year + 1, 1, 1); t += 1800) {
      if (ReadingAt(t) - t != ReadingAt(t + 1800) - (t + 1800)) found.push_back(t + 1800);
    }
    return found;
  }

 private:
  std::optional<std::string> saved_tz_;
};

struct Civil {
  int minute, hour, day, month, weekday;
};

Civil CivilOf(int64_t local_s) {
  time_t t = local_s;
  struct tm fields {};
  gmtime_r(&t, &fields);
  return {fields.tm_min, fields.tm_hour, fields.tm_mday, fields.tm_mon + 1, fields.tm_wday};
}

// The slots in [from, to) by definition, minute by minute: a minute fires at the first
// instant the clock shows it or later. [from, to) must begin away from any transition.
Slots SlotsByDefinition(const GlibcClock& clock, const std::function<bool(Civil)>& matches,
                        int64_t from, int64_t to) {
  Slots slots;
  int64_t highest_shown = clock.ReadingAt(from - 1);
  for (int64_t instant = from; instant < to; instant += 60) {
    const int64_t reading = clock.ReadingAt(instant);
    bool fires = false;
    for (int64_t minute = highest_shown / 60 * 60 + 60; minute <= reading; minute += 60) {
      fires = fires || matches(CivilOf(minute));
    }
    if (fires) slots.push_back(instant);
    highest_shown = std::max(highest_shown, reading + 59);
  }
  return slots;
}

struct SpecCase {
  const char* cron;
  std::function<bool(Civil)> matches;
};

const std::vector<SpecCase>& Specs() {
  static const std::vector<SpecCase> specs = {
      {"* * * * *", [](Civil) { return true; }},
      {"*/30 * * * *", [](Civil c) { return c.minute % 30 == 0; }},
      {"30 2 * * *", [](Civil c) { return c.minute == 30 && c.hour == 2; }},
      {"*/15 2 * * *", [](Civil c) { return c.minute % 15 == 0 && c.hour == 2; }},
      {"45 1-3 * * *", [](Civil c) { return c.minute == 45 && c.hour >= 1 && c.hour <= 3; }},
      {"0,30 2 * * SUN",
       [](Civil c) { return c.minute % 30 == 0 && c.hour == 2 && c.weekday == 0; }},
      {"0 0 13 * FRI",
       [](Civil c) { return c.minute == 0 && c.hour == 0 && (c.day == 13 || c.weekday == 5); }},
  };
  return specs;
}

// Lord Howe moves its clock by 30 minutes; Sydney and Lord Howe change in April and October.
const std::vector<std::string> kZones = {"Europe/Berlin", "America/New_York", "Australia/Sydney",
                                         "Australia/Lord_Howe"};

TEST(CronDaylightSavingTest, SlotsAroundEveryTransitionMatchTheDefinition) {
  for (const std::string& zone : kZones) {
    GlibcClock clock(zone);
    for (int year : {2026, 2040}) {
      std::vector<int64_t> transitions = clock.Transitions(year);
      ASSERT_EQ(transitions.size(), 2u) << zone << " " << year;
      for (int64_t transition : transitions) {
        const int64_t from = transition - 86400;
        const int64_t to = transition + 86400;
        for (const SpecCase& spec : Specs()) {
          CronSchedule schedule = MustParse(spec.cron, zone);
          Slots computed;
          for (int64_t slot = schedule.NextSlot(from - 1); slot < to;
               slot = schedule.NextSlot(slot))
            computed.push_back(slot);
          EXPECT_EQ(computed, SlotsByDefinition(clock, spec.matches, from, to))
              << spec.cron << " in " << zone << " around " << transition;
        }
      }
    }
  }
}

TEST(CronDaylightSavingTest, PreviousSlotAgreesWithNextSlotAtRandomInstants) {
  std::mt19937_64 random(20260329);
  for (const std::string& zone : kZones) {
    std::vector<int64_t> around;  // instants near the clock changes, where mistakes hide
    {
      GlibcClock clock(zone);
      for (int year : {2026, 2040}) {
        for (int64_t t : clock.Transitions(year)) around.push_back(t);
      }
    }
    for (const SpecCase& spec : Specs()) {
      CronSchedule schedule = MustParse(spec.cron, zone);
      for (int i = 0; i < 400; ++i) {
        int64_t t =
            i % 2 == 0
                ? std::uniform_int_distribution<int64_t>(Utc(2020, 1, 1), Utc(2045, 1, 1))(random)
                : around[i / 2 % around.size()] +
                      std::uniform_int_distribution<int64_t>(-6 * 3600, 6 * 3600)(random);
        const int64_t next = schedule.NextSlot(t);
        const std::optional<int64_t> previous = schedule.PreviousSlot(t);
        ASSERT_TRUE(previous.has_value()) << spec.cron << " in " << zone << " at " << t;
        EXPECT_GT(next, t);
        EXPECT_LE(*previous, t);
        // Both are slots, and none lies between them.
        EXPECT_EQ(schedule.PreviousSlot(next), next) << spec.cron << " in " << zone << " at " << t;
        EXPECT_EQ(schedule.NextSlot(*previous), next) << spec.cron << " in " << zone << " at " << t;
        EXPECT_EQ(schedule.PreviousSlot(next - 1), previous) << spec.cron << " in " << zone;
      }
    }
  }
}

}  // namespace
}  // namespace benchfleet::schedule
