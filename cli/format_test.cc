#include "cli/format.h"

#include <gtest/gtest.h>

#include "cli/commands.h"

namespace benchfleet {
namespace {

const std::vector<std::string> kColumns = {"model", "batch_size", "median_ms"};
const nlohmann::json kRows =
    nlohmann::json::parse(R"([["mlp", 64, 1.12345], ["a,\"b\"", 1, null]])");

TEST(FormatTest, TableAlignsColumnsAndNumbersRight) {
  std::string table = FormatRows(kColumns, kRows, RowFormat::kTable);
  EXPECT_EQ(table,
            "model  batch_size  median_ms\n"
            "-----  ----------  ---------\n"
            "mlp            64      1.123\n"
            "a,\"b\"           1\n");
}

TEST(FormatTest, CsvQuotesWhatNeedsQuoting) {
  EXPECT_EQ(FormatRows(kColumns, kRows, RowFormat::kCsv),
            "model,batch_size,median_ms\nmlp,64,1.12345\n\"a,\"\"b\"\"\",1,\n");
}

TEST(FormatTest, JsonIsAnArrayOfObjects) {
  auto parsed = nlohmann::json::parse(FormatRows(kColumns, kRows, RowFormat::kJson));
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0]["batch_size"], 64);
  EXPECT_TRUE(parsed[1]["median_ms"].is_null());
  // model_args is stored as JSON text: it nests as an object, not a string.
  auto nested = nlohmann::json::parse(
      FormatRows({"model", "model_args"},
                 nlohmann::json::parse(R"([["mlp", "{\"layers\": [4, 2]}"], ["x", "{not json"]])"),
                 RowFormat::kJson));
  EXPECT_EQ(nested[0]["model_args"]["layers"], nlohmann::json::parse("[4, 2]"));
  EXPECT_EQ(nested[1]["model_args"], "{not json");
}

TEST(FormatTest, CellsUsePrecisionByMagnitude) {
  EXPECT_EQ(FormatCell(12345.678), "12346");
  // Four significant digits at every magnitude.
  EXPECT_EQ(FormatCell(2.5), "2.500");
  EXPECT_EQ(FormatCell(123.456), "123.5");
  EXPECT_EQ(FormatCell(12.3456), "12.35");
  EXPECT_EQ(FormatCell(0.0123456), "0.01235");
  EXPECT_EQ(FormatCell(0.000123456), "0.0001235");
  EXPECT_EQ(FormatCell(0.0000123456), "1.235e-05");
  EXPECT_EQ(FormatCell(0.0), "0");
  EXPECT_EQ(FormatCell(7), "7");
  EXPECT_FALSE(ParseRowFormat("xml").ok());
}

TEST(FormatTest, BytesInTheLargestUnitThatKeepsANumberAboveOne) {
  EXPECT_EQ(FormatBytes(0), "0 bytes");
  EXPECT_EQ(FormatBytes(1023), "1023 bytes");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(167936), "164.0 KiB");
  EXPECT_EQ(FormatBytes(3.2e9), "3.0 GiB");
}

TEST(FormatTest, AgesAreANumberAndAUnit) {
  EXPECT_EQ(*ParseAge("90d"), 90 * 86400.0);
  EXPECT_EQ(*ParseAge("12h"), 12 * 3600.0);
  EXPECT_EQ(*ParseAge("30m"), 1800.0);
  EXPECT_EQ(*ParseAge("2w"), 14 * 86400.0);
  EXPECT_EQ(*ParseAge("1.5h"), 5400.0);
  EXPECT_EQ(*ParseAge("45"), 45.0);
  EXPECT_EQ(*ParseAge("0s"), 0.0);
  for (const char* bad : {"", "d", "-5d", "soon", "5y", "1.2.3d", ".", "5 d"}) {
    auto age = ParseAge(bad);
    EXPECT_FALSE(age.ok()) << bad;
    if (!age.ok()) {
      EXPECT_NE(age.status().message().find("90d"), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace benchfleet
