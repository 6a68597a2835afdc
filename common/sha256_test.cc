#include "common/sha256.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace benchfleet {
namespace {

// FIPS 180-2's examples.
TEST(Sha256Test, KnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, PiecesHashAsTheWhole) {
  std::string bytes;
  for (int i = 0; i < 100000; ++i) bytes += static_cast<char>(i * 7);
  Sha256 hash;
  hash.Update(bytes.substr(0, 1));
  hash.Update(bytes.substr(1, 65535));
  hash.Update(bytes.substr(65536));
  EXPECT_EQ(hash.FinalHex(), Sha256Hex(bytes));
}

TEST(Sha256Test, FileDigestAndMissingFile) {
  const std::string path = testing::TempDir() + "/sha256_test_file";
  std::string bytes(3 << 20, 'x');  // past one read piece
  bytes[12345] = 'y';
  std::ofstream(path, std::ios::binary) << bytes;
  auto digest = Sha256OfFile(path);
  ASSERT_TRUE(digest.ok()) << digest.status().ToString();
  EXPECT_EQ(digest->sha256, Sha256Hex(bytes));
  EXPECT_EQ(digest->size, static_cast<int64_t>(bytes.size()));
  std::filesystem::remove(path);
  auto missing = Sha256OfFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

TEST(Sha256Test, IsSha256HexTakesOnly64LowercaseHexDigits) {
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("abc")));
  EXPECT_FALSE(IsSha256Hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
  EXPECT_FALSE(IsSha256Hex(Sha256Hex("abc").substr(1)));
  EXPECT_FALSE(IsSha256Hex("../../etc/passwd"));
}

TEST(Sha256Test, Base64RoundTripsAndRefusesNoise) {
  for (const std::string& bytes : {std::string(), std::string("a"), std::string("ab"),
                                   std::string("abc"), std::string("\0\xff\x10", 3)}) {
    auto back = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, bytes);
  }
  EXPECT_EQ(Base64Encode("abc"), "YWJj");
  EXPECT_FALSE(Base64Decode("YWJj!").ok());
  EXPECT_FALSE(Base64Decode("YWJ").ok());
}

}  // namespace
}  // namespace benchfleet
