// The coordinator's typed replies to clients, both ways, against their golden examples:
// what the coordinator's struct writes is the golden message, and what the CLI's read
// of it writes back unchanged.
#include "common/client_replies.h"

#include <gtest/gtest.h>

#include "common/golden_round_trip.h"

namespace benchfleet {
namespace {

TEST(ClientRepliesTest, EveryTypedReplyWritesItsGoldenExampleAndReadsItBack) {
  ExpectRoundTrip<SubmittedReply>("submitted");
  ExpectRoundTrip<CancelledReply>("cancelled");
  ExpectRoundTrip<PrunedReply>("pruned");
  ExpectRoundTrip<RowsReply>("rows");
  ExpectRoundTrip<SchedulesReply>("schedules");
}

TEST(ClientRepliesTest, RowsAreReadByColumnNameAndEachRowHasOneValuePerColumn) {
  auto rows = RowsReply::FromJson(Golden("rows").body);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->Objects().size(), 1u);
  EXPECT_EQ(rows->Objects()[0], json({{"model", "mlp"}, {"batch_size", 64}, {"median_ms", 1.12}}));
  json body = Golden("rows").body;
  body["rows"].push_back(json::array({"cnn", 8}));
  EXPECT_EQ(RowsReply::FromJson(body).status().message(),
            "rows.rows[1]: must be an array of 3 values, one per column, got [\"cnn\",8]");
  body = Golden("rows").body;
  body["rows"][0][1] = json::object();
  EXPECT_EQ(RowsReply::FromJson(body).status().message(),
            "rows.rows[0]: values are integers, reals, strings or null, got {}");
  body = Golden("rows").body;
  body["columns"][2] = 3;
  EXPECT_EQ(RowsReply::FromJson(body).status().message(), "rows.columns: must hold names, got 3");
}

TEST(ClientRepliesTest, ASchedulesEntryNamesTheFieldAtFault) {
  json body = Golden("schedules").body;
  body["schedules"][0]["overlap"] = "sometimes";
  EXPECT_EQ(SchedulesReply::FromJson(body).status().message(),
            "schedules.schedules[0].overlap: must be \"skip\" or \"queue\", got \"sometimes\"");
  body = Golden("schedules").body;
  body["schedules"][0].erase("cron");
  EXPECT_EQ(SchedulesReply::FromJson(body).status().message(),
            "schedules.schedules[0].cron: missing");
  body = Golden("schedules").body;
  body["schedules"][0]["start_deadline_s"] = nullptr;
  body["schedules"][0]["next_slot"] = nullptr;
  auto entry = SchedulesReply::FromJson(body);
  ASSERT_TRUE(entry.ok()) << entry.status().message();
  EXPECT_FALSE(entry->schedules[0].start_deadline_s);
  EXPECT_FALSE(entry->schedules[0].next_slot);
  EXPECT_EQ(entry->ToJson(), body);
}

TEST(ClientRepliesTest, OutOfRangeValuesAreRefusedByName) {
  json submitted = Golden("submitted").body;
  submitted["jobs"] = -1;
  EXPECT_EQ(SubmittedReply::FromJson(submitted).status().message(),
            "submitted.jobs: must be an integer >= 0, got -1");
  submitted = Golden("submitted").body;
  submitted["agents"] = json::array({"node-a", 7});
  EXPECT_EQ(SubmittedReply::FromJson(submitted).status().message(),
            "submitted.agents: must hold names, got 7");
  submitted = Golden("submitted").body;
  submitted["skipped"]["count"] = "many";
  EXPECT_EQ(SubmittedReply::FromJson(submitted).status().message(),
            "submitted.skipped.count: must be an integer >= 0, got \"many\"");
  submitted = Golden("submitted").body;
  submitted["skipped"]["first"] = json::array({1});
  EXPECT_EQ(SubmittedReply::FromJson(submitted).status().message(),
            "submitted.skipped.first: must hold {job, reason} objects, got 1");
  json cancelled = Golden("cancelled").body;
  cancelled["jobs_cancelled"] = -5;
  EXPECT_EQ(CancelledReply::FromJson(cancelled).status().message(),
            "cancelled.jobs_cancelled: must be an integer >= 0, got -5");
  json pruned = Golden("pruned").body;
  pruned["bytes_after"] = -1;
  EXPECT_EQ(PrunedReply::FromJson(pruned).status().message(),
            "pruned.bytes_after: must be an integer >= 0, got -1");
}

}  // namespace
}  // namespace benchfleet
