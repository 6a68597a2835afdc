#include "common/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace benchfleet {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "bf-files-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(FilesTest, AWrittenFileReadsBackWholeAndLeavesNoTemporaryFile) {
  const std::string path = dir_ + "/result.json";
  ASSERT_TRUE(WriteFileAtomically(path, "{\"a\": 1}").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "{\"a\": 2}").ok());  // replaces it
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "{\"a\": 2}");
  auto doc = ReadJsonFile(path);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["a"], 2);
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "result.json");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(FilesTest, ErrorsSayWhichFileAndWhy) {
  auto missing = ReadWholeFile(dir_ + "/nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir_ + "/nothing"), std::string::npos);

  ASSERT_TRUE(WriteFileAtomically(dir_ + "/bad.json", "{\"a\": ").ok());
  auto bad = ReadJsonFile(dir_ + "/bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("bad.json is not valid JSON"), std::string::npos)
      << bad.status().message();

  // A directory that does not exist: the target is untouched and nothing is left over.
  auto unwritable = WriteFileAtomically(dir_ + "/no/such/dir/x.json", "{}");
  ASSERT_FALSE(unwritable.ok());
  EXPECT_EQ(unwritable.code(), StatusCode::kUnavailable);
  EXPECT_NE(unwritable.message().find("cannot create"), std::string::npos) << unwritable.message();
}

TEST_F(FilesTest, AFailedRenameLeavesTheOldFileAndNoTemporary) {
  // The target is a non-empty directory: rename(2) refuses to replace it.
  const std::string path = dir_ + "/occupied";
  fs::create_directories(path + "/inside");
  auto status = WriteFileAtomically(path, "new");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("cannot rename"), std::string::npos) << status.message();
  EXPECT_TRUE(fs::is_directory(path));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_FALSE(IsUnfinishedWrite(entry.path().filename().string(), "occupied")) << entry.path();
  }
}

TEST(UnfinishedWriteTest, OnlyTheMarkedTemporaryOfTheSuffixIsALeftover) {
  EXPECT_TRUE(IsUnfinishedWrite("job-1-1.result.json.tmp-4242", ".result.json"));
  EXPECT_FALSE(IsUnfinishedWrite("job-1-1.result.json", ".result.json"));
  EXPECT_FALSE(IsUnfinishedWrite("job-1-1.result.json.tmp-", ".result.json"));
  EXPECT_FALSE(IsUnfinishedWrite("job-1-1.result.json.tmp-12x", ".result.json"));
  EXPECT_FALSE(IsUnfinishedWrite("notes.txt.tmp-12", ".result.json"));
}

TEST(StatusOrDeathTest, ReadingTheValueOfAnErrorAbortsNamingIt) {
  StatusOr<int> error = NotFound("no such job 7");
  EXPECT_DEATH((void)error.value(), "no such job 7");
  const StatusOr<std::string> also = InvalidArgument("batch_size must be positive");
  EXPECT_DEATH((void)also->size(), "batch_size must be positive");
  StatusOr<int> fine = 3;
  EXPECT_EQ(fine.value(), 3);
}

}  // namespace
}  // namespace benchfleet
