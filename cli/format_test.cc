#include "cli/format.h"

#include <gtest/gtest.h>

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
}

TEST(FormatTest, CellsUsePrecisionByMagnitude) {
  EXPECT_EQ(FormatCell(12345.678), "12346");
  EXPECT_EQ(FormatCell(2.5), "2.500");
  EXPECT_EQ(FormatCell(0.000123456), "0.0001235");
  EXPECT_EQ(FormatCell(7), "7");
  EXPECT_FALSE(ParseRowFormat("xml").ok());
}

}  // namespace
}  // namespace benchfleet
