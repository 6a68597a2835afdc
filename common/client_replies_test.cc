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
}

TEST(ClientRepliesTest, OutOfRangeValuesAreRefusedByName) {
  json submitted = Golden("submitted").body;
  submitted["jobs"] = -1;
  EXPECT_EQ(SubmittedReply::FromJson(submitted).status().message(),
            "submitted.jobs: must be an integer >= 0, got -1");
  submitted = Golden("submitted").body;
  submitted["agents"] = json::array({"node-a", 7});
  EXPECT_EQ(SubmittedReply::FromJson(submitted).status().message(), "submitted.agents: must hold names, got 7");
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
  EXPECT_EQ(PrunedReply::FromJson(pruned).status().message(), "pruned.bytes_after: must be an integer >= 0, got -1");
}

}  // namespace
}  // namespace benchfleet
