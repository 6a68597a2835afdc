// The coordinator's typed replies to clients, both ways, against their golden examples:
// what the coordinator's struct writes is the golden message, and what the CLI's read
// of it writes back unchanged.
#include "common/client_replies.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/files.h"

namespace benchfleet {
namespace {

const std::filesystem::path kGolden = std::filesystem::path(BENCHFLEET_SCHEMAS_DIR) / "golden";

Message Golden(const std::string& type) {
  auto text = ReadWholeFile((kGolden / (type + ".json")).string());
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  auto decoded = Decode(text.ok() ? *text : "");
  EXPECT_TRUE(decoded.ok()) << type << ": " << decoded.status().ToString();
  return decoded.ok() ? *decoded : Message{};
}

template <typename T>
void ExpectRoundTrip(const std::string& type) {
  SCOPED_TRACE(type);
  const Message golden = Golden(type);
  ASSERT_EQ(golden.type, T::kType);
  auto parsed = T::FromJson(golden.body);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->ToJson(), golden.body);
  auto decoded = Decode(Encode(ToMessage(*parsed)));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->body, golden.body);
}

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
