#include "common/model_transfer.h"

#include <gtest/gtest.h>

#include "common/golden_round_trip.h"
#include "common/sha256.h"

namespace benchfleet {
namespace {

using nlohmann::json;

TEST(ModelTransferTest, GoldenUploadReadsAsTyped) {
  auto upload = ParseModelUpload(Golden("model_upload"));
  ASSERT_TRUE(upload.ok()) << upload.status().ToString();
  EXPECT_EQ(upload->data, std::string("PK\x03\x04", 4));
  EXPECT_EQ(upload->sha256, Sha256Hex(upload->data));
  EXPECT_EQ(upload->size, 4);
  // Written back, it is the golden's fields.
  json fields = Golden("model_upload").body;
  fields.erase("v");
  fields.erase("type");
  fields.erase("request_id");
  EXPECT_EQ(upload->ToJson(), fields);
}

TEST(ModelTransferTest, RepliesRoundTrip) {
  ExpectRoundTrip<ModelStoredReply>("model_stored");
  ExpectRoundTrip<ModelFetchRequest>("model_fetch");
  ExpectRoundTrip<ModelChunkReply>("model_chunk");
  ModelChunkReply chunk;
  chunk.sha256 = Sha256Hex("abc");
  chunk.size = 3;
  chunk.data = "abc";
  auto back = ModelChunkReply::FromJson(chunk.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->data, "abc");
  EXPECT_FALSE(back->error.has_value());
}

TEST(ModelTransferTest, RefusalsNameTheField) {
  auto refused = [](json change) {
    Message message = Golden("model_upload");
    message.body.merge_patch(change);
    auto parsed = ParseModelUpload(message);
    EXPECT_FALSE(parsed.ok()) << change.dump();
    return parsed.ok() ? std::string() : parsed.status().message();
  };
  EXPECT_NE(refused({{"sha256", "../../etc/passwd"}}).find("model_upload.sha256"),
            std::string::npos);
  EXPECT_NE(refused({{"size", 0}}).find("model_upload.size"), std::string::npos);
  EXPECT_NE(refused({{"size", kMaxModelBytes + 1}}).find("model_upload.size"), std::string::npos);
  EXPECT_NE(refused({{"offset", -1}}).find("model_upload.offset"), std::string::npos);
  EXPECT_NE(refused({{"data", "not base64!"}}).find("model_upload.data"), std::string::npos);
  EXPECT_NE(refused({{"offset", 2}}).find("past the file's size"), std::string::npos);
  EXPECT_NE(
      refused({{"data", std::string(kModelChunkBytes / 3 * 4 + 8, 'A')}}).find("model_upload.data"),
      std::string::npos);
}

}  // namespace
}  // namespace benchfleet
