// The cron fields and their errors, in UTC. Weekdays used below: 2026-01-01 is a
// Thursday, 2026-04-01 a Wednesday.
#include "schedule/cron.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "schedule/cron_testing.h"

namespace benchfleet::schedule {
namespace {

using testing::MustParse;
using testing::NextSlots;
using testing::Utc;
using Slots = std::vector<int64_t>;

TEST(CronScheduleTest, KeepsTheTrimmedExpressionAndTheZone) {
  CronSchedule schedule = MustParse("  30 2 * * *\t", "Europe/Berlin");
  EXPECT_EQ(schedule.cron(), "30 2 * * *");
  EXPECT_EQ(schedule.tz(), "Europe/Berlin");
}

TEST(CronScheduleTest, DailyFiresStrictlyAfterTheGivenInstant) {
  CronSchedule daily = MustParse("30 2 * * *");
  EXPECT_EQ(daily.NextSlot(Utc(2026, 1, 1)), Utc(2026, 1, 1, 2, 30));
  // An instant that is itself a slot is not "after" it.
  EXPECT_EQ(daily.NextSlot(Utc(2026, 1, 1, 2, 30)), Utc(2026, 1, 2, 2, 30));
  EXPECT_EQ(daily.NextSlot(Utc(2026, 1, 1, 2, 30) - 1), Utc(2026, 1, 1, 2, 30));
  EXPECT_EQ(daily.PreviousSlot(Utc(2026, 1, 1, 2, 30)), Utc(2026, 1, 1, 2, 30));
  EXPECT_EQ(daily.PreviousSlot(Utc(2026, 1, 1, 2, 30) - 1), Utc(2025, 12, 31, 2, 30));
}

TEST(CronScheduleTest, EtcUtcIsUtc) {
  EXPECT_EQ(MustParse("0 12 * * *", "Etc/UTC").NextSlot(Utc(2026, 7, 1)), Utc(2026, 7, 1, 12));
}

TEST(CronScheduleTest, ListsRangesAndSteps) {
  EXPECT_EQ(NextSlots(MustParse("0,30 9,17 * * *"), Utc(2026, 1, 1), 5),
            (Slots{Utc(2026, 1, 1, 9), Utc(2026, 1, 1, 9, 30), Utc(2026, 1, 1, 17),
                   Utc(2026, 1, 1, 17, 30), Utc(2026, 1, 2, 9)}));
  EXPECT_EQ(
      NextSlots(MustParse("0 9-11 * * *"), Utc(2026, 1, 1), 4),
      (Slots{Utc(2026, 1, 1, 9), Utc(2026, 1, 1, 10), Utc(2026, 1, 1, 11), Utc(2026, 1, 2, 9)}));
  EXPECT_EQ(NextSlots(MustParse("*/15 * * * *"), Utc(2026, 1, 1), 4),
            (Slots{Utc(2026, 1, 1, 0, 15), Utc(2026, 1, 1, 0, 30), Utc(2026, 1, 1, 0, 45),
                   Utc(2026, 1, 1, 1)}));
  EXPECT_EQ(NextSlots(MustParse("10-50/20 * * * *"), Utc(2026, 1, 1), 4),
            (Slots{Utc(2026, 1, 1, 0, 10), Utc(2026, 1, 1, 0, 30), Utc(2026, 1, 1, 0, 50),
                   Utc(2026, 1, 1, 1, 10)}));
  // Steps count from the start of the range: hours 1, 9, 17.
  EXPECT_EQ(
      NextSlots(MustParse("0 1-23/8 * * *"), Utc(2026, 1, 1), 4),
      (Slots{Utc(2026, 1, 1, 1), Utc(2026, 1, 1, 9), Utc(2026, 1, 1, 17), Utc(2026, 1, 2, 1)}));
  // Lists mix the forms.
  EXPECT_EQ(NextSlots(MustParse("5,40-50/5 0 * * *"), Utc(2026, 1, 1), 5),
            (Slots{Utc(2026, 1, 1, 0, 5), Utc(2026, 1, 1, 0, 40), Utc(2026, 1, 1, 0, 45),
                   Utc(2026, 1, 1, 0, 50), Utc(2026, 1, 2, 0, 5)}));
}

TEST(CronScheduleTest, MonthNamesInAnyCaseInListsAndRanges) {
  EXPECT_EQ(NextSlots(MustParse("0 0 1 JAN,jul *"), Utc(2026, 1, 1), 3),
            (Slots{Utc(2026, 7, 1), Utc(2027, 1, 1), Utc(2027, 7, 1)}));
  EXPECT_EQ(NextSlots(MustParse("0 0 1 mar-May *"), Utc(2026, 1, 1), 4),
            (Slots{Utc(2026, 3, 1), Utc(2026, 4, 1), Utc(2026, 5, 1), Utc(2027, 3, 1)}));
}

TEST(CronScheduleTest, WeekdayNamesInAnyCaseInListsAndRanges) {
  // From Friday 2026-01-02 noon: Mon 5th to Fri 9th, then Mon 12th.
  EXPECT_EQ(NextSlots(MustParse("0 8 * * MON-FRI"), Utc(2026, 1, 2, 12), 6),
            (Slots{Utc(2026, 1, 5, 8), Utc(2026, 1, 6, 8), Utc(2026, 1, 7, 8), Utc(2026, 1, 8, 8),
                   Utc(2026, 1, 9, 8), Utc(2026, 1, 12, 8)}));
  EXPECT_EQ(NextSlots(MustParse("0 8 * * sat,Sun"), Utc(2026, 1, 1), 3),
            (Slots{Utc(2026, 1, 3, 8), Utc(2026, 1, 4, 8), Utc(2026, 1, 10, 8)}));
}

TEST(CronScheduleTest, SevenAndZeroAreBothSunday) {
  // Sundays of January 2026: the 4th and the 11th.
  const Slots sundays = {Utc(2026, 1, 4, 8), Utc(2026, 1, 11, 8)};
  EXPECT_EQ(NextSlots(MustParse("0 8 * * 0"), Utc(2026, 1, 1), 2), sundays);
  EXPECT_EQ(NextSlots(MustParse("0 8 * * 7"), Utc(2026, 1, 1), 2), sundays);
  EXPECT_EQ(NextSlots(MustParse("0 8 * * SUN"), Utc(2026, 1, 1), 2), sundays);
  // A range may end on Sunday as 7, as 0 or as SUN: Fri 2nd, Sat 3rd, Sun 4th, Fri 9th.
  const Slots weekend = {Utc(2026, 1, 2, 8), Utc(2026, 1, 3, 8), Utc(2026, 1, 4, 8),
                         Utc(2026, 1, 9, 8)};
  EXPECT_EQ(NextSlots(MustParse("0 8 * * 5-7"), Utc(2026, 1, 1), 4), weekend);
  EXPECT_EQ(NextSlots(MustParse("0 8 * * 5-0"), Utc(2026, 1, 1), 4), weekend);
  EXPECT_EQ(NextSlots(MustParse("0 8 * * FRI-SUN"), Utc(2026, 1, 1), 4), weekend);
}

TEST(CronScheduleTest, BothDayFieldsRestrictedMeansEither) {
  // April 2026: Fridays 3, 10, 17, 24 and May 1; the 13th is a Monday.
  EXPECT_EQ(NextSlots(MustParse("0 0 13 * FRI"), Utc(2026, 4, 1), 6),
            (Slots{Utc(2026, 4, 3), Utc(2026, 4, 10), Utc(2026, 4, 13), Utc(2026, 4, 17),
                   Utc(2026, 4, 24), Utc(2026, 5, 1)}));
  // With one of them `*`, only the other one counts.
  EXPECT_EQ(NextSlots(MustParse("0 0 13 * *"), Utc(2026, 4, 1), 2),
            (Slots{Utc(2026, 4, 13), Utc(2026, 5, 13)}));
  EXPECT_EQ(NextSlots(MustParse("0 0 * * FRI"), Utc(2026, 4, 1), 2),
            (Slots{Utc(2026, 4, 3), Utc(2026, 4, 10)}));
  // Only the bare `*` leaves a field unrestricted: `*/10` restricts days of the month to
  // 1, 11, 21, 31, so Mondays (6, 13, 20, 27) fire as well.
  EXPECT_EQ(NextSlots(MustParse("0 0 */10 * MON"), Utc(2026, 3, 31), 7),
            (Slots{Utc(2026, 4, 1), Utc(2026, 4, 6), Utc(2026, 4, 11), Utc(2026, 4, 13),
                   Utc(2026, 4, 20), Utc(2026, 4, 21), Utc(2026, 4, 27)}));
}

TEST(CronScheduleTest, DaysOfTheMonthSkipMonthsTooShortForThem) {
  EXPECT_EQ(NextSlots(MustParse("0 0 31 * *"), Utc(2026, 4, 1), 6),
            (Slots{Utc(2026, 5, 31), Utc(2026, 7, 31), Utc(2026, 8, 31), Utc(2026, 10, 31),
                   Utc(2026, 12, 31), Utc(2027, 1, 31)}));
  EXPECT_EQ(NextSlots(MustParse("0 0 30 * *"), Utc(2026, 1, 31), 2),
            (Slots{Utc(2026, 3, 30), Utc(2026, 4, 30)}));
  EXPECT_EQ(MustParse("0 0 31 * *").PreviousSlot(Utc(2026, 7, 30)), Utc(2026, 5, 31));
}

TEST(CronScheduleTest, FebruaryTheTwentyNinthFiresInLeapYearsOnly) {
  CronSchedule leap_day = MustParse("0 0 29 2 *");
  EXPECT_EQ(NextSlots(leap_day, Utc(2026, 3, 1), 2), (Slots{Utc(2028, 2, 29), Utc(2032, 2, 29)}));
  // 2100 is no leap year: eight years pass between two slots.
  EXPECT_EQ(leap_day.NextSlot(Utc(2096, 2, 29)), Utc(2104, 2, 29));
  EXPECT_EQ(leap_day.PreviousSlot(Utc(2104, 2, 28)), Utc(2096, 2, 29));
  EXPECT_EQ(leap_day.PreviousSlot(Utc(2028, 2, 29)), Utc(2028, 2, 29));
  // February's 28th in a leap year is not its last day.
  EXPECT_EQ(MustParse("0 0 28 2 *").NextSlot(Utc(2028, 1, 1)), Utc(2028, 2, 28));
}

TEST(CronScheduleTest, YearlyFiresOnNewYear) {
  CronSchedule new_year = MustParse("0 0 1 1 *");
  EXPECT_EQ(new_year.NextSlot(Utc(2026, 6, 1)), Utc(2027, 1, 1));
  EXPECT_EQ(new_year.PreviousSlot(Utc(2026, 6, 1)), Utc(2026, 1, 1));
}

TEST(CronScheduleTest, PreviousSlotIsEmptyOnlyBeforeTheFirstSlotSince1970) {
  CronSchedule leap_day = MustParse("0 0 29 2 *");
  EXPECT_EQ(leap_day.PreviousSlot(Utc(1972, 2, 28)), std::nullopt);  // 1972 is the first leap
  EXPECT_EQ(leap_day.PreviousSlot(Utc(1972, 3, 1)), Utc(1972, 2, 29));
  EXPECT_EQ(MustParse("0 0 1 1 *").PreviousSlot(-1), std::nullopt);
  EXPECT_EQ(MustParse("0 0 1 1 *").PreviousSlot(0), 0);
}

TEST(CronScheduleTest, InstantsOutsideTheRangeAreTakenAsItsEnds) {
  CronSchedule new_year = MustParse("0 0 1 1 *");
  EXPECT_EQ(new_year.NextSlot(std::numeric_limits<int64_t>::min()), 0);
  EXPECT_EQ(new_year.PreviousSlot(std::numeric_limits<int64_t>::max()), Utc(9999, 1, 1));
  EXPECT_EQ(new_year.NextSlot(std::numeric_limits<int64_t>::max()), Utc(10000, 1, 1));
}

// Every error names its field and says what is wrong.
void ExpectError(const std::string& cron, const std::string& message,
                 const std::string& tz = "UTC") {
  StatusOr<CronSchedule> schedule = CronSchedule::Parse(cron, tz);
  ASSERT_FALSE(schedule.ok()) << cron;
  EXPECT_EQ(schedule.status().code(), StatusCode::kInvalidArgument) << cron;
  EXPECT_EQ(schedule.status().message(), message) << cron;
}

TEST(CronScheduleTest, WrongFieldCount) {
  const std::string expected =
      "cron: expected 5 fields (minute hour day-of-month month day-of-week), got ";
  ExpectError("0 0 *", expected + "3");
  ExpectError("0 0 0 * * *", expected + "6");
  ExpectError("   ", expected + "0");
}

TEST(CronScheduleTest, ValuesOutOfRange) {
  ExpectError("60 * * * *", "cron field 1 (minute): 60 is out of range 0-59");
  ExpectError("0 25 * * *", "cron field 2 (hour): 25 is out of range 0-23");
  ExpectError("0 0 0 * *", "cron field 3 (day-of-month): 0 is out of range 1-31");
  ExpectError("0 0 32 * *", "cron field 3 (day-of-month): 32 is out of range 1-31");
  ExpectError("0 0 1 13 *", "cron field 4 (month): 13 is out of range 1-12");
  ExpectError("0 0 * * 8", "cron field 5 (day-of-week): 8 is out of range 0-7");
  ExpectError("0 1-99999999999 * * *", "cron field 2 (hour): 99999999999 is out of range 0-23");
}

TEST(CronScheduleTest, WordsThatAreNotValues) {
  ExpectError("x * * * *", "cron field 1 (minute): \"x\" is not a number");
  ExpectError("0 0 1 FOO *",
              "cron field 4 (month): \"FOO\" is not a number or month name (JAN-DEC)");
  ExpectError("0 0 1 MON *",
              "cron field 4 (month): \"MON\" is not a number or month name (JAN-DEC)");
  ExpectError("0 0 * * JAN",
              "cron field 5 (day-of-week): \"JAN\" is not a number or weekday name (SUN-SAT)");
  ExpectError("MON * * * *", "cron field 1 (minute): \"MON\" is not a number");
}

TEST(CronScheduleTest, MalformedListsRangesAndSteps) {
  ExpectError("1,,2 * * * *", "cron field 1 (minute): empty element in list \"1,,2\"");
  ExpectError("0 1, * * *", "cron field 2 (hour): empty element in list \"1,\"");
  ExpectError("0 5-1 * * *", "cron field 2 (hour): range \"5-1\" runs backwards (5 > 1)");
  ExpectError("0 0 * * SAT-MON",
              "cron field 5 (day-of-week): range \"SAT-MON\" runs backwards (6 > 1)");
  ExpectError("-5 * * * *", "cron field 1 (minute): \"-5\" is missing a value");
  ExpectError("*/0 * * * *", "cron field 1 (minute): step in \"*/0\" must be at least 1");
  ExpectError("*/x * * * *", "cron field 1 (minute): step \"x\" in \"*/x\" is not a number");
  ExpectError("10/5 * * * *",
              "cron field 1 (minute): \"10/5\": a step needs * or a range before the /");
}

TEST(CronScheduleTest, SpecsThatNeverFire) {
  ExpectError("0 0 30 2 *",
              "cron \"0 0 30 2 *\" never fires: day-of-month 30 never occurs in month 2");
  ExpectError("0 0 31 APR,JUN,SEP,NOV *",
              "cron \"0 0 31 APR,JUN,SEP,NOV *\" never fires: day-of-month 31 never occurs in "
              "month APR,JUN,SEP,NOV");
  // With a weekday as well, the day rule is "either": Mondays of February fire.
  EXPECT_EQ(MustParse("0 0 30 2 MON").NextSlot(Utc(2026, 1, 1)), Utc(2026, 2, 2));
}

TEST(CronScheduleTest, UnknownTimeZone) {
  ExpectError("0 0 * * *", "time zone \"Mars/Olympus\": unknown IANA time zone", "Mars/Olympus");
  ExpectError("0 0 * * *", "time zone \"\": unknown IANA time zone", "");
  ExpectError("0 0 * * *", "time zone \"../../etc/passwd\": unknown IANA time zone",
              "../../etc/passwd");
}

}  // namespace
}  // namespace benchfleet::schedule
