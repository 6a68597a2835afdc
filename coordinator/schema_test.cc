// The store's schema (coordinator/schema.h, schemas/README.md): a new store is the
// baseline, the declared columns and every view of views.sql; a store made by the
// numbered steps before the baseline converts, from any of them, to that same schema
// with its rows as the old steps would have left them.
#include "coordinator/schema.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "common/job_needs.h"
#include "common/result_fields.h"
#include "coordinator/fingerprint.h"
#include "coordinator/legacy_store_fixture.h"
#include "coordinator/sample_blob.h"
#include "coordinator/sqlite.h"
#include "coordinator/store.h"

namespace benchfleet {
namespace {

// Every row of `sql`'s first column as text ("NULL" for NULL).
std::vector<std::string> Texts(Database& db, const std::string& sql) {
  std::vector<std::string> values;
  auto stmt = db.Prepare(sql);
  EXPECT_TRUE(stmt.ok()) << sql << ": " << stmt.status().ToString();
  if (!stmt.ok()) return values;
  while (true) {
    auto row = stmt->Step();
    EXPECT_TRUE(row.ok()) << sql << ": " << row.status().ToString();
    if (!row.ok() || !*row) break;
    values.push_back(stmt->IsNull(0) ? "NULL" : stmt->Text(0));
  }
  return values;
}

std::string Text(Database& db, const std::string& sql) {
  const std::vector<std::string> values = Texts(db, sql);
  return values.empty() ? "" : values.front();
}

// sqlite_master, sorted: two stores have the same schema when these are equal, in
// whatever order their objects were made.
std::vector<std::string> SchemaOf(Database& db) {
  std::vector<std::string> objects =
      Texts(db,
            "SELECT type || ' ' || name || ' ON ' || tbl_name || ': ' || coalesce(sql, '') "
            "FROM sqlite_master");
  std::sort(objects.begin(), objects.end());
  return objects;
}

// Every row of every table, each "rowid=..; column=quote(value); ..." with the columns
// by name (a table whose columns come in another order holds the same rows), sorted.
// Rows of a rowid table carry their rowid too. `left_out`: "table.column" names not
// shown (columns a migration since added, to compare with a store from before it).
std::map<std::string, std::vector<std::string>> RowsOf(Database& db,
                                                       const std::set<std::string>& left_out = {}) {
  std::map<std::string, std::vector<std::string>> tables;
  for (const std::string& table :
       Texts(db,
             "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")) {
    std::vector<std::string> columns =
        Texts(db, "SELECT name FROM pragma_table_xinfo('" + table + "')");
    std::sort(columns.begin(), columns.end());
    std::string row =
        db.Prepare("SELECT rowid FROM \"" + table + "\"").ok() ? "'rowid=' || rowid" : "''";
    for (const std::string& column : columns) {
      if (left_out.count(table + "." + column)) continue;
      row += " || '; " + column + "=' || quote(\"" + column + "\")";
    }
    std::vector<std::string> rows = Texts(db, "SELECT " + row + " FROM \"" + table + "\"");
    std::sort(rows.begin(), rows.end());
    tables[table] = rows;
  }
  return tables;
}

std::unique_ptr<Database> Connect(const std::string& path) {
  auto db = Database::Open(path, SQLITE_OPEN_READWRITE);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return db.ok() ? std::move(*db) : nullptr;
}

const std::string kSeriesA = Sha256Hex("series a");
const std::string kSeriesB = Sha256Hex("series b");

// Rows written when the store was at old version 1 (001_init.sql): two sweeps, jobs in
// every state, pinned and not, results with raw samples one row each, a failed one, and
// a late result recorded twice (old step 008 kept the first).
const std::string kRowsAtVersion1 = R"sql(
INSERT INTO hosts(host_id, name, machine_id, tags, capabilities, first_seen, last_seen) VALUES
  (1, 'node-a', 'm1', '["lab"]', '{"host":{"cpu_model":"x"}}', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'),
  (2, 'node-b', 'm2', '[]', '{}', '2026-01-01T00:00:00Z', '2026-01-03T00:00:00Z');
INSERT INTO sweeps(sweep_id, name, spec, state, created_at, finished_at) VALUES
  (1, 'night', '{"name":"night","select":{"device":"cpu"},"labels":{"commit":"abc"}}', 'done',
   '2026-01-01T01:00:00Z', '2026-01-01T02:00:00Z'),
  (2, 'gpu', '{"name":"gpu"}', 'running', '2026-01-01T03:00:00Z', NULL);
INSERT INTO jobs(job_id, sweep_id, pinned_host, spec, timeout_s, state, attempts, host_id, error,
                 created_at, started_at, finished_at) VALUES
  (1, 1, NULL, '{"model":"mlp","device":"cpu","batch_size":1}', 60, 'done', 1, 1, NULL, 't1', 't2', 't3'),
  (2, 1, NULL, '{"model":"mlp","device":"cpu","batch_size":8}', 60, 'done', 2, 2, NULL, 't1', 't2', 't3'),
  (3, 1, 'node-b', '{"model":"mlp","device":"cpu","batch_size":8}', 60, 'failed', 3, 2, 'crashed', 't1', 't2', 't3'),
  (4, 2, 'node-a', '{"model":"cnn","device":"cuda:0"}', 60, 'queued', 0, NULL, NULL, 't5', NULL, NULL),
  (5, 2, NULL, '{"model":"cnn","device":"cuda:0"}', 60, 'running', 1, 1, NULL, 't5', 't6', NULL);
INSERT INTO results(job_id, attempt, host_id, ok, device, model, mode, dtype, batch_size, threads, n,
                    median_ms, mean_ms, stdev_ms, min_ms, max_ms, p90_ms, p99_ms, q1_ms, q3_ms, iqr_ms,
                    noisy, throughput_per_s, peak_rss_mb, rss_before_model_mb, param_bytes,
                    effective_threads, worker_wall_s, error, detail, received_at) VALUES
  (1, 1, 1, 1, 'cpu', 'mlp', 'inference', 'fp32', 1, 1, 3, 2.0, 2.1, 0.1, 1.9, 3.0, 2.5, 2.9, 1.95,
   2.05, 0.1, 0, 500.0, 200.5, 150.0, 4096, 1.0, 1.5, NULL, '{"ok":true}', '2026-01-01T01:30:00Z'),
  (2, 2, 2, 1, 'cpu', 'mlp', 'inference', 'fp32', 8, 1, 1, 0.125, 0.125, NULL, 0.125, 0.125, 0.125,
   0.125, NULL, NULL, 0, 1, 64000.0, 210.0, 150.0, 4096, 0.98, 1.2, NULL, '{"ok":true}', '2026-01-01T01:40:00Z'),
  (3, 3, 2, 0, 'cpu', 'mlp', 'inference', 'fp32', 8, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'crashed', '{"ok":false}', '2026-01-01T01:50:00Z');
INSERT INTO samples(job_id, idx, ms) VALUES (1, 2, 1.9), (1, 0, 2.0), (1, 1, 2.1), (2, 0, 0.125);
INSERT INTO stale_results(stale_id, job_id, attempt, host, reason, detail, received_at) VALUES
  (1, 2, 1, 'node-a', 'requeued', '{"ok":true}', 't2'),
  (2, 2, 1, 'node-a', 'requeued', '{"ok":true}', 't2b'),
  (3, 3, 2, 'node-b', 'requeued', '{"ok":false}', 't3');
)sql";

// Rows written at old version 13 (schedules, requirements, slices, ranks, calibrations,
// fingerprints, series and regressions exist; the series key does not yet).
const std::string kRowsAtVersion13 =
    R"sql(
UPDATE hosts SET fingerprint = 'fp-a', fingerprint_parts = '{"cpu":"x"}' WHERE host_id = 1;
INSERT INTO schedules(schedule_id, name, cron, tz, sweep, overlap, start_deadline_s, created_at,
                      handled_until) VALUES
  (1, 'nightly', '0 2 * * *', 'Europe/Berlin', '{"name":"nightly"}', 'skip', 600, 't7', 't8');
INSERT INTO schedule_firings(schedule_id, slot, outcome, decided_at, reason) VALUES
  (1, 's2', 'skipped', 't8', 'still running'), (1, 's1', 'started', 't7', NULL);
INSERT INTO requirements(requirement_id, kind, pinned_host, select_json, device) VALUES
  (10, 'benchmark', 'node-a', '{}', 'cpu'), (11, 'calibration', 'node-a', '{}', '');
INSERT INTO sweeps(sweep_id, name, spec, state, created_at, submission_id, jobs_planned,
                   next_combination, pinned, schedule_id, schedule_slot) VALUES
  (3, 'nightly', '{"name":"nightly","labels":{"team":"ml"}}', 'done', 't7', 'cli-1', 2, NULL,
   '{"cpu":["node-a"]}', 1, 's1');
INSERT INTO jobs(job_id, sweep_id, pinned_host, spec, timeout_s, state, attempts, host_id,
                 created_at, kind, requirement_id) VALUES
  (6, 3, 'node-a', '{"model":"mlp","device":"cpu","batch_size":4}', 60, 'done', 1, 1, 't7', 'benchmark', 10),
  (7, 3, 'node-a', '{"kind":"calibration"}', 600, 'done', 1, 1, 't7', 'calibration', 11);
INSERT INTO results(job_id, sweep_id, attempt, host_id, ok, device, model, mode, dtype, batch_size,
                    threads, n, median_ms, mean_ms, min_ms, max_ms, detail, received_at, model_args,
                    interop_threads, onednn, flops_per_sample, gflops, peak_gflops, fraction_of_peak,
                    max_abs_err, fingerprint, series) VALUES
  (6, 3, 1, 1, 1, 'cpu', 'mlp', 'inference', 'fp32', 4, 1, 12, 2.5, 2.6, 2.4, 3.1, '{"ok":true}',
   '2026-01-02T02:30:00Z', '{}', 1, 1, 1000000.0, 50.0, 100.0, 0.5, 0.0, 'fp-a', ')sql" +
    kSeriesA + R"sql(');
INSERT INTO result_samples(job_id, n, ms_f32le) VALUES (6, 2, X'0000803F00000040');
INSERT INTO result_ranks(job_id, rank, host_id, detail) VALUES (6, 1, 2, '{"rank":1}'), (6, 0, 1, '{"rank":0}');
INSERT INTO calibrations(calibration_id, host_id, job_id, gemm_gflops_all, gemm_threads_all,
                         gemm_gflops_1, stream_triad_gbps_all, gpus, detail, measured_at) VALUES
  (1, 1, 7, 200.0, 2, 110.0, 20.0, '[]', '{"ok":true}', '2026-01-02T02:40:00Z');
INSERT INTO regressions(regression_id, job_id, series, host_id, state, direction, median_ms,
                        baseline_median_ms, baseline_mad_ms, baseline_n, baseline_from, baseline_to,
                        change, z, detected_at, decided_at, reason) VALUES
  (1, 6, ')sql" +
    kSeriesA + R"sql(', 1, 'confirmed', 'slower', 2.5, 2.0, 0.05, 10, 'a', 'b', 0.25, 6.1,
   't9', 't10', 'reruns agree');
INSERT INTO baseline_resets(reset_id, host, model, at, note) VALUES (1, 'node-a', NULL, 't9', 'new BIOS');
)sql";

// Rows written at old version 25 by a coordinator that had added the declared columns:
// prices, profiles, a confirming rerun, the series key, field columns of each table.
const std::string kRowsAtVersion25 = R"sql(
INSERT INTO host_prices(price_id, host_id, per_hour, currency, set_at, source) VALUES
  (1, 1, 2.48, 'USD', 't11', 'agent'), (2, 1, 2.0, 'EUR', 't12', 'cli');
INSERT INTO jobs(job_id, sweep_id, pinned_host, spec, timeout_s, state, attempts, host_id,
                 created_at, kind, requirement_id, confirms_job_id) VALUES
  (8, 3, 'node-a', '{"model":"mlp","device":"cpu","batch_size":4}', 60, 'done', 1, 1, 't11', 'benchmark', 10, 6),
  (9, 3, 'node-a', '{"model":"mlp","device":"cpu","batch_size":4}', 60, 'queued', 0, NULL, 't12', 'benchmark', 10, 6);
INSERT INTO results(job_id, sweep_id, attempt, host_id, ok, device, model, mode, dtype, batch_size,
                    threads, n, median_ms, mean_ms, min_ms, max_ms, median_ci_low_ms,
                    median_ci_high_ms, unsteady, scenario, world_size, detail, received_at,
                    fingerprint, series, series_key) VALUES
  (8, 3, 1, 1, 1, 'cpu', 'mlp', 'inference', 'fp32', 4, 1, 20, 2.55, 2.6, 2.4, 3.0, 2.5, 2.6, 0,
   NULL, 1, '{"ok":true}', '2026-01-03T02:30:00Z', 'fp-a', ')sql" +
                                     kSeriesB + R"sql(', )sql" +
                                     std::to_string(*SeriesKeyOf(kSeriesB)) + R"sql();
INSERT INTO op_profile(job_id, op, calls, self_us, total_us, input_shapes) VALUES
  (8, 'aten::addmm', 10, 100.5, 120.0, '[[4,1024]]'), (8, 'aten::relu', 10, 5.0, 5.0, '[[4,1024]]');
UPDATE result_ranks SET median_ms = 2.4, comm_share = 0.2 WHERE job_id = 6 AND rank = 1;
UPDATE calibrations SET gemm_bf16_gflops_all = 400.0 WHERE calibration_id = 1;
UPDATE regressions SET median_ci_low_ms = 2.45, median_ci_high_ms = 2.55 WHERE regression_id = 1;
)sql";

class LegacyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');  // a parameterized test's "Name/3"
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-legacy-" + std::to_string(getpid()) + "-" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  // A store at old version `version` with the rows of each version up to it written when
  // the store was there: the old steps after version 1 and 13 ran over them.
  std::unique_ptr<Database> OldStoreWithRows(const std::string& path, int version) {
    auto db = CreateLegacyStore(path, 1);
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    if (!db.ok()) return nullptr;
    EXPECT_TRUE((*db)->Exec(kRowsAtVersion1).ok()) << (*db)->LastError();
    Status steps = ApplyLegacySteps(**db, 1, std::min(version, 13));
    EXPECT_TRUE(steps.ok()) << steps.ToString();
    if (version >= 13) {
      EXPECT_TRUE((*db)->Exec(kRowsAtVersion13).ok()) << (*db)->LastError();
    }
    steps = ApplyLegacySteps(**db, std::min(version, 13), version);
    EXPECT_TRUE(steps.ok()) << steps.ToString();
    if (version == kLastLegacyVersion) {
      EXPECT_TRUE(AddLegacyFieldColumns(**db).ok());
      EXPECT_TRUE((*db)->Exec(kRowsAtVersion25).ok()) << (*db)->LastError();
    }
    return std::move(*db);
  }

  // Opens `path` with the coordinator's store and closes it again.
  void OpenStore(const std::string& path) {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }

  std::vector<std::string> NewStoreSchema() {
    OpenStore(Path("new.db"));
    auto db = Connect(Path("new.db"));
    return db ? SchemaOf(*db) : std::vector<std::string>{};
  }

  std::filesystem::path dir_;
};

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
  const auto rows = RowsOf(*a);
  EXPECT_EQ(rows, RowsOf(*b));
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

TEST_F(LegacyStoreTest, AFullyMigratedStoreKeepsEveryRowAndGetsTheNewStoresSchema) {
  const std::vector<std::string> new_schema = NewStoreSchema();
  const std::string path = Path("results.db");
  std::map<std::string, std::vector<std::string>> before;
  {
    auto db = OldStoreWithRows(path, kLastLegacyVersion);
    ASSERT_NE(db, nullptr);
    before = RowsOf(*db);
  }
  OpenStore(path);
  auto db = Connect(path);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(SchemaOf(*db), new_schema);
  // The columns migrations since the baseline added are not in the old store; its jobs
  // are each one process (002_job_needs.sql leaves them the defaults).
  EXPECT_EQ(RowsOf(*db, {"jobs.world_size", "jobs.spread", "jobs.local_processes", "jobs.replicated",
                         "jobs.local_cpus"}),
            before);
  EXPECT_EQ(Text(*db, "SELECT count(*) FROM jobs WHERE world_size != 1 OR spread OR "
                      "local_processes != 1 OR replicated OR local_cpus != 0"),
            "0");
  EXPECT_EQ(Text(*db, "PRAGMA application_id"), std::to_string(kStoreApplicationId));
  EXPECT_EQ(Text(*db, "PRAGMA user_version"), std::to_string(Migrations().back().version));
  // The views read the converted rows.
  EXPECT_EQ(Texts(*db,
                  "SELECT job_id || ' ' || sweep || ' ' || host || ' ' || median_ms FROM "
                  "result_summary ORDER BY job_id"),
            (std::vector<std::string>{"1 night node-a 2.0", "2 night node-b 0.125",
                                      "6 nightly node-a 2.5", "8 nightly node-a 2.55"}));
  EXPECT_EQ(Texts(*db, "SELECT label || '=' || value FROM sweep_labels ORDER BY sweep_id"),
            (std::vector<std::string>{"commit=abc", "team=ml"}));
  EXPECT_EQ(
      Text(*db, "SELECT first_seen_sweep_id || ' ' || median_ci_low_ms FROM confirmed_regressions"),
      "3 2.45");
  EXPECT_EQ(Text(*db, "SELECT gemm_bf16_gflops_all FROM host_calibration WHERE host = 'node-a'"),
            "400.0");
  EXPECT_EQ(Text(*db, "SELECT per_hour || ' ' || currency FROM host_price"), "2.0 EUR");
  EXPECT_EQ(Text(*db, "SELECT count(*) FROM op_comparison"), "2");
  EXPECT_EQ(Texts(*db, "SELECT slot || ' ' || outcome FROM schedule_history ORDER BY slot"),
            (std::vector<std::string>{"s1 started", "s2 skipped"}));
  // The triggers count jobs from here on, the indexes are used.
  ASSERT_TRUE(db->Exec("UPDATE jobs SET state = 'running' WHERE job_id = 9").ok());
  EXPECT_EQ(Text(*db,
                 "SELECT n FROM job_counts WHERE sweep_id = 3 AND requirement_id = 10 AND state = "
                 "'running'"),
            "1");
  EXPECT_EQ(Text(*db,
                 "SELECT n FROM job_counts WHERE sweep_id = 3 AND requirement_id = 10 AND state = "
                 "'queued'"),
            "0");
  EXPECT_FALSE(
      db->Exec("INSERT INTO stale_results(job_id, attempt, host, reason, detail, received_at) "
               "VALUES (2, 1, 'node-a', 'requeued', '{}', 't')")
          .ok());
  EXPECT_TRUE(Texts(*db, "PRAGMA foreign_key_check").empty());
}

// Old step 016's integer key, computed for a store from before it as the coordinator
// computes it for a new result; the baseline lookup then searches the integer index.
TEST_F(LegacyStoreTest, TheSeriesKeyIsTheOneTheCoordinatorComputes) {
  const std::string path = Path("results.db");
  const std::vector<std::string> series = {Sha256Hex("one"), Sha256Hex("two"), Sha256Hex("three")};
  {
    auto db = CreateLegacyStore(path, 15);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    std::string rows =
        "INSERT INTO hosts(host_id, name, first_seen, last_seen) VALUES (1, 'a', 't', 't');"
        "INSERT INTO sweeps(sweep_id, name, spec, created_at) VALUES (1, 's', '{}', 't');";
    for (size_t i = 0; i < series.size(); ++i) {
      const std::string job = std::to_string(i + 1);
      rows += "INSERT INTO jobs(job_id, sweep_id, spec, timeout_s, created_at) VALUES (" + job +
              ", 1, '{}', 60, 't');"
              "INSERT INTO results(job_id, sweep_id, attempt, host_id, ok, detail, received_at, "
              "series) "
              "VALUES (" +
              job + ", 1, 1, 1, 1, '{}', 't', '" + series[i] + "');";
    }
    ASSERT_TRUE((*db)->Exec(rows).ok()) << (*db)->LastError();
  }
  OpenStore(path);
  auto db = Connect(path);
  ASSERT_NE(db, nullptr);
  auto keys = db->Prepare("SELECT series, series_key FROM results ORDER BY job_id");
  ASSERT_TRUE(keys.ok());
  size_t n = 0;
  while (*keys->Step()) {
    EXPECT_EQ(std::optional<int64_t>(keys->Int(1)), SeriesKeyOf(keys->Text(0))) << keys->Text(0);
    ++n;
  }
  EXPECT_EQ(n, series.size());
  auto plan = db->Prepare(
      "EXPLAIN QUERY PLAN SELECT median_ms FROM results "
      "WHERE series_key = 7 AND series = 'x' AND job_id < 9 ORDER BY job_id DESC LIMIT 30");
  ASSERT_TRUE(plan.ok());
  std::string steps;
  while (*plan->Step()) steps += plan->Text(3) + "\n";
  EXPECT_NE(steps.find("USING INDEX results_by_series_key (series_key=? AND job_id<?)"),
            std::string::npos)
      << steps;
}

// A store from before old step 023 keeps every sweep, its labels and what refers to it
// once `spec` is last; `labels` is stored, not computed from the spec on each read.
TEST_F(LegacyStoreTest, SweepsKeepTheirLabelsAndWhatRefersToThemWithSpecLast) {
  const std::string path = Path("results.db");
  {
    auto db = CreateLegacyStore(path, 22);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE(
        (*db)
            ->Exec(
                "INSERT INTO hosts(host_id, name, machine_id, first_seen, last_seen) "
                "VALUES (1, 'a', 'm', 't', 't');"
                "INSERT INTO sweeps(sweep_id, name, spec, state, created_at, jobs_planned) VALUES "
                "(5, 'night', '{\"name\":\"night\",\"labels\":{\"commit\":\"abc\"}}', 'done', 't', "
                "1),"
                "(6, 'plain', '{\"name\":\"plain\"}', 'running', 't', 2);"
                "INSERT INTO jobs(job_id, sweep_id, spec, timeout_s, state, created_at) "
                "VALUES (1, 5, '{}', 60, 'done', 't');"
                "INSERT INTO results(job_id, attempt, host_id, ok, detail, received_at, sweep_id) "
                "VALUES (1, 1, 1, 1, '{}', 't', 5);")
            .ok());
  }
  OpenStore(path);
  auto db = Connect(path);
  ASSERT_NE(db, nullptr);
  // Columns read often come before the spec: a column after it costs a walk of its
  // overflow pages. A column added by ALTER TABLE would land after it again.
  const auto columns = Texts(*db, "SELECT name FROM pragma_table_xinfo('sweeps')");
  ASSERT_FALSE(columns.empty());
  EXPECT_EQ(columns.back(), "spec");
  EXPECT_EQ(Texts(*db,
                  "SELECT name || ' ' || state || ' ' || jobs_planned || ' ' || labels FROM sweeps "
                  "ORDER BY sweep_id"),
            (std::vector<std::string>{"night done 1 {\"commit\":\"abc\"}", "plain running 2 {}"}));
  EXPECT_EQ(Texts(*db, "SELECT label || '=' || value FROM sweep_labels"),
            (std::vector<std::string>{"commit=abc"}));
  EXPECT_EQ(Texts(*db, "SELECT sweep FROM result_summary"), (std::vector<std::string>{"night"}));
  EXPECT_TRUE(Texts(*db, "PRAGMA foreign_key_check").empty());
  EXPECT_EQ(Texts(*db,
                  "SELECT count(*) FROM sqlite_master WHERE name IN ('sweeps_by_submission', "
                  "'sweeps_by_schedule_slot')"),
            (std::vector<std::string>{"2"}));
}

TEST_F(LegacyStoreTest, AColumnTheSchemaDoesNotDeclareIsKeptWithItsValues) {
  const std::string path = Path("results.db");
  {
    auto db = OldStoreWithRows(path, kLastLegacyVersion);
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->Exec("ALTER TABLE results ADD COLUMN my_note TEXT;"
                         "UPDATE results SET my_note = 'checked' WHERE job_id = 6")
                    .ok());
  }
  OpenStore(path);
  auto db = Connect(path);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(Texts(*db, "SELECT job_id || ' ' || my_note FROM results WHERE my_note IS NOT NULL"),
            (std::vector<std::string>{"6 checked"}));
}

TEST_F(LegacyStoreTest, AConversionThatFailsLeavesTheStoreAsItWas) {
  const std::string path = Path("results.db");
  std::map<std::string, std::vector<std::string>> before;
  std::vector<std::string> schema_before;
  {
    auto db = OldStoreWithRows(path, kLastLegacyVersion);
    ASSERT_NE(db, nullptr);
    // A table of the user's in the way of the conversion's own.
    ASSERT_TRUE(db->Exec("CREATE TABLE legacy_results (x)").ok());
    before = RowsOf(*db);
    schema_before = SchemaOf(*db);
  }
  auto store = Store::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("legacy_results"), std::string::npos)
      << store.status().ToString();
  auto db = Connect(path);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(Text(*db, "PRAGMA user_version"), std::to_string(kLastLegacyVersion));
  EXPECT_EQ(Text(*db, "PRAGMA application_id"), "0");
  EXPECT_EQ(SchemaOf(*db), schema_before);
  EXPECT_EQ(RowsOf(*db), before);
}

TEST_F(LegacyStoreTest, AStoreOfAnotherApplicationOrOfNoKnownVersionIsRefused) {
  {
    auto db = Database::Open(Path("other.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA application_id = 42").ok());
  }
  auto other = Store::Open(Path("other.db"));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not a benchfleet store"), std::string::npos);
  {
    auto db = Database::Open(Path("unknown.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(
        (*db)->Exec("PRAGMA user_version = " + std::to_string(kLastLegacyVersion + 1)).ok());
  }
  auto unknown = Store::Open(Path("unknown.db"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("newer"), std::string::npos);
}

// A store at the baseline (version 1) holding queued jobs of every shape gets their needs
// from 002_job_needs.sql by NeedsOf's rule, so the dispatcher never reads a spec for them.
TEST_F(LegacyStoreTest, JobsStoredBeforeTheirNeedsWereKeptGetThemAsNeedsOfComputes) {
  const std::string path = Path("baseline.db");
  {
    auto db = Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA application_id = " + std::to_string(kStoreApplicationId)).ok());
    ASSERT_TRUE((*db)->Exec(Migrations().front().sql).ok());
    ASSERT_TRUE(AddDeclaredColumns(**db, /*log=*/false).ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version = 1").ok());
    ASSERT_TRUE((*db)->Exec(R"sql(
INSERT INTO sweeps(sweep_id, name, spec, created_at) VALUES (1, 's', '{}', 't');
INSERT INTO jobs(job_id, sweep_id, spec, timeout_s, created_at) VALUES
  (1, 1, '{"model":"mlp","mode":"train","dtype":"fp32","device":"cpu","batch_size":8,"threads":2}', 60, 't'),
  (2, 1, '{"model":"mlp","mode":"train","dtype":"fp32","device":"cpu","batch_size":12,"threads":2,"parallel":{"kind":"data","world_size":3}}', 60, 't'),
  (3, 1, '{"model":"mlp","mode":"train","dtype":"fp32","device":"cpu","batch_size":12,"threads":2,"placement":"spread","parallel":{"kind":"data","world_size":3}}', 60, 't'),
  (4, 1, '{"model":"mlp","mode":"inference","dtype":"fp32","device":"cpu","batch_size":8,"threads":2,"placement":"spread","replicas":4}', 60, 't'),
  (5, 1, '{"model":"mlp","model_args":{"layers":[64,64,64,10]},"mode":"train","dtype":"fp32","device":"cpu","batch_size":8,"threads":1,"parallel":{"kind":"pipeline","stages":2}}', 60, 't'),
  (6, 1, '{"model":"mlp","model_args":{"layers":[64,64,64,10]},"mode":"train","dtype":"fp32","device":"cuda","batch_size":8,"threads":1,"parallel":{"kind":"pipeline","stages":2,"in_process":true}}', 60, 't'),
  (7, 1, 'not json', 60, 't');
)sql")
                    .ok());
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().message();
  for (int64_t job_id = 1; job_id <= 7; ++job_id) {
    auto job = (*store)->jobs().FindJob(job_id);
    ASSERT_TRUE(job.ok()) << job.status().message();
    JobNeeds expected;  // job 7's spec is unreadable: one process, as the defaults say
    if (job_id < 7) expected = NeedsOfJobJson(nlohmann::json::parse(job->spec)).value();
    EXPECT_EQ(job->needs, expected) << job_id << ": " << job->needs.ToJson().dump() << " vs "
                                    << expected.ToJson().dump();
  }
  EXPECT_EQ((*store)->jobs().FindJob(3)->needs.Agents(), 3);
  EXPECT_EQ((*store)->jobs().FindJob(4)->needs.local_cpus, 8);
}

}  // namespace
}  // namespace benchfleet
