// Schedules driven by a wall clock the test moves: every slot decided once (fired,
// skipped, missed), one sweep per slot tagged with it, across a restart and both
// daylight-saving changes.
#include <gtest/gtest.h>

#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;
using testing_fixture::Capabilities;  // not benchfleet::Capabilities

// 2026-12-01T00:00:00Z.
constexpr int64_t kDec1 = 1796083200;
constexpr int64_t kHour = 3600;
constexpr int64_t kDay = 24 * kHour;

const json kSweep = json::parse(
    R"({"name": "nightly-mlp", "placement": "any", "matrix": {"model": "mlp", "batch_size": [1, 2]}})");

class ScheduleTest : public CoordinatorTest {
 protected:
  Message Schedule(json fields) {
    fields["type"] = "schedule";
    return Request(fields);
  }
  void Add(const std::string& name, const std::string& cron, json extra = json::object()) {
    json fields = {{"action", "add"}, {"name", name}, {"cron", cron}, {"sweep", kSweep}};
    fields.update(extra);
    Message reply = Schedule(fields);
    ASSERT_EQ(reply.type, "schedules") << reply.body.dump();
  }
  // The clock at `unix_s`, and the loop's timer work done there.
  void At(int64_t unix_s) {
    wall_s_ = unix_s;
    coordinator_->Tick();
  }
  // The slots of the schedule's sweeps, oldest first.
  std::vector<std::string> SweepSlots(const std::string& schedule) {
    std::vector<std::string> slots;
    for (const json& row :
         Query("SELECT s.schedule_slot FROM sweeps s JOIN schedules c USING (schedule_id) "
               "WHERE c.name = '" +
               schedule + "' ORDER BY s.sweep_id")) {
      slots.push_back(row[0].get<std::string>());
    }
    return slots;
  }
  // {slot, outcome} of the schedule's history, oldest first.
  std::vector<std::pair<std::string, std::string>> Firings(const std::string& schedule) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const json& row : Query("SELECT slot, outcome FROM schedule_history WHERE schedule = '" +
                                 schedule + "' ORDER BY slot")) {
      out.emplace_back(row[0].get<std::string>(), row[1].get<std::string>());
    }
    return out;
  }
};

TEST_F(ScheduleTest, ThreeNightsMakeThreeSweepsEachTaggedWithItsSlotAndNoMore) {
  At(kDec1);
  Add("nightly", "0 2 * * *", {{"overlap", "queue"}});
  for (int night = 0; night < 3; ++night) {
    At(kDec1 + night * kDay + 2 * kHour - 1);  // a second before: nothing yet
    EXPECT_EQ(SweepSlots("nightly").size(), static_cast<size_t>(night));
    At(kDec1 + night * kDay + 2 * kHour + 5);
    At(kDec1 + night * kDay + 2 * kHour + 6);  // looked at again: still one sweep for it
  }
  EXPECT_EQ(SweepSlots("nightly"),
            (std::vector<std::string>{"2026-12-01T02:00:00.000Z", "2026-12-02T02:00:00.000Z",
                                      "2026-12-03T02:00:00.000Z"}));
  // Each sweep has the sweep file's jobs.
  for (const json& row : Query("SELECT count(*) FROM jobs j JOIN sweeps s USING (sweep_id) "
                               "WHERE s.schedule_id IS NOT NULL GROUP BY s.sweep_id")) {
    EXPECT_EQ(row[0], 2);
  }
  // The history, as `benchfleet schedule history` shows it.
  Message history = Schedule({{"action", "history"}, {"name", "nightly"}});
  ASSERT_EQ(history.type, "rows") << history.body.dump();
  ASSERT_EQ(history.body["rows"].size(), 3u);
  EXPECT_EQ(history.body["rows"][0][1], "2026-12-03T02:00:00.000Z");  // newest first
  EXPECT_EQ(history.body["rows"][0][2], "started");
  EXPECT_TRUE(history.body["rows"][0][4].is_number_integer());  // its sweep
  // list shows the next slot.
  Message list = Schedule({{"action", "list"}});
  ASSERT_EQ(list.body["schedules"].size(), 1u);
  EXPECT_EQ(list.body["schedules"][0]["next_slot"], "2026-12-04T02:00:00.000Z");
}

TEST_F(ScheduleTest, ARestartAcrossMissedSlotsRunsOnlyTheLatestOnceWithinItsDeadline) {
  At(kDec1);
  Add("hourly", "0 * * * *", {{"overlap", "queue"}});
  Add("strict", "0 * * * *", {{"overlap", "queue"}, {"start_deadline_s", 600}});
  coordinator_.reset();                   // down from 00:00 ...
  wall_s_ = kDec1 + 3 * kHour + 20 * 60;  // ... to 03:20
  StartWithStoreAt(dir_ / "results.db");
  At(wall_s_);
  At(wall_s_ + 1);
  // 01:00 and 02:00 missed; 03:00 runs, once, 20 minutes late (within one period).
  EXPECT_EQ(SweepSlots("hourly"), (std::vector<std::string>{"2026-12-01T03:00:00.000Z"}));
  EXPECT_EQ(Firings("hourly"), (std::vector<std::pair<std::string, std::string>>{
                                   {"2026-12-01T01:00:00.000Z", "missed"},
                                   {"2026-12-01T02:00:00.000Z", "missed"},
                                   {"2026-12-01T03:00:00.000Z", "started"}}));
  // With a 10-minute start deadline the 03:00 slot is too late to start at 03:20.
  EXPECT_TRUE(SweepSlots("strict").empty());
  EXPECT_EQ(Firings("strict").back(),
            std::make_pair(std::string("2026-12-01T03:00:00.000Z"), std::string("missed")));
  // And the next slot runs as usual.
  At(kDec1 + 4 * kHour + 1);
  EXPECT_EQ(SweepSlots("strict"), (std::vector<std::string>{"2026-12-01T04:00:00.000Z"}));
}

TEST_F(ScheduleTest, DaylightSavingChangesFireOnceAfterTheGapAndOnceInTheRepeatedHour) {
  // Europe/Berlin: on 2027-03-28 clocks jump from 02:00 CET to 03:00 CEST (01:00 UTC),
  // so 02:30 does not exist; on 2027-10-31 they go back from 03:00 CEST to 02:00 CET
  // (01:00 UTC), so 02:30 happens twice (00:30 and 01:30 UTC).
  At(1806188400);  // 2027-03-27T23:00:00Z
  Add("berlin", "30 2 * * *", {{"tz", "Europe/Berlin"}, {"overlap", "queue"}});
  At(1806188400 + 2 * kHour - 1);  // 00:59:59 UTC, still before the gap: nothing
  EXPECT_TRUE(SweepSlots("berlin").empty());
  At(1806188400 + 2 * kHour + 1);  // right after the gap
  At(1806188400 + 3 * kHour);      // 02:00 UTC: nothing more that day
  EXPECT_EQ(SweepSlots("berlin"), (std::vector<std::string>{"2027-03-28T01:00:00.000Z"}));
  At(1806188400 + kDay + 3 * kHour / 2 + 1);  // 2027-03-29 02:30 CEST = 00:30 UTC
  EXPECT_EQ(SweepSlots("berlin").back(), "2027-03-29T00:30:00.000Z");

  Schedule({{"action", "remove"}, {"name", "berlin"}});
  At(1824937200);  // 2027-10-30T23:00:00Z
  Add("autumn", "30 2 * * *", {{"tz", "Europe/Berlin"}, {"overlap", "queue"}});
  At(1824937200 + 3 * kHour / 2 + 1);  // 00:30 UTC: the first 02:30
  At(1824937200 + 5 * kHour / 2 + 1);  // 01:30 UTC: 02:30 again, not a second firing
  At(1824937200 + 7 * kHour / 2);
  EXPECT_EQ(SweepSlots("autumn"), (std::vector<std::string>{"2027-10-31T00:30:00.000Z"}));
}

TEST_F(ScheduleTest, ASlotWhileTheLastSweepStillRunsIsSkippedUnlessTheScheduleQueues) {
  At(kDec1);
  Add("skipping", "*/10 * * * *");
  Add("queueing", "*/10 * * * *", {{"overlap", "queue"}});
  At(kDec1 + 10 * 60 + 1);  // both fire; no agent runs their jobs, so they still run
  At(kDec1 + 20 * 60 + 1);
  EXPECT_EQ(SweepSlots("skipping"), (std::vector<std::string>{"2026-12-01T00:10:00.000Z"}));
  EXPECT_EQ(Firings("skipping").back(),
            std::make_pair(std::string("2026-12-01T00:20:00.000Z"), std::string("skipped")));
  json reason = Query(
      "SELECT reason FROM schedule_history WHERE schedule = 'skipping' AND outcome = 'skipped'");
  EXPECT_NE(reason[0][0].get<std::string>().find("still runs"), std::string::npos) << reason.dump();
  EXPECT_EQ(SweepSlots("queueing").size(), 2u);
  // Once the running sweep is cancelled, the next slot fires again.
  const int64_t running = Query(
      "SELECT max(sweep_id) FROM sweeps s JOIN schedules c USING (schedule_id) "
      "WHERE c.name = 'skipping'")[0][0];
  EXPECT_EQ(Request({{"type", "cancel"}, {"sweep_id", running}}).type, "cancelled");
  At(kDec1 + 30 * 60 + 1);
  EXPECT_EQ(SweepSlots("skipping").size(), 2u);
}

TEST_F(ScheduleTest, BadSchedulesAreRefusedNamingWhyAndRunNowFiresOnce) {
  At(kDec1);
  auto refused = [&](json fields, const std::string& code, const std::string& words) {
    fields["action"] = fields.value("action", "add");
    if (fields["action"] == "add") {
      fields["name"] = fields.value("name", "n");
      fields["cron"] = fields.value("cron", "0 2 * * *");
      fields["sweep"] = fields.value("sweep", kSweep);
    }
    Message reply = Schedule(fields);
    EXPECT_EQ(reply.type, "error") << fields.dump();
    EXPECT_EQ(reply.body.value("code", ""), code) << reply.body.dump();
    EXPECT_NE(reply.body.value("message", "").find(words), std::string::npos) << reply.body.dump();
  };
  refused({{"cron", "0 25 * * *"}}, "invalid_argument", "hour");
  refused({{"cron", "0 2 * *"}}, "invalid_argument", "5 fields");
  refused({{"tz", "Mars/Olympus"}}, "invalid_argument", "Mars/Olympus");
  refused({{"sweep", {{"name", "x"}, {"matrix", {{"model", "resnet"}, {"batch_size", 1}}}}}},
          "invalid_argument", "resnet");
  refused({{"name", "has space"}}, "invalid_argument", "schedule.name");
  refused({{"action", "remove"}, {"name", "nope"}}, "not_found", "nope");
  refused({{"action", "run_now"}, {"name", "nope"}}, "not_found", "nope");
  refused({{"action", "sometimes"}}, "invalid_argument", "schedule.action");
  Add("nightly", "0 2 * * *");
  refused({{"name", "nightly"}}, "failed_precondition", "exists");
  EXPECT_TRUE(Query("SELECT * FROM schedules WHERE name <> 'nightly'").empty());

  // run-now: a sweep at once, recorded as such; a resend with the same id fires once.
  json run_now = {{"action", "run_now"}, {"name", "nightly"}, {"submission_id", "now-1"}};
  Message first = Schedule(run_now);
  ASSERT_EQ(first.type, "submitted") << first.body.dump();
  Message again = Schedule(run_now);
  EXPECT_EQ(again.body["sweep_id"], first.body["sweep_id"]);
  EXPECT_TRUE(again.body.value("existing", false));
  EXPECT_EQ(Query("SELECT count(*) FROM schedule_history WHERE outcome = 'run_now'")[0][0], 1);
  // Removed: it fires no more; its history stays.
  EXPECT_EQ(Schedule({{"action", "remove"}, {"name", "nightly"}}).type, "schedules");
  At(kDec1 + 2 * kHour + 1);
  EXPECT_EQ(SweepSlots("nightly").size(), 1u);  // the run-now's only
  EXPECT_TRUE(Schedule({{"action", "list"}}).body["schedules"].empty());
}

}  // namespace
}  // namespace benchfleet
