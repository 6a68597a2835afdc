// docs/sql-cookbook.md works: every query in it runs against the store of a real sweep
// (taken twice, as two nights) and returns rows.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;

struct Recipe {
  std::string question;
  std::string sql;
};

// Each `### question` heading and the ```sql block that follows it.
std::vector<Recipe> ReadCookbook(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<Recipe> recipes;
  std::string line, question, sql;
  bool in_sql = false;
  std::istringstream lines(text.str());
  while (std::getline(lines, line)) {
    if (line.rfind("### ", 0) == 0) question = line.substr(4);
    if (line == "```sql") {
      in_sql = true;
      sql.clear();
    } else if (in_sql && line == "```") {
      in_sql = false;
      recipes.push_back({question, sql});
    } else if (in_sql) {
      sql += line + "\n";
    }
  }
  return recipes;
}

TEST(CookbookTest, EveryQueryReturnsRowsFromARealSweep) {
  const std::vector<Recipe> recipes = ReadCookbook(BENCHFLEET_SOURCE_DIR "/docs/sql-cookbook.md");
  ASSERT_GE(recipes.size(), 12u) << "the cookbook promises at least 12 questions";
  Fleet fleet;
  ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  ASSERT_TRUE(fleet.StartAgent("devbox")) << fleet.Logs();
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  const nlohmann::json sweep = nlohmann::json::parse(R"({
      "name": "nightly", "placement": "any",
      "matrix": {"model": ["mlp", "transformer"], "mode": "inference", "batch_size": [1, 32],
                 "threads": [1, 2], "dtype": ["fp32", "int8"]},
      "models": {"mlp": {"layers": [256, 256, 10]},
                 "transformer": {"hidden": 64, "heads": 4, "layers": 1, "ffn": 128, "seq_len": 16}},
      "timing": {"warmup_s": 0.05, "min_time_s": 0.1, "max_time_s": 0.5}})");
  for (int night = 0; night < 2; ++night) {
    std::string error;
    const int64_t id = fleet.Submit(sweep, &error);
    ASSERT_GT(id, 0) << error;
    const nlohmann::json done = fleet.WaitForSweep(id, 600s);
    ASSERT_EQ(done.value("state", ""), "done") << done.dump() << fleet.Logs();
  }
  for (const Recipe& recipe : recipes) {
    SCOPED_TRACE(recipe.question);
    const nlohmann::json rows = QueryRows(fleet.db_path(), recipe.sql);
    EXPECT_TRUE(rows.is_array() && !rows.empty()) << recipe.sql << "\n" << rows.dump();
  }
  std::cout << "FIGURE the cookbook has " << recipes.size() << " queries, each returning rows\n";
}

}  // namespace
}  // namespace benchfleet::testing
