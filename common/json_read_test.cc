#include "common/json_read.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

using nlohmann::json;

TEST(JsonReadTest, IntegersAreReadWithinTheirRange) {
  const json object = {
      {"n", 7}, {"big", 18446744073709551615ull}, {"text", "7"}, {"nothing", nullptr}};
  EXPECT_EQ(*ReadInteger(object, "m", "n", {1, 10}), 7);
  EXPECT_EQ(ReadInteger(object, "m", "n", {8, 10}).status().message(),
            "m.n: must be an integer in [8, 10], got 7");
  EXPECT_EQ(
      ReadInteger(object, "m", "n", {8, std::numeric_limits<int64_t>::max()}).status().message(),
      "m.n: must be an integer >= 8, got 7");
  // An unsigned beyond int64 is out of range, not wrapped to -1.
  EXPECT_EQ(ReadInteger(object, "m", "big", kAtLeastZero).status().message(),
            "m.big: must be an integer >= 0, got 18446744073709551615");
  EXPECT_EQ(ReadInteger(object, "m", "text", kAtLeastZero).status().message(),
            "m.text: must be an integer >= 0, got \"7\"");
  EXPECT_EQ(ReadInteger(object, "m", "absent", kAtLeastZero).status().message(),
            "m.absent: missing");
  EXPECT_EQ(ReadInteger(object, "m", "nothing", kAtLeastZero).status().message(),
            "m.nothing: missing");
}

TEST(JsonReadTest, OptionalAndFallbackReadersTakeAbsentAndNullAlike) {
  const json object = {{"n", 3}, {"nothing", nullptr}, {"bad", -1}};
  EXPECT_EQ(ReadOptionalInteger(object, "m", "n", kAtLeastZero)->value_or(-9), 3);
  EXPECT_FALSE(ReadOptionalInteger(object, "m", "absent", kAtLeastZero)->has_value());
  EXPECT_FALSE(ReadOptionalInteger(object, "m", "nothing", kAtLeastZero)->has_value());
  EXPECT_EQ(*ReadIntegerOr(object, "m", "nothing", kAtLeastZero, 5), 5);
  // A present value is still checked.
  EXPECT_FALSE(ReadOptionalInteger(object, "m", "bad", kAtLeastZero).ok());
  EXPECT_FALSE(ReadIntegerOr(object, "m", "bad", kAtLeastZero, 5).ok());
}

TEST(JsonReadTest, TextIsBoundedInBytes) {
  const json object = {{"name", "abcd"}, {"number", 4}};
  EXPECT_EQ(*ReadText(object, "m", "name", 4), "abcd");
  EXPECT_EQ(ReadText(object, "m", "name", 3).status().message(), "m.name: longer than 3 bytes");
  EXPECT_EQ(ReadText(object, "m", "number", 10).status().message(),
            "m.number: must be a string, got 4");
  EXPECT_EQ(ReadText(object, "m", "absent", 10).status().message(), "m.absent: missing");
  EXPECT_FALSE(ReadOptionalText(object, "m", "absent", 10)->has_value());
  EXPECT_EQ(ReadOptionalText(object, "m", "name", 10)->value_or(""), "abcd");
  EXPECT_FALSE(ReadOptionalText(object, "m", "number", 10).ok());
}

TEST(JsonReadTest, FlagsAreTrueOrFalse) {
  const json object = {{"yes", true}, {"one", 1}};
  EXPECT_TRUE(*ReadFlag(object, "m", "yes"));
  EXPECT_EQ(ReadFlag(object, "m", "one").status().message(), "m.one: must be true or false, got 1");
  EXPECT_EQ(ReadFlag(object, "m", "absent").status().message(), "m.absent: missing");
  EXPECT_FALSE(ReadOptionalFlag(object, "m", "absent")->has_value());
}

TEST(JsonReadTest, ANonObjectHasNoFields) {
  EXPECT_EQ(ReadInteger(json::array({1}), "m", "n", kAtLeastZero).status().message(),
            "m.n: missing");
  EXPECT_FALSE(ReadOptionalText(json("text"), "m", "n", 10)->has_value());
}

}  // namespace
}  // namespace benchfleet
