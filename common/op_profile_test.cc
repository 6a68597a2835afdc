#include "common/op_profile.h"

#include <gtest/gtest.h>

#include <string>

#include "common/worker_result.h"

namespace benchfleet {
namespace {

using nlohmann::json;

json Row(const std::string& op) {
  return {{"op", op},
          {"calls", 12},
          {"self_us", 40.5},
          {"total_us", 90},
          {"input_shapes", {{8, 64}, {64, 64}, json::array()}}};
}

TEST(OpProfileTest, ParsesRowsIntoTypedValues) {
  const auto rows =
      ParseOpProfile(json::array({Row("aten::addmm"), Row("aten::relu")}), "result.op_profile");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].op, "aten::addmm");
  EXPECT_EQ((*rows)[0].calls, 12);
  EXPECT_DOUBLE_EQ((*rows)[0].self_us, 40.5);
  EXPECT_DOUBLE_EQ((*rows)[0].total_us, 90);
  EXPECT_EQ((*rows)[0].input_shapes, "[[8,64],[64,64],[]]");
  EXPECT_TRUE(ParseOpProfile(json::array(), "x").ok());
}

TEST(OpProfileTest, EveryBadValueIsRefusedNamingIt) {
  struct Case {
    json value;
    std::string message;
  };
  json many = json::array();
  for (size_t i = 0; i <= kOpProfileRows; ++i) many.push_back(Row("op" + std::to_string(i)));
  auto with = [](const char* key, json value) {
    json row = Row("aten::mm");
    row[key] = std::move(value);
    return json::array({row});
  };
  json no_calls = Row("aten::mm");
  no_calls.erase("calls");
  for (const Case& c : std::vector<Case>{
           {json::object(), "result.op_profile: must be an array of at most 20 operators"},
           {many, "result.op_profile: must be an array of at most 20 operators"},
           {json::array({1}), "result.op_profile[0]: must be an object"},
           {with("op", ""),
            "result.op_profile[0].op: must be a non-empty string of at most 256 bytes"},
           {with("op", std::string(257, 'a')),
            "result.op_profile[0].op: must be a non-empty string of at most 256 bytes"},
           {json::array({Row("aten::mm"), Row("aten::mm")}),
            "result.op_profile[1].op: \"aten::mm\" is listed twice"},
           {json::array({no_calls}), "result.op_profile[0].calls: must be an integer >= 1"},
           {with("calls", 0), "result.op_profile[0].calls: must be an integer >= 1"},
           {with("calls", 1.5), "result.op_profile[0].calls: must be an integer >= 1"},
           {with("self_us", -1),
            "result.op_profile[0].self_us: must be a finite number of microseconds >= 0"},
           {with("total_us", "9"),
            "result.op_profile[0].total_us: must be a finite number of microseconds >= 0"},
           {with("self_us", 100), "result.op_profile[0].self_us: must not exceed total_us"},
           {with("input_shapes", "[8]"),
            "result.op_profile[0].input_shapes: must be an array of at most 64 shapes"},
           {with("input_shapes", {{-1}}),
            "result.op_profile[0].input_shapes[0]: dimensions must be integers >= 0"},
           {with("input_shapes", {{{1}}}),
            "result.op_profile[0].input_shapes[0]: dimensions must be integers >= 0"},
           {with("input_shapes",
                 {json::array({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})}),
            "result.op_profile[0].input_shapes[0]: must be an array of at most 16 dimensions"},
       }) {
    SCOPED_TRACE(c.value.dump());
    const auto rows = ParseOpProfile(c.value, "result.op_profile");
    ASSERT_FALSE(rows.ok());
    EXPECT_EQ(rows.status().message(), c.message);
  }
}

// A result carries op_profile end to end: parsed at the edge, out of detail.
TEST(OpProfileTest, AResultsOpProfileIsParsedAtTheEdge) {
  json result = {{"ok", true},
                 {"stats",
                  {{"n", 3},
                   {"median_ms", 1.0},
                   {"mean_ms", 1.0},
                   {"min_ms", 1.0},
                   {"max_ms", 1.0},
                   {"noisy", false}}},
                 {"profile_iterations", 4},
                 {"op_profile", {Row("aten::addmm")}}};
  auto parsed = ParseWorkerResult(result);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->op_profile.size(), 1u);
  EXPECT_FALSE(parsed->detail.contains("op_profile"));
  EXPECT_EQ(ResultValue(*parsed, "profile_iterations"), 4);
  result["op_profile"][0]["calls"] = -3;
  parsed = ParseWorkerResult(result);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "result.op_profile[0].calls: must be an integer >= 1");
  result["op_profile"] = "top";
  EXPECT_EQ(ParseWorkerResult(result).status().message(),
            "result.op_profile: must be an array, got \"top\"");
}

}  // namespace
}  // namespace benchfleet
