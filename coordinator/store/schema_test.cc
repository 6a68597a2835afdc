// The store's schema (sqlite/schema.h, schemas/README.md): a new store is the
// baseline, the declared columns and every view of views.sql; a store made by the
// numbered steps before the baseline converts, from any of them, to that same schema
// with its rows as the old steps would have left them.
#include "sqlite/schema.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "common/job_needs.h"
#include "common/result_fields.h"
#include "coordinator/core/fingerprint.h"
#include "coordinator/store/legacy_store_fixture.h"
#include "coordinator/store/legacy_store_test.h"
#include "coordinator/store/sample_blob.h"
#include "coordinator/store/store.h"
#include "sqlite/sqlite.h"

namespace benchfleet {
namespace {

TEST(SchemaTest, ANewStoreIsTheBaselineWithTheDeclaredColumnsAndEveryView) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("bf-schema-new-" + std::to_string(getpid()) + ".db");
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  { ASSERT_TRUE(Store::Open(path.string()).ok()); }
  auto db = Connect(path.string());
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(Text(*db, "PRAGMA application_id"), std::to_string(kStoreApplicationId));
  EXPECT_EQ(Text(*db, "PRAGMA user_version"), std::to_string(Migrations().back().version));
  EXPECT_EQ(Migrations().front().version, 1);
  EXPECT_EQ(Migrations().front().name, "001_baseline.sql");

  // Each field table: the baseline's own columns, then the declared ones in their order.
  for (const auto& [table, fields] : {std::make_pair("results", &ResultFields()),
                                      std::make_pair("calibrations", &CalibrationFields()),
                                      std::make_pair("result_ranks", &RankFields())}) {
    std::vector<std::string> declared;
    for (const ResultField& field : *fields) {
      // result_ranks' rank is part of its key, so the baseline declares it.
      if (field.column.empty() || (fields == &RankFields() && field.column == "rank")) continue;
      declared.push_back(field.column);
    }
    const std::vector<std::string> columns =
        Texts(*db, std::string("SELECT name FROM pragma_table_info('") + table + "')");
    ASSERT_GE(columns.size(), declared.size()) << table;
    EXPECT_EQ(std::vector<std::string>(columns.end() - declared.size(), columns.end()), declared)
        << table;
  }

  // A sweep's spec, hundreds of KB of overflow pages, is read past by no other column.
  EXPECT_EQ(Texts(*db, "SELECT name FROM pragma_table_xinfo('sweeps')").back(), "spec");

  // Every view of views.sql, no other, and each one runs against the tables.
  auto names = ViewNames();
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_GE(names->size(), 23u);
  std::vector<std::string> views = Texts(*db, "SELECT name FROM sqlite_master WHERE type = 'view'");
  std::sort(views.begin(), views.end());
  std::vector<std::string> expected = *names;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(views, expected);
  for (const std::string& view : *names) {
    auto stmt = db->Prepare("SELECT * FROM " + view + " LIMIT 1");
    ASSERT_TRUE(stmt.ok()) << view << ": " << stmt.status().ToString();
    EXPECT_TRUE(stmt->Step().ok()) << view;
  }
  // result_summary: every declared result column, in declaration order.
  auto summary = db->Prepare("SELECT * FROM result_summary");
  ASSERT_TRUE(summary.ok());
  std::vector<std::string> shown;
  for (int i = 0; i < summary->ColumnCount(); ++i) shown.push_back(summary->ColumnName(i));
  size_t at = 0;
  for (const ResultField& field : ResultFields()) {
    if (field.column.empty()) continue;
    auto found = std::find(shown.begin() + at, shown.end(), field.column);
    ASSERT_NE(found, shown.end()) << field.column;
    at = found - shown.begin() + 1;
  }
  db.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
}

TEST_F(LegacyStoreTest, ViewsAreMadeAgainFromViewsSqlAtEveryStartAndAUsersOwnAreLeft) {
  OpenStore(Path("results.db"));
  {
    auto db = Connect(Path("results.db"));
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->Exec("DROP VIEW serving; DROP VIEW job_failures;"
                         "CREATE VIEW job_failures AS SELECT 1 AS stale_definition;"
                         "CREATE VIEW my_hosts AS SELECT name FROM hosts;")
                    .ok());
  }
  OpenStore(Path("results.db"));
  auto db = Connect(Path("results.db"));
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(
      Texts(*db,
            "SELECT name FROM sqlite_master WHERE name IN ('serving', 'my_hosts') ORDER BY name"),
      (std::vector<std::string>{"my_hosts", "serving"}));
  auto failures = db->Prepare("SELECT * FROM job_failures");
  ASSERT_TRUE(failures.ok());
  EXPECT_EQ(failures->ColumnName(0), "sweep");
}

TEST_F(LegacyStoreTest, AFieldDeclaredSinceTheStoreWasMadeGetsItsColumnAtTheNextStart) {
  OpenStore(Path("results.db"));
  ResultField last;
  for (const ResultField& field : ResultFields()) {
    if (!field.column.empty()) last = field;
  }
  ASSERT_FALSE(last.column.empty());
  {
    auto db = Connect(Path("results.db"));
    ASSERT_NE(db, nullptr);
    // As if the store was made before the field was declared (the views name it).
    auto views = ViewNames();
    ASSERT_TRUE(views.ok());
    for (const std::string& view : *views) ASSERT_TRUE(db->Exec("DROP VIEW " + view).ok());
    ASSERT_TRUE(db->Exec("ALTER TABLE results DROP COLUMN " + last.column).ok()) << db->LastError();
  }
  OpenStore(Path("results.db"));
  auto db = Connect(Path("results.db"));
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(Texts(*db, "SELECT name FROM pragma_table_info('results')").back(), last.column);
  auto summary = db->Prepare("SELECT " + last.column + " FROM result_summary");
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
}

// The old steps' own result, from every old version: a store that stopped at version N
// and is converted holds what one taken through the old steps N+1..25 (and the declared
// columns, as the coordinator of that time added them) holds once converted, row for
// row, and both have a new store's schema.
class EveryOldVersionTest : public LegacyStoreTest, public ::testing::WithParamInterface<int> {};

TEST_P(EveryOldVersionTest, ConvertsAsItsRemainingOldStepsWouldHave) {
  const int version = GetParam();
  const std::vector<std::string> new_schema = NewStoreSchema();
  ASSERT_FALSE(new_schema.empty());
  const std::string direct = Path("direct.db");
  const std::string stepped = Path("stepped.db");
  {
    auto db = OldStoreWithRows(direct, version);
    ASSERT_NE(db, nullptr);
  }
  std::filesystem::copy_file(direct, stepped);
  {
    auto db = Database::Open(stepped, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(RegisterSampleFunctions((*db)->handle()).ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA synchronous=OFF").ok());  // a fixture: no power cut
    Status steps = ApplyLegacySteps(**db, version, kLastLegacyVersion);
    ASSERT_TRUE(steps.ok()) << steps.ToString();
    ASSERT_TRUE(AddLegacyFieldColumns(**db).ok());
  }
  OpenStore(direct);
  OpenStore(stepped);
  auto a = Connect(direct);
  auto b = Connect(stepped);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(SchemaOf(*a), new_schema);
  EXPECT_EQ(SchemaOf(*b), new_schema);
  // Each store draws its own id (006_sites.sql): the one column that differs by design.
  const auto rows = RowsOf(*a, {"store_identity.store_id"});
  EXPECT_EQ(rows, RowsOf(*b, {"store_identity.store_id"}));
  const bool at_13 = version >= 13, at_25 = version == kLastLegacyVersion;
  EXPECT_EQ(rows.at("jobs").size(), at_25 ? 9u : at_13 ? 7u : 5u);
  EXPECT_EQ(Text(*a, "SELECT count(*) FROM result_summary"), at_25 ? "4" : at_13 ? "3" : "2");
  EXPECT_EQ(Text(*a,
                 "SELECT group_concat(ms, ',') FROM (SELECT ms FROM samples WHERE job_id = 1 ORDER "
                 "BY idx)"),
            "2.0,2.09999990463257,1.89999997615814");
  EXPECT_EQ(Text(*a, "SELECT count(*) FROM stale_results"), "2");
  EXPECT_TRUE(Texts(*a, "PRAGMA foreign_key_check").empty());
  EXPECT_EQ(Text(*a, "PRAGMA integrity_check"), "ok");
}

INSTANTIATE_TEST_SUITE_P(LegacyStoreTest, EveryOldVersionTest,
                         ::testing::Range(1, kLastLegacyVersion + 1));

}  // namespace
}  // namespace benchfleet
