#include "coordinator/security/allow_list.h"

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

TEST_F(AllowListTest, KeysRolesNamesAndCommentsAreRead) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
  auto a = GenerateCurveKeyPair();
  auto b = GenerateCurveKeyPair();
  auto c = GenerateCurveKeyPair();
  auto d = GenerateCurveKeyPair();
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  std::ofstream(path_) << "# agents\n\n"
                       << a->public_key << " agent gpu-01\n  " << b->public_key << "\tviewer\n"
                       << c->public_key << " operator ci job, nightly\n"
                       << d->public_key << " admin alice\n";
  auto keys = ReadAllowList(path_);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, (AllowList{{a->public_key, Role::kAgent},
                              {b->public_key, Role::kViewer},
                              {c->public_key, Role::kOperator},
                              {d->public_key, Role::kAdmin}}));
}

TEST_F(AllowListTest, ABadLineIsAnErrorNamingItsNumber) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
  auto pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok());
  std::ofstream(path_) << pair->public_key << " agent ok\nnot-a-key agent\n";
  auto keys = ReadAllowList(path_);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find(":2: not a 40-character Z85 public key"),
            std::string::npos)
      << keys.status().message();
  EXPECT_EQ(ReadAllowList(path_.string() + ".missing").status().code(), StatusCode::kNotFound);
}

TEST_F(AllowListTest, ALineWithoutAValidRoleIsAnErrorListingTheRoles) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
  auto pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok());
  // A list from before roles: the key alone.
  std::ofstream(path_) << "# fleet\n" << pair->public_key << "\n";
  auto keys = ReadAllowList(path_);
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(keys.status().message(),
            path_.string() + ":2: no role after the key: write agent, viewer, operator or admin");

  // A name where the role belongs, and a misspelt role.
  std::ofstream(path_) << pair->public_key << " gpu-01\n";
  EXPECT_EQ(
      ReadAllowList(path_).status().message(),
      path_.string() + ":1: \"gpu-01\" is not a role: write agent, viewer, operator or admin");
  std::ofstream(path_) << pair->public_key << " Admin alice\n";
  EXPECT_NE(ReadAllowList(path_).status().message().find(":1: \"Admin\" is not a role"),
            std::string::npos);
}

TEST_F(AllowListTest, AKeyListedTwiceIsAnError) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
  auto pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok());
  std::ofstream(path_) << pair->public_key << " viewer alice\n# later\n"
                       << pair->public_key << " admin alice\n";
  auto keys = ReadAllowList(path_);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find(":3: the key is already on line 1"), std::string::npos)
      << keys.status().message();
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
