// The fixture of the schema tests (schema_test.cc, schema_upgrade_test.cc): stores made
// by the numbered steps before the baseline, with rows written at old versions 1, 13
// and 25, and helpers that read a store's schema and rows back as text.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/core/fingerprint.h"
#include "coordinator/store/legacy_store_fixture.h"
#include "coordinator/store/store.h"
#include "sqlite/schema.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

// Every row of `sql`'s first column as text ("NULL" for NULL).
inline std::vector<std::string> Texts(Database& db, const std::string& sql) {
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

inline std::string Text(Database& db, const std::string& sql) {
  const std::vector<std::string> values = Texts(db, sql);
  return values.empty() ? "" : values.front();
}

// sqlite_master, sorted: two stores have the same schema when these are equal, in
// whatever order their objects were made.
inline std::vector<std::string> SchemaOf(Database& db) {
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
inline std::map<std::string, std::vector<std::string>> RowsOf(
    Database& db, const std::set<std::string>& left_out = {}) {
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

inline std::unique_ptr<Database> Connect(const std::string& path) {
  auto db = Database::Open(path, SQLITE_OPEN_READWRITE);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  return db.ok() ? std::move(*db) : nullptr;
}

inline const std::string kSeriesA = Sha256Hex("series a");
inline const std::string kSeriesB = Sha256Hex("series b");

// Rows written when the store was at old version 1 (001_init.sql): two sweeps, jobs in
// every state, pinned and not, results with raw samples one row each, a failed one, and
// a late result recorded twice (old step 008 kept the first).
inline const std::string kRowsAtVersion1 = R"sql(
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
inline const std::string kRowsAtVersion13 =
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
inline const std::string kRowsAtVersion25 = R"sql(
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

}  // namespace benchfleet
