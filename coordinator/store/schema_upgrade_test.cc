// A store made by the numbered steps before the baseline (sqlite/schema.h): its
// rows after the conversion, what it keeps, and what it refuses. The schema itself and
// the conversion from each old version are schema_test.cc's.
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
#include "sqlite/schema.h"
#include "sqlite/sqlite.h"

namespace benchfleet {
namespace {

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
  // are each one process (002_job_needs.sql leaves them the defaults) and ask nothing of
  // the worker (003_worker_needs.sql).
  // 004_processes.sql: its jobs queue by their ids (queue_order NULL) with their own
  // timing, and no process of them was kept (result_processes is new and empty).
  // 005_host_pace.sql: its regressions were judged without the host's pace (NULL).
  // 006_sites.sql: the store drew an id of its own; it holds no other store's rows.
  // 007_versus.sql: no job of it is a side of a pair, no pair was kept, and its regressions
  // kept no readings of the baseline's pace.
  auto after = RowsOf(
      *db, {"jobs.world_size", "jobs.spread", "jobs.local_processes", "jobs.replicated",
            "jobs.local_cpus", "jobs.torch", "jobs.torch_min", "jobs.technique", "jobs.queue_order",
            "jobs.process_timing", "regressions.host_pace_ms", "regressions.baseline_host_pace_ms",
            "regressions.host_pace_change", "jobs.versus", "jobs.versus_a_job_id",
            "regressions.baseline_host_paces", "regressions.detectable_change"});
  EXPECT_EQ(after["result_processes"], std::vector<std::string>());
  EXPECT_EQ(after["store_identity"].size(), 1u);
  EXPECT_EQ(Text(*db, "SELECT length(store_id) || ' ' || merged FROM store_identity"), "32 0");
  for (const char* table : {"sites", "site_rows"}) {
    EXPECT_EQ(after[table], std::vector<std::string>()) << table;
  }
  for (const char* table : {"result_pairs", "versus_results"}) {
    EXPECT_EQ(after[table], std::vector<std::string>()) << table;
  }
  for (const char* table : {"result_processes", "store_identity", "sites", "site_rows",
                            "result_pairs", "versus_results"})
    after.erase(table);
  EXPECT_EQ(after, before);
  EXPECT_EQ(
      Text(*db,
           "SELECT count(*) FROM jobs WHERE queue_order IS NOT NULL OR process_timing IS NOT NULL"),
      "0");
  EXPECT_EQ(Text(*db,
                 "SELECT count(*) FROM jobs WHERE world_size != 1 OR spread OR "
                 "local_processes != 1 OR replicated OR local_cpus != 0 OR torch != '' OR "
                 "torch_min != '' OR technique != ''"),
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
    ASSERT_TRUE((*db)
                    ->Exec(R"sql(
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
    EXPECT_EQ(job->needs, expected)
        << job_id << ": " << job->needs.ToJson().dump() << " vs " << expected.ToJson().dump();
  }
  EXPECT_EQ((*store)->jobs().FindJob(3)->needs.Agents(), 3);
  EXPECT_EQ((*store)->jobs().FindJob(4)->needs.local_cpus, 8);
}

}  // namespace
}  // namespace benchfleet
