#include "agent/model_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace benchfleet {
namespace {

namespace fs = std::filesystem;

class ModelCacheTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "/model_cache_test_" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
  }
  // Fetches `bytes` into `cache` as the coordinator would send them, in chunks of 3 bytes
  // (or `chunk_bytes`).
  static StatusOr<std::string> Fetch(ModelCache& cache, const std::string& bytes,
                                     const std::string& sha256, size_t chunk_bytes = 3) {
    cache.Begin(sha256);
    while (true) {
      ModelChunkReply chunk;
      chunk.sha256 = sha256;
      chunk.offset = cache.received();
      chunk.size = static_cast<int64_t>(bytes.size());
      chunk.data = bytes.substr(static_cast<size_t>(chunk.offset), chunk_bytes);
      ASSIGN_OR_RETURN(auto progress, cache.Append(chunk));
      if (progress.done) return progress.path;
    }
  }
  std::string dir_;
};

TEST_F(ModelCacheTest, AFetchedModelIsCheckedKeptAndFound) {
  auto cache = ModelCache::Open(dir_, 1 << 20);
  ASSERT_TRUE(cache.ok());
  const std::string bytes = "a TorchScript file's bytes";
  EXPECT_EQ((*cache)->Lookup(Sha256Hex(bytes)).status().code(), StatusCode::kNotFound);
  auto path = Fetch(**cache, bytes, Sha256Hex(bytes));
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto found = (*cache)->Lookup(Sha256Hex(bytes));
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, *path);
  std::ifstream in(*found);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), bytes);
}

TEST_F(ModelCacheTest, ATamperedCopyIsRemovedNotUsed) {
  auto cache = ModelCache::Open(dir_, 1 << 20);
  ASSERT_TRUE(cache.ok());
  const std::string bytes = "weights v1";
  auto path = Fetch(**cache, bytes, Sha256Hex(bytes));
  ASSERT_TRUE(path.ok());
  std::ofstream(*path, std::ios::binary | std::ios::trunc) << "weights v2";
  EXPECT_EQ((*cache)->Lookup(Sha256Hex(bytes)).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(*path));
}

TEST_F(ModelCacheTest, BytesThatAreNotTheirNameAreNotKept) {
  auto cache = ModelCache::Open(dir_, 1 << 20);
  ASSERT_TRUE(cache.ok());
  auto fetched = Fetch(**cache, "other bytes", Sha256Hex("the bytes asked for"));
  ASSERT_FALSE(fetched.ok());
  EXPECT_NE(fetched.status().message().find("arrived with sha256"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(ModelCacheTest, TheLeastRecentlyUsedGoBeyondTheLimit) {
  auto cache = ModelCache::Open(dir_, 25);  // room for two of the three 10-byte models
  ASSERT_TRUE(cache.ok());
  const std::string a = "model AAAA", b = "model BBBB", c = "model CCCC";
  ASSERT_TRUE(Fetch(**cache, a, Sha256Hex(a)).ok());
  ASSERT_TRUE(Fetch(**cache, b, Sha256Hex(b)).ok());
  // a used after b: b is the least recently used when c comes.
  fs::last_write_time(dir_ + "/" + Sha256Hex(b),
                      fs::file_time_type::clock::now() - std::chrono::hours(1));
  ASSERT_TRUE((*cache)->Lookup(Sha256Hex(a)).ok());
  ASSERT_TRUE(Fetch(**cache, c, Sha256Hex(c)).ok());
  EXPECT_TRUE((*cache)->Lookup(Sha256Hex(a)).ok());
  EXPECT_FALSE((*cache)->Lookup(Sha256Hex(b)).ok());
  EXPECT_TRUE((*cache)->Lookup(Sha256Hex(c)).ok());
}

TEST_F(ModelCacheTest, ALargeCopyIsCheckedASliceAtATime) {
  auto cache = ModelCache::Open(dir_, int64_t{1} << 30);
  ASSERT_TRUE(cache.ok());
  std::string bytes(int64_t{5} << 20, 'w');
  bytes[4 << 20] = 'x';
  ASSERT_TRUE(Fetch(**cache, bytes, Sha256Hex(bytes), 1 << 20).ok());
  EXPECT_TRUE((*cache)->Holds(Sha256Hex(bytes)));
  (*cache)->BeginCheck(Sha256Hex(bytes));
  int passes = 0;
  std::optional<StatusOr<std::string>> done;
  while (!(done = (*cache)->StepCheck(int64_t{1} << 20))) ++passes;
  EXPECT_GE(passes, 4);  // a slice of 1 MiB per pass, never the whole 5 MiB at once
  ASSERT_TRUE(done->ok()) << done->status().ToString();
  // Changed on disk: the check that ends removes it.
  {
    std::fstream out(**done, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(1 << 20);
    out.put('!');
  }
  (*cache)->BeginCheck(Sha256Hex(bytes));
  while (!(done = (*cache)->StepCheck(int64_t{1} << 20))) {
  }
  EXPECT_EQ(done->status().code(), StatusCode::kNotFound);
  EXPECT_FALSE((*cache)->Holds(Sha256Hex(bytes)));
}

TEST(AllowedLocalModelTest, OnlyFilesUnderTheAllowedDirectory) {
  const std::string root = testing::TempDir() + "/allowed_local_model";
  fs::remove_all(root);
  fs::create_directories(root + "/models/sub");
  fs::create_directories(root + "/models-other");
  std::ofstream(root + "/models/sub/m.pt") << "m";
  std::ofstream(root + "/models-other/m.pt") << "m";
  fs::create_symlink(root + "/models-other/m.pt", root + "/models/escape.pt");
  EXPECT_TRUE(AllowedLocalModel(root + "/models/sub/m.pt", root + "/models").ok());
  EXPECT_EQ(AllowedLocalModel(root + "/models/sub/../../models-other/m.pt", root + "/models")
                .status()
                .code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(AllowedLocalModel(root + "/models/escape.pt", root + "/models").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(AllowedLocalModel("/etc/shadow", root + "/models").status().code(),
            StatusCode::kPermissionDenied);
  auto none = AllowedLocalModel(root + "/models/sub/m.pt", "");
  EXPECT_EQ(none.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(none.status().message().find("--models-dir"), std::string::npos);
  EXPECT_FALSE(AllowedLocalModel(root + "/models/sub", root + "/models").ok());
}

}  // namespace
}  // namespace benchfleet
