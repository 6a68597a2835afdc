#include "coordinator/store/model_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace benchfleet {
namespace {

namespace fs = std::filesystem;

class ModelStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "/model_store_test_" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    bytes_.resize(static_cast<size_t>(kModelChunkBytes) * 2 + 1000);
    for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = static_cast<char>(i * 31 + i / 4096);
    sha256_ = Sha256Hex(bytes_);
  }
  ModelUploadRequest Chunk(int64_t offset, int64_t length) const {
    return {sha256_, static_cast<int64_t>(bytes_.size()), offset, bytes_.substr(offset, length)};
  }
  std::string dir_;
  std::string bytes_;
  std::string sha256_;
  MonoTime now_{};
};

TEST_F(ModelStoreTest, ChunksInOrderMakeTheFileAndAgentsReadItBack) {
  auto store = ModelStore::Open(dir_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto asked = (*store)->Accept(Chunk(0, 0), now_);
  ASSERT_TRUE(asked.ok());
  EXPECT_FALSE(asked->stored);
  EXPECT_EQ(asked->next_offset, 0);
  int64_t offset = 0;
  while (true) {
    auto reply = (*store)->Accept(Chunk(offset, kModelChunkBytes), now_);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    if (reply->stored) break;
    ASSERT_GT(reply->next_offset, offset);
    offset = reply->next_offset;
  }
  EXPECT_TRUE((*store)->Has(sha256_));
  std::string back;
  while (static_cast<int64_t>(back.size()) < static_cast<int64_t>(bytes_.size())) {
    ModelChunkReply chunk = (*store)->Read({sha256_, static_cast<int64_t>(back.size())});
    ASSERT_FALSE(chunk.error.has_value()) << *chunk.error;
    EXPECT_EQ(chunk.size, static_cast<int64_t>(bytes_.size()));
    ASSERT_FALSE(chunk.data.empty());
    back += chunk.data;
  }
  EXPECT_EQ(back, bytes_);
  // A second upload of the same content is answered at once, and a restart keeps it.
  store->reset();
  auto reopened = ModelStore::Open(dir_);
  ASSERT_TRUE(reopened.ok());
  auto again = (*reopened)->Accept(Chunk(0, 0), now_);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->stored);
}

TEST_F(ModelStoreTest, AChunkOutOfOrderIsNotWrittenAndTheReplySaysWhereToGoOn) {
  auto store = ModelStore::Open(dir_);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Accept(Chunk(0, 1000), now_).ok());
  auto skipped = (*store)->Accept(Chunk(5000, 1000), now_);
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(skipped->next_offset, 1000);
  auto resent = (*store)->Accept(Chunk(0, 1000), now_);  // a resend after a lost reply
  ASSERT_TRUE(resent.ok());
  EXPECT_EQ(resent->next_offset, 1000);
  EXPECT_FALSE((*store)->Has(sha256_));
}

TEST_F(ModelStoreTest, ContentThatIsNotItsHashIsDropped) {
  auto store = ModelStore::Open(dir_);
  ASSERT_TRUE(store.ok());
  ModelUploadRequest lie{Sha256Hex("something else"), 3, 0, "abc"};
  auto refused = (*store)->Accept(lie, now_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(Sha256Hex("abc")), std::string::npos);
  EXPECT_FALSE((*store)->Has(lie.sha256));
  EXPECT_TRUE(fs::is_empty(dir_));
  ModelChunkReply unknown = (*store)->Read({lie.sha256, 0});
  ASSERT_TRUE(unknown.error.has_value());
  EXPECT_NE(unknown.error->find("no model"), std::string::npos);
}

TEST_F(ModelStoreTest, AnUnfinishedUploadIsStartedOverAfterARestart) {
  {
    auto store = ModelStore::Open(dir_);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Accept(Chunk(0, 1000), now_).ok());
  }
  auto store = ModelStore::Open(dir_);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(fs::is_empty(dir_));
  auto reply = (*store)->Accept(Chunk(1000, 1000), now_);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->next_offset, 0);
}

}  // namespace
}  // namespace benchfleet
