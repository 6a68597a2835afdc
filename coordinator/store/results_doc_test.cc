// docs/results.md names every column schemas/result_fields.json declares, where the
// column's table is described: the result_summary table lists the result columns in
// declaration order, the result_ranks paragraph and the calibrations row theirs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/result_fields.h"
#include "common/test_paths.h"

namespace benchfleet {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The `names` of `text`, in order.
std::vector<std::string> Backticked(const std::string& text) {
  // A scan, not std::regex: GCC 12's regex trips -Wmaybe-uninitialized under the
  // sanitizers' flags.
  std::vector<std::string> names;
  auto name_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  size_t i = 0;
  while ((i = text.find('`', i)) != std::string::npos) {
    size_t j = i + 1;
    while (j < text.size() && name_char(text[j])) ++j;
    if (j > i + 1 && j < text.size() && text[j] == '`') {
      names.push_back(text.substr(i + 1, j - i - 1));
      i = j + 1;
    } else {
      ++i;
    }
  }
  return names;
}

// The text of `doc` from `from` to the first `to` after it.
std::string Between(const std::string& doc, const std::string& from, const std::string& to) {
  const size_t start = doc.find(from);
  if (start == std::string::npos) return "";
  const size_t end = doc.find(to, start + from.size());
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(ResultsDocTest, EveryDeclaredColumnIsDocumented) {
  const std::string doc = ReadFile(test_paths::DocsDir() + "/results.md");
  ASSERT_FALSE(doc.empty());
  std::vector<std::string> declared;
  for (const ResultField& field : ResultFields()) {
    if (!field.column.empty()) declared.push_back(field.column);
  }
  const std::set<std::string> declared_set(declared.begin(), declared.end());
  std::vector<std::string> listed;
  for (const std::string& name :
       Backticked(Between(doc, "| every column of `result_fields.json`'s `result` list |", "\n"))) {
    if (declared_set.count(name)) listed.push_back(name);
  }
  EXPECT_EQ(listed, declared)
      << "docs/results.md, result_summary: each declared column once, in order";

  const std::vector<std::string> ranks =
      Backticked(Between(doc, "a row of `result_ranks`", "declared in"));
  for (const ResultField& field : RankFields()) {
    if (field.column.empty()) continue;
    EXPECT_NE(std::find(ranks.begin(), ranks.end(), field.column), ranks.end())
        << "docs/results.md, result_ranks: " << field.column;
  }
  const std::vector<std::string> calibrations =
      Backticked(Between(doc, "| `calibrations` |", "\n"));
  for (const ResultField& field : CalibrationFields()) {
    if (field.column.empty()) continue;
    EXPECT_NE(std::find(calibrations.begin(), calibrations.end(), field.column), calibrations.end())
        << "docs/results.md, calibrations: " << field.column;
  }
}

}  // namespace
}  // namespace benchfleet
