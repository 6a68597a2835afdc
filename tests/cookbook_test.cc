// On the store of a real sweep taken twice (two nights): every query of
// docs/sql-cookbook.md and of deploy/quickstart.sh returns rows, and `benchfleet compare`
// tests the nights against each other on their raw samples.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/fleet.h"
#include "tests/process.h"

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

// Every `from` in *text replaced by `to`. (Not std::regex: GCC 12 warns inside it, as an
// error, in the sanitizer build.)
void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
  for (std::size_t at = text->find(from); at != std::string::npos;
       at = text->find(from, at + to.size())) {
    text->replace(at, from.size(), to);
  }
}

// The SQL of each `benchfleet query "..."` in a shell script, as the shell passes it
// (`\$` is a `$`), with `$sweep_id` (the script's own variable) replaced by `sweep_id`.
std::vector<std::string> ReadScriptQueries(const std::string& path, int64_t sweep_id) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string script = text.str();
  const std::string opening = "benchfleet query \"";
  std::vector<std::string> queries;
  for (std::size_t at = script.find(opening); at != std::string::npos;
       at = script.find(opening, at)) {
    at += opening.size();
    const std::size_t end = script.find('"', at);
    if (end == std::string::npos) break;
    std::string sql = script.substr(at, end - at);
    ReplaceAll(&sql, "\\$", "$");
    ReplaceAll(&sql, "$sweep_id", std::to_string(sweep_id));
    queries.push_back(sql);
    at = end + 1;
  }
  return queries;
}

// One fleet for the suite: a real sweep taken twice, as two nights.
class RealSweepTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fleet_ = new Fleet();
    ASSERT_TRUE(fleet_->StartCoordinator()) << fleet_->Logs();
    ASSERT_TRUE(fleet_->StartAgent("devbox")) << fleet_->Logs();
    ASSERT_TRUE(fleet_->WaitForAgents(1, 60s)) << fleet_->Logs();
    const nlohmann::json sweep = nlohmann::json::parse(R"({
        "name": "nightly", "placement": "any", "labels": {"commit": "abc123"},
        "matrix": {"model": ["mlp", "transformer"], "mode": "inference", "batch_size": [1, 32],
                   "threads": [1, 2], "dtype": ["fp32", "int8"]},
        "models": {"mlp": {"layers": [256, 256, 10]},
                   "transformer": {"hidden": 64, "heads": 4, "layers": 1, "ffn": 128, "seq_len": 16}},
        "timing": {"warmup_s": 0.05, "min_time_s": 0.1, "max_time_s": 0.5}})");
    for (int night = 0; night < 2; ++night) {
      std::string error;
      const int64_t id = fleet_->Submit(sweep, &error);
      ASSERT_GT(id, 0) << error;
      const nlohmann::json done = fleet_->WaitForSweep(id, 600s);
      ASSERT_EQ(done.value("state", ""), "done") << done.dump() << fleet_->Logs();
      sweeps_.push_back(id);
    }
  }
  static void TearDownTestSuite() {
    delete fleet_;
    fleet_ = nullptr;
  }
  void SetUp() override {
    if (sweeps_.size() != 2) GTEST_FAIL() << "the two nights did not run";
  }
  // `benchfleet ARGS --format json` against the fleet; its rows.
  static nlohmann::json Cli(std::vector<std::string> args, int* code) {
    std::vector<std::string> argv = {kCliBin, "--coordinator", fleet_->clients_endpoint()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--format", "json"});
    std::string out, err;
    *code = RunCommand(argv, &out, &err);
    nlohmann::json rows = nlohmann::json::parse(out, nullptr, false);
    if (rows.is_discarded()) ADD_FAILURE() << out << err;
    return rows;
  }
  static Fleet* fleet_;
  static std::vector<int64_t> sweeps_;
};
Fleet* RealSweepTest::fleet_ = nullptr;
std::vector<int64_t> RealSweepTest::sweeps_;

TEST_F(RealSweepTest, EveryCookbookAndQuickstartQueryReturnsRows) {
  const std::vector<Recipe> recipes = ReadCookbook(BENCHFLEET_SOURCE_DIR "/docs/sql-cookbook.md");
  ASSERT_GE(recipes.size(), 12u) << "the cookbook promises at least 12 questions";
  for (const Recipe& recipe : recipes) {
    SCOPED_TRACE(recipe.question);
    const nlohmann::json rows = QueryRows(fleet_->db_path(), recipe.sql);
    EXPECT_TRUE(rows.is_array() && !rows.empty()) << recipe.sql << "\n" << rows.dump();
  }
  std::cout << "FIGURE the cookbook has " << recipes.size() << " queries, each returning rows\n";
  // The quickstart prints what each host ran on and its thread scaling with SQL of its
  // own (in this test: each test of the suite is a process that runs both nights).
  const std::vector<std::string> queries =
      ReadScriptQueries(BENCHFLEET_SOURCE_DIR "/deploy/quickstart.sh", sweeps_.back());
  ASSERT_GE(queries.size(), 2u) << "the quickstart's two tables";
  for (const std::string& sql : queries) {
    const nlohmann::json rows = QueryRows(fleet_->db_path(), sql);
    EXPECT_TRUE(rows.is_array() && !rows.empty()) << sql << "\n" << rows.dump();
  }
}

TEST_F(RealSweepTest, CompareTestsEachConfigurationOnItsRawSamples) {
  int code = -1;
  const nlohmann::json cells =
      Cli({"compare", std::to_string(sweeps_[0]), std::to_string(sweeps_[1])}, &code);
  ASSERT_EQ(code, 0);
  ASSERT_EQ(cells.size(), 16u) << cells.dump();  // every configuration ran in both
  int changed = 0;
  int with_interval = 0;  // sides of a cell whose median has an interval
  for (const nlohmann::json& cell : cells) {
    const std::string change = cell.at("change");
    EXPECT_TRUE(change == "faster" || change == "slower" || change == "unchanged" ||
                change == "host slower" || change == "host faster")
        << cell.dump();
    EXPECT_TRUE(cell.at("host_pace_ratio").is_number())
        << "every result carries the host's pace: " << cell.dump();
    // Every sample is kept here, so every cell is tested on them.
    ASSERT_TRUE(cell.at("p").is_number() && cell.at("ratio").is_number()) << cell.dump();
    EXPECT_GE(cell.at("p").get<double>(), 0);
    EXPECT_LE(cell.at("p").get<double>(), 1);
    EXPECT_NEAR(cell.at("ratio").get<double>(),
                cell.at("b_median_ms").get<double>() / cell.at("a_median_ms").get<double>(), 1e-9);
    EXPECT_GT(cell.at("a_samples").get<int>(), 0);
    // Each median with its interval around it (the medians here are the stored float32
    // samples', the interval the worker's: a relative 1e-6 apart at most). A median has
    // no interval where its samples do not allow one (too few, or leaning on each other
    // for most of this sweep's 0.5 s: schemas/worker.md), and then both ends are null.
    for (const char* side : {"a", "b"}) {
      const double median = cell.at(std::string(side) + "_median_ms").get<double>();
      const nlohmann::json& low = cell.at(std::string(side) + "_ci_low_ms");
      const nlohmann::json& high = cell.at(std::string(side) + "_ci_high_ms");
      if (low.is_null() || high.is_null()) {
        EXPECT_TRUE(low.is_null() && high.is_null()) << cell.dump();
        continue;
      }
      ++with_interval;
      EXPECT_LE(low.get<double>(), median * (1 + 1e-6)) << cell.dump();
      EXPECT_GE(high.get<double>(), median * (1 - 1e-6)) << cell.dump();
    }
    EXPECT_TRUE(cell.at("model_args").is_object()) << "model_args nests as JSON";
    changed += change != "unchanged";
  }
  // A result without one is marked noisy (imprecise), never passed off as precise.
  EXPECT_GT(with_interval, 0) << cells.dump();
  EXPECT_EQ(QueryValue(fleet_->db_path(),
                       "SELECT count(*) FROM result_summary WHERE sweep_id IN (" +
                           std::to_string(sweeps_[0]) + ", " + std::to_string(sweeps_[1]) +
                           ") AND median_ci_low_ms IS NULL AND NOT noisy"),
            0);
  std::cout << "FIGURE compare of two nights of the same sweep: " << changed << " of "
            << cells.size() << " cells marked changed, " << with_interval << " of "
            << 2 * cells.size() << " medians with an interval\n";
  // The pivot: rows by model and batch size, a column group per thread count.
  const nlohmann::json pivot = Cli(
      {"compare", std::to_string(sweeps_[1]), "--rows", "model,batch_size", "--cols", "threads"},
      &code);
  ASSERT_EQ(code, 0);
  ASSERT_EQ(pivot.size(), 4u) << pivot.dump();  // 2 models x 2 batch sizes
  for (const nlohmann::json& row : pivot) {
    ASSERT_TRUE(row.contains("threads 2 / 1")) << row.dump();
    EXPECT_NEAR(row["threads 2 / 1"].get<double>(),
                row["threads 2 ms"].get<double>() / row["threads 1 ms"].get<double>(), 1e-9);
    // The cell's precision, null where no median of it has an interval.
    if (!row["threads 1 ci +-"].is_null()) {
      EXPECT_GE(row["threads 1 ci +-"].get<double>(), 0);
    }
  }
}

}  // namespace
}  // namespace benchfleet::testing
