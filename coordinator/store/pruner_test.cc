// Retention: old results lose their raw samples, recent ones keep them, every result
// keeps its statistics, and the space goes back to the file system.
#include "coordinator/store/pruner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "coordinator/store/sample_blob.h"
#include "coordinator/store/store.h"
#include "sqlite/sqlite.h"

namespace benchfleet {
namespace {

class PrunerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-prune-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "results.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `old` results received in 2020 and `recent` ones now, each with 5,000 samples
  // (20 KB: a result that sampled 1 ms blocks for the default 5 s).
  void AddResults(Database& db, int old, int recent) {
    ASSERT_TRUE(db.Exec("INSERT OR IGNORE INTO hosts(host_id, name, machine_id, first_seen, "
                        "last_seen) VALUES (1, 'a', 'm', 't', 't');"
                        "INSERT OR IGNORE INTO sweeps(sweep_id, name, spec, state, created_at) "
                        "VALUES (1, 's', '{}', 'done', 't');")
                    .ok());
    const std::vector<double> samples(5000, 1.25);
    for (int i = 0; i < old + recent; ++i) {
      const int64_t job = ++jobs_;
      auto job_row = db.Prepare(
          "INSERT INTO jobs(job_id, sweep_id, spec, timeout_s, state, "
          "created_at) VALUES (?1, 1, '{}', 60, 'done', 't')");
      ASSERT_TRUE(job_row->Bind(1, job).Run().ok());
      auto result = db.Prepare(
          "INSERT INTO results(job_id, attempt, host_id, ok, n, median_ms, detail, received_at) "
          "VALUES (?1, 1, 1, 1, 5000, 1.25, '{}', ?2)");
      ASSERT_TRUE(result->Bind(1, job)
                      .Bind(2, i < old ? std::string("2020-01-01T00:00:00.000Z") : UtcNowIso8601())
                      .Run()
                      .ok());
      auto blob = db.Prepare("INSERT INTO result_samples(job_id, n, ms_f32le) VALUES (?1, ?2, ?3)");
      ASSERT_TRUE(
          blob->Bind(1, job).Bind(2, int64_t{5000}).BindBlob(3, PackSamples(samples)).Run().ok());
    }
  }

  int64_t Scalar(Database& db, const std::string& sql) {
    auto stmt = db.Prepare(sql);
    EXPECT_TRUE(stmt.ok()) << sql;
    EXPECT_TRUE(*stmt->Step()) << sql;
    return stmt->Int(0);
  }

  SamplePruner::Progress Prune(Store& store, double older_than_s, int* steps) {
    auto pruner = SamplePruner::Start(store.retention(), older_than_s);
    EXPECT_TRUE(pruner.ok()) << pruner.status().ToString();
    *steps = 0;
    while (true) {
      ++*steps;
      auto done = pruner->Step(store.retention(), Millis(20));  // as the coordinator's loop does
      EXPECT_TRUE(done.ok()) << done.status().ToString();
      if (!done.ok() || *done) break;
    }
    return pruner->progress();
  }

  std::filesystem::path dir_;
  std::string path_;
  int64_t jobs_ = 0;
};

TEST_F(PrunerTest, OldSamplesGoInStepsAndTheirSpaceComesBack) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto db = Database::Open(path_, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok());
  AddResults(**db, 3000, 200);
  ASSERT_EQ(Scalar(**db, "PRAGMA auto_vacuum"), 2);  // incremental, set when the store was made
  int steps = 0;
  const SamplePruner::Progress progress = Prune(**store, 90 * 86400.0, &steps);
  EXPECT_EQ(progress.results_pruned, 3000);
  // 3,000 x 20 KB of samples went back (60 MB); 200 x 20 KB stay.
  EXPECT_LT(progress.bytes_after, progress.bytes_before - 3000 * 19000);
  EXPECT_GT(progress.bytes_after, 200 * 20000);
  EXPECT_EQ(progress.bytes_after, Scalar(**db,
                                         "SELECT page_count * page_size FROM pragma_page_count(), "
                                         "pragma_page_size()"));
  EXPECT_EQ(Scalar(**db, "PRAGMA freelist_count"), 0);
  // Job ids in windows, then pages in batches: many short steps, not one long one.
  EXPECT_GE(steps, 3);
  EXPECT_EQ(Scalar(**db, "SELECT count(*) FROM result_samples"), 200);
  EXPECT_EQ(Scalar(**db, "SELECT min(job_id) FROM result_samples"), 3001);
  EXPECT_EQ(Scalar(**db, "SELECT count(*) FROM results WHERE median_ms = 1.25"), 3200);
  EXPECT_EQ(Scalar(**db, "SELECT count(*) FROM samples WHERE job_id = 3001"), 5000);
  EXPECT_EQ(Scalar(**db, "SELECT count(*) FROM samples WHERE job_id = 1"), 0);
  auto check = (*db)->Prepare("PRAGMA integrity_check");
  ASSERT_TRUE(*check->Step());
  EXPECT_EQ(check->Text(0), "ok");
}

TEST_F(PrunerTest, AnOlderStoreSwitchesToIncrementalVacuumWhenOpened) {
  {
    // Made the way stores were before auto_vacuum was set.
    auto db = Database::Open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA auto_vacuum=NONE; CREATE TABLE t(x)").ok());
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto db = Database::Open(path_, SQLITE_OPEN_READWRITE);
  ASSERT_EQ(Scalar(**db, "PRAGMA auto_vacuum"), 2);
  {
    auto journal = (*db)->Prepare("PRAGMA journal_mode");
    ASSERT_TRUE(*journal->Step());
    EXPECT_EQ(journal->Text(0), "wal");
  }
  AddResults(**db, 500, 0);
  int steps = 0;
  const SamplePruner::Progress progress = Prune(**store, 0, &steps);
  EXPECT_EQ(progress.results_pruned, 500);
  EXPECT_LT(progress.bytes_after, progress.bytes_before - 500 * 19000);
}

}  // namespace
}  // namespace benchfleet
