#include "coordinator/allow_list.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/curve.h"

namespace benchfleet {
namespace {

class AllowListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() / ("bf-allow-" + std::to_string(getpid()));
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(AllowListTest, KeysNamesAndCommentsAreRead) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
  auto a = GenerateCurveKeyPair();
  auto b = GenerateCurveKeyPair();
  ASSERT_TRUE(a.ok() && b.ok());
  std::ofstream(path_) << "# agents\n\n" << a->public_key << " gpu-01\n  " << b->public_key << "\n";
  auto keys = ReadAllowList(path_);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, (std::set<std::string>{a->public_key, b->public_key}));
}

TEST_F(AllowListTest, ABadLineIsAnErrorNamingItsNumber) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
  auto pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok());
  std::ofstream(path_) << pair->public_key << " ok\nnot-a-key\n";
  auto keys = ReadAllowList(path_);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find(":2: not a 40-character Z85 public key"),
            std::string::npos)
      << keys.status().message();
  EXPECT_EQ(ReadAllowList(path_.string() + ".missing").status().code(), StatusCode::kNotFound);
}

TEST(LoopbackEndpointTest, OnlyThisMachineIsLoopback) {
  EXPECT_TRUE(IsLoopbackEndpoint("tcp://127.0.0.1:5555"));
  EXPECT_TRUE(IsLoopbackEndpoint("tcp://localhost:5555"));
  EXPECT_TRUE(IsLoopbackEndpoint("ipc:///tmp/x"));
  EXPECT_TRUE(IsLoopbackEndpoint("inproc://x"));
  EXPECT_FALSE(IsLoopbackEndpoint("tcp://*:5555"));
  EXPECT_FALSE(IsLoopbackEndpoint("tcp://0.0.0.0:5555"));
  EXPECT_FALSE(IsLoopbackEndpoint("tcp://10.0.0.1:5555"));
}

}  // namespace
}  // namespace benchfleet
