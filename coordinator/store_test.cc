#include "coordinator/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <tuple>

#include "common/result_fields.h"
#include "coordinator/fingerprint.h"
#include "coordinator/reader.h"
#include "coordinator/sample_blob.h"
#include "coordinator/sqlite.h"

namespace benchfleet {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-store-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "results.db").string();
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    host_ =
        *store_->UpsertHost("node-a", "m1", json::array({"lab"}), {{"host", {{"cpu_model", "x"}}}});
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Sweep MakeSweep(const std::string& text) {
    auto sweep = ParseSweepText(text);
    EXPECT_TRUE(sweep.ok()) << sweep.status().ToString();
    return *sweep;
  }

  json GoodResult(int batch) {
    return {{"ok", true},
            {"device", "cpu"},
            {"model", "mlp"},
            {"mode", "inference"},
            {"dtype", "fp32"},
            {"batch_size", batch},
            {"threads", 1},
            {"stats",
             {{"n", 12},
              {"median_ms", 2.0},
              {"mean_ms", 2.1},
              {"min_ms", 1.9},
              {"max_ms", 3.0},
              {"p90_ms", 2.5},
              {"p99_ms", 2.9},
              {"iqr_ms", 0.1},
              {"noisy", false}}},
            {"samples_ms", {2.0, 2.1, 1.9}},
            {"throughput_per_s", batch * 1000 / 2.0},
            {"peak_rss_mb", 200.0},
            {"effective_threads", 1.0}};
  }

  int64_t Count(const std::string& sql) {
    auto rows = Query(sql, 10);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows->rows.at(0).at(0).get<int64_t>();
  }

  StatusOr<Rows> Query(const std::string& sql, int max_rows) {
    auto reader = StoreReader::Open(path_);
    if (!reader.ok()) return reader.status();
    return (*reader)->Query(sql, max_rows);
  }

  // Every queued job the agent "node-a" could be offered, in dispatch order
  // (calibrations first, then oldest first).
  std::vector<QueuedJob> QueuedFor(const std::string& agent) {
    std::vector<QueuedJob> all;
    auto requirements = store_->Requirements();
    for (const JobRequirement& requirement : *requirements) {
      if (!requirement.pinned_host.empty() && requirement.pinned_host != agent) continue;
      auto jobs = store_->OldestQueued(requirement.requirement_id, 100000);
      all.insert(all.end(), jobs->begin(), jobs->end());
    }
    std::sort(all.begin(), all.end(), [](const QueuedJob& a, const QueuedJob& b) {
      if ((a.kind == "calibration") != (b.kind == "calibration")) return a.kind == "calibration";
      return a.job_id < b.job_id;
    });
    return all;
  }

  StatusOr<ResultOutcome> Deliver(int64_t job, int attempt, const json& result,
                                  std::string* rejection = nullptr) {
    auto parsed = ParseWorkerResult(result);
    if (!parsed.ok()) return parsed.status();
    std::string ignored;
    return store_->StoreResult(job, attempt, host_, "node-a", *parsed,
                               rejection ? rejection : &ignored);
  }

  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
  int64_t host_ = 0;
};

const char* kTwoJobs = R"({"name":"s","matrix":{"model":["mlp"],"batch_size":[1,8]}})";

TEST_F(StoreTest, MigrationsApplyOnceAndDatabaseIsInWalMode) {
  EXPECT_EQ(store_->SchemaVersion(), Migrations().back().version);
  auto db = Database::Open(path_, SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok());
  auto mode = (*db)->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  ASSERT_TRUE(*mode->Step());
  EXPECT_EQ(mode->Text(0), "wal");
  store_.reset();
  auto reopened = Store::Open(path_);  // second open applies nothing and keeps data
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->SchemaVersion(), Migrations().back().version);
}

TEST(SeriesKeyTest, IsTheFirstSixtyBitsOfTheSeriesHex) {
  const std::string series = Sha256Hex("a fingerprint\n{}");
  EXPECT_EQ(SeriesKeyOf(series), std::stoll(series.substr(0, 15), nullptr, 16));
  EXPECT_EQ(SeriesKeyOf("0123456789abcdef0123"), 0x0123456789abcdeLL);
  EXPECT_EQ(SeriesKeyOf("fffffffffffffff"), (int64_t{1} << 60) - 1);
  EXPECT_EQ(SeriesKeyOf("0123"), -1);                 // too short
  EXPECT_EQ(SeriesKeyOf("0123456789ABCDEF0123"), -1);  // SeriesOf writes lower case only
}

TEST_F(StoreTest, SweepExpandsIntoJobsPerPinnedHost) {
  auto stored = store_->CreateSweep(MakeSweep(kTwoJobs), {{"cpu", {"node-a", "node-b"}}});
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->jobs, 4);
  EXPECT_EQ(stored->agents, (std::vector<std::string>{"node-a", "node-b"}));
  auto mine = QueuedFor("node-a");
  EXPECT_EQ(mine.size(), 2u);
  EXPECT_EQ(json::parse(mine.front().spec)["batch_size"], 1);
}

TEST_F(StoreTest, AnAcceptedSweepTakesItsJobsInSlicesAndFinishesOnlyWhenWhole) {
  // Placement "each" over two devices, one of which has no agent listed: 3 batch sizes
  // x (2 agents on cpu + 0 on cuda) = 6 jobs.
  const Sweep sweep = MakeSweep(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": [1, 2, 3],
                                     "device": ["cpu", "cuda"]}})");
  const PinnedAgents pinned = {{"cpu", {"node-a", "node-b"}}};
  auto accepted = store_->AcceptSweep(sweep, pinned, "cli-7");
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_EQ(accepted->jobs, 6);
  EXPECT_EQ(accepted->agents, (std::vector<std::string>{"node-a", "node-b"}));
  const int64_t id = accepted->sweep_id;
  auto status = [&] { return (*store_->SweepStatus(id, 1))[0]; };
  EXPECT_EQ(status()["jobs"]["total"], 6);
  EXPECT_EQ(status()["jobs"]["storing"], 6);
  // A resend finds it with every job it will have, and where they go.
  auto again = store_->FindSubmission("cli-7");
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->jobs, 6);
  EXPECT_EQ((*again)->agents, (std::vector<std::string>{"node-a", "node-b"}));
  // Combinations 0 and 1 (cpu, batch 1 and 2; the device axis turns slowest): 4 jobs.
  ASSERT_TRUE(*store_->StoreJobs(id, sweep, pinned, 0, 2));
  EXPECT_EQ(status()["jobs"]["storing"], 2);
  // A slice from the wrong place is refused and stores nothing.
  EXPECT_FALSE(*store_->StoreJobs(id, sweep, pinned, 0, 2));
  EXPECT_EQ(Count("select count(*) from jobs"), 4);
  auto unstored = store_->UnstoredSweeps();
  ASSERT_TRUE(unstored.ok());
  ASSERT_EQ(unstored->size(), 1u);
  EXPECT_EQ((*unstored)[0].next_combination, 2u);
  EXPECT_EQ((*unstored)[0].pinned, pinned);
  // The rest: cpu batch 3 (2 jobs), then the cuda combinations (none).
  ASSERT_TRUE(*store_->StoreJobs(id, sweep, pinned, 2, 100));
  EXPECT_EQ(status()["jobs"]["storing"], 0);
  EXPECT_EQ(status()["jobs"]["total"], 6);
  EXPECT_TRUE(store_->UnstoredSweeps()->empty());
  EXPECT_EQ(Count("select count(*) from jobs where sweep_id = " + std::to_string(id) +
                  " and json_extract(spec, '$.device') = 'cpu'"), 6);

  // Every stored job of a sweep ended: not done while jobs are still to come.
  const Sweep three = MakeSweep(R"({"name": "t", "placement": "any",
                                     "matrix": {"model": "mlp", "batch_size": [1, 2, 3]}})");
  const int64_t any = store_->AcceptSweep(three, {})->sweep_id;
  auto run_queued = [&] {
    for (const auto& job : QueuedFor("node-a")) {
      ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
      ASSERT_TRUE(Deliver(job.job_id, 1, {{"ok", false}, {"error", "killed"}}).ok());
    }
  };
  ASSERT_TRUE(*store_->StoreJobs(any, three, {}, 0, 2));
  run_queued();
  EXPECT_EQ((*store_->SweepStatus(any, 1))[0]["state"], "running");
  ASSERT_TRUE(*store_->StoreJobs(any, three, {}, 2, 2));
  run_queued();
  EXPECT_EQ((*store_->SweepStatus(any, 1))[0]["state"], "done");

  // Cancelled while storing: no more jobs, and a total of what was stored.
  auto other = store_->AcceptSweep(sweep, {});
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(*store_->StoreJobs(other->sweep_id, sweep, {}, 0, 2));
  EXPECT_EQ(*store_->CancelSweep(other->sweep_id), 2);
  EXPECT_FALSE(*store_->StoreJobs(other->sweep_id, sweep, {}, 2, 2));
  const json cancelled = (*store_->SweepStatus(other->sweep_id, 1))[0]["jobs"];
  EXPECT_EQ(cancelled["total"], 2);
  EXPECT_EQ(cancelled["storing"], 0);
}

TEST_F(StoreTest, ResultIsStoredOnceThenDuplicateThenStale) {
  ASSERT_TRUE(store_->CreateSweep(MakeSweep(kTwoJobs), {}).ok());
  auto queued = QueuedFor("node-a");
  int64_t job = queued[0].job_id;
  auto attempt = store_->MarkRunning(job, host_);
  ASSERT_TRUE(attempt.ok());
  EXPECT_EQ(*attempt, 1);
  EXPECT_FALSE(store_->MarkRunning(job, host_).ok());  // no longer queued

  auto first = Deliver(job, 1, GoodResult(1));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, ResultOutcome::kStored);
  auto again = Deliver(job, 1, GoodResult(1));
  EXPECT_EQ(*again, ResultOutcome::kDuplicate);
  auto late = Deliver(job, 7, GoodResult(1));
  EXPECT_EQ(*late, ResultOutcome::kStale);
  // The agent's resend of the late result crossed the ack: recorded once.
  auto late_again = Deliver(job, 7, GoodResult(1));
  EXPECT_EQ(*late_again, ResultOutcome::kStaleAgain);
  EXPECT_STREQ(ResultOutcomeName(*late_again), "stale");

  EXPECT_EQ(Count("select count(*) from results"), 1);
  EXPECT_EQ(Count("select count(*) from stale_results"), 1);
  EXPECT_EQ(Count("select count(*) from samples"), 3);
  EXPECT_EQ(Count("select count(*) from result_samples where n = 3 and length(ms_f32le) = 12"), 1);
  EXPECT_EQ(Count("select count(*) from result_summary"), 1);
  EXPECT_EQ(Count("select count(*) from jobs where state = 'done'"), 1);
}

TEST_F(StoreTest, ResultSummaryHasTheDocumentedColumns) {
  ASSERT_TRUE(store_->CreateSweep(MakeSweep(kTwoJobs), {}).ok());
  int64_t job = QueuedFor("node-a").front().job_id;
  ASSERT_TRUE(store_->MarkRunning(job, host_).ok());
  ASSERT_TRUE(Deliver(job, 1, GoodResult(1)).ok());
  auto rows = (*StoreReader::Open(path_))->ResultSummary(std::nullopt, 10);
  ASSERT_TRUE(rows.ok());
  for (const char* column :
       {"sweep", "job_id", "host", "device", "model", "mode", "dtype", "batch_size", "threads", "n",
        "median_ms", "mean_ms", "p90_ms", "p99_ms", "iqr_ms", "throughput_per_s", "peak_rss_mb",
        "effective_threads", "finished_at"}) {
    EXPECT_NE(std::find(rows->columns.begin(), rows->columns.end(), column), rows->columns.end())
        << column;
  }
  ASSERT_EQ(rows->rows.size(), 1u);
}

TEST_F(StoreTest, SweepFinishesWhenEveryJobHasEnded) {
  auto sweep_id = store_->CreateSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  auto jobs = QueuedFor("node-a");
  for (const auto& job : jobs) {
    ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
    json failed = {{"ok", false}, {"error", "worker killed by signal 9"}};
    ASSERT_TRUE(Deliver(job.job_id, 1, failed).ok());
  }
  auto status = store_->SweepStatus(sweep_id, 1);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ((*status)[0]["state"], "done");
  EXPECT_EQ((*status)[0]["jobs"]["failed"], 2);
  EXPECT_EQ(Count("select count(*) from result_summary"), 0);  // failures are not summary rows
  EXPECT_EQ(Count("select count(*) from job_failures"), 2);
}

TEST_F(StoreTest, InAGroupASweepEndsWithTheCommitThatKeepsItsLastResultOrNotAtAll) {
  auto sweep_id = store_->CreateSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  auto jobs = QueuedFor("node-a");
  for (const auto& job : jobs) ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
  auto state = [&] { return (*store_->SweepStatus(sweep_id, 1))[0]["state"].get<std::string>(); };
  // A sweep that cannot be marked done (another process's trigger, standing in for a
  // write that fails): its last result must not be kept without it.
  {
    auto other = Database::Open(path_, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE((*other)->Exec("CREATE TRIGGER no_end BEFORE UPDATE OF state ON sweeps "
                               "BEGIN SELECT RAISE(ABORT, 'cannot end sweeps'); END").ok());
  }
  store_->OpenGroup();
  for (const auto& job : jobs) {
    ASSERT_EQ(*Deliver(job.job_id, 1, GoodResult(json::parse(job.spec)["batch_size"].get<int>())),
              ResultOutcome::kStored);
  }
  EXPECT_EQ(state(), "running");  // judged once, at the group's commit
  Status committed = store_->CommitGroup();
  EXPECT_FALSE(committed.ok());
  EXPECT_NE(committed.message().find("cannot end sweeps"), std::string::npos) << committed.message();
  EXPECT_EQ(Count("select count(*) from results"), 0);  // nothing acked: both come again
  EXPECT_EQ(Count("select count(*) from jobs where state = 'running'"), 2);
  EXPECT_EQ(state(), "running");

  {
    auto other = Database::Open(path_, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE((*other)->Exec("DROP TRIGGER no_end").ok());
  }
  store_->OpenGroup();
  ASSERT_EQ(*Deliver(jobs[0].job_id, 1, GoodResult(1)), ResultOutcome::kStored);  // batch 1
  ASSERT_TRUE(store_->CommitGroup().ok());
  EXPECT_EQ(state(), "running");  // one job still runs
  store_->OpenGroup();
  ASSERT_EQ(*Deliver(jobs[1].job_id, 1, GoodResult(8)), ResultOutcome::kStored);
  ASSERT_TRUE(store_->CommitGroup().ok());
  EXPECT_EQ(state(), "done");
  EXPECT_EQ(Count("select count(*) from results"), 2);
}

TEST_F(StoreTest, LostAttemptsRequeueUntilMaxAttemptsThenFail) {
  ASSERT_TRUE(store_->CreateSweep(MakeSweep(kTwoJobs), {}).ok());
  int64_t job = QueuedFor("node-a").front().job_id;
  ASSERT_EQ(*store_->MarkRunning(job, host_), 1);
  EXPECT_TRUE(*store_->RequeueOrFail(job, 1, 2, "agent went silent"));
  EXPECT_FALSE(*store_->RequeueOrFail(job, 1, 2, "again"));  // not running any more: no-op
  ASSERT_EQ(*store_->MarkRunning(job, host_), 2);
  EXPECT_FALSE(*store_->RequeueOrFail(job, 2, 2, "agent went silent"));
  auto failures = Query("select error from job_failures", 10);
  ASSERT_TRUE(failures.ok());
  ASSERT_EQ(failures->rows.size(), 1u);
  EXPECT_NE(failures->rows[0][0].get<std::string>().find("gave up after 2 attempts"),
            std::string::npos);
}

TEST_F(StoreTest, JobCountsFollowEveryStateChange) {
  // What status and the "sweep finished" check read, against a count of the jobs.
  auto agree = [&] {
    auto counted = Query("SELECT group_concat(sweep_id || ':' || state || '=' || n) FROM (SELECT "
                         "sweep_id, state, COUNT(*) AS n FROM jobs GROUP BY 1, 2 ORDER BY 1, 2)", 10);
    auto kept = Query("SELECT group_concat(sweep_id || ':' || state || '=' || n) FROM (SELECT "
                      "sweep_id, state, SUM(n) AS n FROM job_counts GROUP BY 1, 2 HAVING SUM(n) > 0 "
                      "ORDER BY 1, 2)", 10);
    EXPECT_TRUE(counted.ok() && kept.ok());
    return counted->rows.at(0).at(0) == kept->rows.at(0).at(0) ? std::string()
                                                               : counted->rows.at(0).at(0).dump() +
                                                                     " counted, " +
                                                                     kept->rows.at(0).at(0).dump() + " kept";
  };
  auto first = store_->CreateSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  auto second = store_->CreateSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  EXPECT_EQ(agree(), "");
  std::vector<QueuedJob> queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 4u);
  const int64_t a = queued[0].job_id, b = queued[1].job_id;
  ASSERT_EQ(*store_->MarkRunning(a, host_), 1);
  ASSERT_EQ(*store_->MarkRunning(b, host_), 1);
  EXPECT_EQ(agree(), "");
  EXPECT_TRUE(*store_->UndoHandOut(b, 1));
  ASSERT_EQ(*store_->MarkRunning(b, host_), 1);
  EXPECT_TRUE(*store_->RequeueOrFail(b, 1, 3, "agent went silent"));
  EXPECT_EQ(agree(), "");
  json result = GoodResult(1);
  EXPECT_EQ(*Deliver(a, 1, result), ResultOutcome::kStored);
  EXPECT_EQ(agree(), "");
  EXPECT_EQ(*store_->CancelSweep(second), 2);
  EXPECT_EQ(agree(), "");
  auto status = store_->SweepStatus(std::nullopt, 20);
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(status->size(), 2u);
  EXPECT_EQ((*status)[0]["sweep_id"], second);
  EXPECT_EQ((*status)[0]["jobs"], json::parse(R"({"total": 2, "queued": 0, "running": 0, "done": 0,
                                                  "failed": 0, "cancelled": 2, "storing": 0})"));
  EXPECT_EQ((*status)[1]["sweep_id"], first);
  EXPECT_EQ((*status)[1]["jobs"], json::parse(R"({"total": 2, "queued": 1, "running": 0, "done": 1,
                                                  "failed": 0, "cancelled": 0, "storing": 0})"));
  // A change by hand (a user's sqlite3 shell) keeps them true as well.
  auto db = Database::Open(path_, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("UPDATE jobs SET state = 'cancelled' WHERE state = 'queued'").ok());
  EXPECT_EQ(agree(), "");
}

TEST_F(StoreTest, CancelDropsQueuedJobs) {
  auto sweep_id = store_->CreateSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  EXPECT_EQ(*store_->CancelSweep(sweep_id), 2);
  EXPECT_TRUE(QueuedFor("node-a").empty());
  EXPECT_EQ(store_->CancelSweep(999).status().code(), StatusCode::kNotFound);
}

TEST_F(StoreTest, UserQueriesAreReadOnlyAndErrorsAreClear) {
  auto write = Query("delete from hosts", 10);
  ASSERT_FALSE(write.ok());
  EXPECT_NE(write.status().message().find("read-only"), std::string::npos);
  auto bad = Query("select nope from nowhere", 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no such table"), std::string::npos);
  auto many = Query(
      "with recursive c(x) as (select 1 union all select x+1 from c "
      "where x < 50) select x from c",
      10);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->rows.size(), 10u);
  EXPECT_TRUE(many->truncated);
}

TEST_F(StoreTest, NewerSchemaIsRefused) {
  store_.reset();
  {
    auto db = Database::Open(path_, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version = 999").ok());
  }
  auto reopened = Store::Open(path_);
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.status().message().find("newer"), std::string::npos);
}

TEST_F(StoreTest, CalibrationsGoFirstAndSetTheFractionOfPeak) {
  ASSERT_TRUE(store_->CreateSweep(MakeSweep(R"({"name":"s","matrix":{"model":["mlp"],
      "batch_size":[1],"threads":[1,2]}})"), {{"cpu", {"node-a"}}}).ok());
  ASSERT_TRUE(store_->CreateCalibration({"node-a"}, 600).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 3u);
  EXPECT_EQ(queued[0].kind, "calibration");  // dispatched before the older benchmarks
  int64_t calibration_job = queued[0].job_id;
  ASSERT_TRUE(store_->MarkRunning(calibration_job, host_).ok());
  const json calibration = {{"ok", true}, {"kind", "calibration"},
                      {"calibration", {{"cpu", {{"gemm_gflops_all", 200.0}, {"gemm_threads_all", 2},
                                                {"gemm_gflops_1", 110.0}, {"stream_triad_gbps_all", 20.0}}},
                                       {"gpus", json::array()}}}};
  ASSERT_EQ(*Deliver(calibration_job, 1, calibration), ResultOutcome::kStored);
  EXPECT_EQ(Count("select count(*) from host_calibration where host = 'node-a'"), 1);
  EXPECT_EQ(Count("select count(*) from result_summary"), 0);  // not a benchmark row

  // One thread: compared with one CPU's peak. Two threads: with the all-CPU peak.
  for (int i = 1; i <= 2; ++i) {
    int64_t job = queued[i].job_id;
    ASSERT_TRUE(store_->MarkRunning(job, host_).ok());
    json result = GoodResult(static_cast<int>(json::parse(queued[i].spec)["batch_size"]));
    result["threads"] = json::parse(queued[i].spec)["threads"];
    result["gflops"] = 55.0;
    ASSERT_TRUE(Deliver(job, 1, result).ok());
  }
  auto rows = Query(
      "select threads, peak_gflops, fraction_of_peak from result_summary order by threads", 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows->rows[0][1].get<double>(), 110.0);
  EXPECT_DOUBLE_EQ(rows->rows[0][2].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(rows->rows[1][1].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(rows->rows[1][2].get<double>(), 55.0 / 200.0);
}

// A GPU result is read against its GPU's GEMM peak for its own dtype; a calibration
// from before a figure existed gives no peak for that dtype, not another dtype's.
TEST_F(StoreTest, AGpuResultIsReadAgainstItsGpusPeakForItsDtype) {
  ASSERT_TRUE(store_->CreateCalibration({"node-a"}, 600).ok());
  const QueuedJob calibration_job = QueuedFor("node-a").at(0);
  ASSERT_TRUE(store_->MarkRunning(calibration_job.job_id, host_).ok());
  const json calibration = {
      {"ok", true}, {"kind", "calibration"},
      {"calibration", {{"cpu", {{"gemm_gflops_all", 200.0}, {"gemm_threads_all", 2}, {"gemm_gflops_1", 110.0},
                                {"gemm_bf16_gflops_all", 400.0}, {"gemm_bf16_gflops_1", 220.0}}},
                       {"gpus", json::array({{{"sgemm_gflops", 50000.0}, {"tf32_gflops", 400000.0},
                                              {"bf16_gflops", 800000.0}},
                                             {{"sgemm_gflops", 40000.0}}})}}}};
  ASSERT_EQ(*Deliver(calibration_job.job_id, 1, calibration), ResultOutcome::kStored);
  ASSERT_TRUE(store_->CreateSweep(MakeSweep(R"({"name":"g","placement":"any","matrix":{"model":"mlp",
      "batch_size":8,"device":["cuda:0","cuda:1","cpu"],"dtype":["fp32","tf32","bf16"]},
      "exclude":[{"device":"cpu","dtype":"tf32"}]})"), {}).ok());
  for (const QueuedJob& job : QueuedFor("node-a")) {
    const json spec = json::parse(job.spec);
    ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(8);
    result["device"] = spec["device"];
    result["dtype"] = spec["dtype"];
    result["gflops"] = 20000.0;
    auto stored = Deliver(job.job_id, 1, result);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(*stored, ResultOutcome::kStored);
  }
  auto rows = Query("select device, dtype, peak_gflops from result_summary order by device, dtype", 10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  const std::vector<std::vector<json>> expected = {
      {"cpu", "bf16", 220.0},         {"cpu", "fp32", 110.0},  // one thread: one CPU's peak
      {"cuda:0", "bf16", 800000.0},   {"cuda:0", "fp32", 50000.0}, {"cuda:0", "tf32", 400000.0},
      {"cuda:1", "bf16", nullptr},    {"cuda:1", "fp32", 40000.0}, {"cuda:1", "tf32", nullptr}};
  ASSERT_EQ(rows->rows.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(rows->rows[i][0], expected[i][0]) << i;
    EXPECT_EQ(rows->rows[i][1], expected[i][1]) << i;
    EXPECT_EQ(rows->rows[i][2], expected[i][2]) << rows->rows[i][0] << " " << rows->rows[i][1];
  }
}

// A GPU's GEMM peaks are checked as they arrive: a number >= 0, or absent.
TEST_F(StoreTest, ACalibrationWithAMalformedGpuPeakIsRefused) {
  for (const char* field : {"sgemm_gflops", "tf32_gflops", "bf16_gflops"}) {
    const json calibration = {{"ok", true}, {"kind", "calibration"},
                              {"calibration", {{"gpus", json::array({{{field, "fast"}}})}}}};
    auto parsed = ParseWorkerResult(calibration);
    ASSERT_FALSE(parsed.ok()) << field;
    EXPECT_EQ(parsed.status().message(),
              std::string("result.calibration.gpus[0].") + field + ": must be a number >= 0 or null");
  }
}

TEST_F(StoreTest, ACalibrationIsPendingOnTheMachineOfItsAgentAloneUntilItsResult) {
  const int64_t other = *store_->UpsertHost("node-b", "m2", json::array(), {{"host", {{"cpu_model", "x"}}}});
  ASSERT_TRUE(store_->CreateSweep(MakeSweep(R"({"name":"s","matrix":{"model":["mlp"],
      "batch_size":[1,2,4,8],"threads":[1,2,3]}})"), {{"cpu", {"node-a", "node-b"}}}).ok());
  EXPECT_FALSE(*store_->CalibrationPending("m1"));  // benchmark jobs are no calibrations
  ASSERT_TRUE(store_->CreateCalibration({"node-a"}, 600).ok());
  EXPECT_TRUE(*store_->CalibrationPending("m1"));
  EXPECT_FALSE(*store_->CalibrationPending("m2"));
  const QueuedJob calibration = QueuedFor("node-a").at(0);
  ASSERT_EQ(calibration.kind, "calibration");
  ASSERT_TRUE(store_->MarkRunning(calibration.job_id, host_).ok());
  EXPECT_TRUE(*store_->CalibrationPending("m1"));  // running is pending too
  const json result = {{"ok", true}, {"kind", "calibration"},
                       {"calibration", {{"cpu", {{"gemm_gflops_all", 200.0}, {"gemm_threads_all", 2},
                                                 {"gemm_gflops_1", 110.0}, {"stream_triad_gbps_all", 20.0}}},
                                        {"gpus", json::array()}}}};
  ASSERT_EQ(*Deliver(calibration.job_id, 1, result), ResultOutcome::kStored);
  EXPECT_FALSE(*store_->CalibrationPending("m1"));
  (void)other;
}

TEST_F(StoreTest, ComparisonViewsPairIdenticalConfigurations) {
  // Three jobs of one configuration: fp32 at 1 and 2 threads, int8 at 1 thread.
  auto sweep = MakeSweep(R"({"name":"v","placement":"any","matrix":{"model":["mlp"],
      "batch_size":[8],"dtype":["fp32","int8"],"threads":[1,2]}})");
  ASSERT_TRUE(store_->CreateSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 4u);
  std::map<std::pair<std::string, int>, double> medians = {
      {{"fp32", 1}, 4.0}, {{"fp32", 2}, 2.5}, {{"int8", 1}, 2.0}};
  for (const QueuedJob& job : queued) {
    const std::string dtype = json::parse(job.spec)["dtype"];
    const int threads = json::parse(job.spec)["threads"];
    auto median = medians.find({dtype, threads});
    if (median == medians.end()) continue;  // int8 at 2 threads stays queued
    ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(8);
    result["dtype"] = dtype;
    result["threads"] = threads;
    result["stats"]["median_ms"] = median->second;
    if (dtype == "int8") {
      result["accuracy"] = {{"max_abs_err", 0.02}, {"mean_abs_err", 0.004}, {"rel_err", 0.01},
                            {"top1_agreement", 0.98}};
    }
    auto stored = Deliver(job.job_id, 1, result);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(*stored, ResultOutcome::kStored);
  }
  auto threads = Query(
      "select threads, speedup, parallel_efficiency from thread_scaling where dtype = 'fp32' "
      "order by threads", 10);
  ASSERT_TRUE(threads.ok()) << threads.status().ToString();
  ASSERT_EQ(threads->rows.size(), 2u);
  EXPECT_DOUBLE_EQ(threads->rows[1][1].get<double>(), 4.0 / 2.5);
  EXPECT_DOUBLE_EQ(threads->rows[1][2].get<double>(), 4.0 / 2.5 / 2);
  auto dtype = Query("select dtype, speedup, rel_err, top1_agreement from dtype_comparison", 10);
  ASSERT_TRUE(dtype.ok()) << dtype.status().ToString();
  ASSERT_EQ(dtype->rows.size(), 1u);  // int8 against fp32 at the same thread count only
  EXPECT_DOUBLE_EQ(dtype->rows[0][1].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(dtype->rows[0][3].get<double>(), 0.98);
  auto batch = Query("select count(*) from batch_scaling", 10);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->rows[0][0], 3);
}

// cpu_gpu_speedup pairs a GPU result with the CPU result of the whole same configuration
// but device and threads, each side at its fastest thread count among results that are
// not noisy: not a noisy result, however fast, nor a technique variant run on the CPU
// alone.
TEST_F(StoreTest, CpuGpuSpeedupPairsEachSidesBestSteadyResultOfTheSameConfiguration) {
  auto sweep = MakeSweep(R"({"name":"cg","placement":"any","matrix":{"model":"mlp","mode":"train",
      "batch_size":8,"device":["cpu","cuda:0"],"threads":[1,2],"checkpointing":[null,true]},
      "exclude":[{"device":"cuda:0","checkpointing":true}]})");
  ASSERT_TRUE(store_->CreateSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 6u);
  struct Run {
    double median_ms;
    bool noisy;
  };
  // (device, threads, checkpointing) -> what it measured.
  const std::map<std::tuple<std::string, int, bool>, Run> runs = {
      {{"cpu", 1, false}, {4.0, false}},
      {{"cpu", 2, false}, {1.0, true}},   // fastest plain CPU run, but noisy
      {{"cpu", 1, true}, {0.1, false}},   // a technique the GPU did not run
      {{"cpu", 2, true}, {0.2, false}},
      {{"cuda:0", 1, false}, {0.4, true}},  // fastest GPU run, but noisy
      {{"cuda:0", 2, false}, {0.5, false}}};
  for (const QueuedJob& job : queued) {
    const json spec = json::parse(job.spec);
    const Run& run = runs.at({spec["device"], spec["threads"], spec.value("checkpointing", false)});
    ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(8);
    result["device"] = spec["device"];
    result["mode"] = "train";
    result["threads"] = spec["threads"];
    result["stats"]["median_ms"] = run.median_ms;
    result["stats"]["noisy"] = run.noisy;
    auto stored = Deliver(job.job_id, 1, result);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(*stored, ResultOutcome::kStored);
  }
  auto rows = Query("select cpu_threads, gpu_device, gpu_threads, cpu_median_ms, gpu_median_ms, speedup, "
                    "cpu_throughput_per_s, gpu_throughput_per_s from cpu_gpu_speedup", 10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->rows.size(), 1u);
  const auto& row = rows->rows[0];
  EXPECT_EQ(row[0], 1);
  EXPECT_EQ(row[1], "cuda:0");
  EXPECT_EQ(row[2], 2);
  EXPECT_DOUBLE_EQ(row[3].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(row[4].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(row[5].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(row[6].get<double>(), 8 * 1000 / 2.0);  // GoodResult's throughput
  // Every column the view had before it paired strictly is still there for its readers.
  EXPECT_TRUE(Query("select sweep_id, host, model, model_args, mode, dtype, batch_size, cpu_threads, "
                    "gpu_device, cpu_median_ms, gpu_median_ms, speedup, cpu_throughput_per_s, "
                    "gpu_throughput_per_s, cpu_job_id, gpu_job_id from cpu_gpu_speedup", 10)
                  .ok());
}

TEST_F(StoreTest, PruneComparisonSetsEachPrunedResultAgainstTheUnprunedOne) {
  auto sweep = MakeSweep(R"({"name":"p","placement":"any","matrix":{"model":"mlp","batch_size":8,
      "prune":[null,{"kind":"structured","ratio":0.5},{"kind":"magnitude","sparsity":0.5}]}})");
  ASSERT_TRUE(store_->CreateSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 3u);
  for (const QueuedJob& job : queued) {
    const json prune = json::parse(job.spec).value("prune", json(nullptr));
    ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(8);
    result["params"] = 1000;
    if (prune.is_null()) {
      result["stats"]["median_ms"] = 4.0;
    } else {  // as the worker reports it (schemas/worker.md, Pruning)
      const bool structured = prune["kind"] == "structured";
      result["stats"]["median_ms"] = structured ? 2.0 : 4.0;
      result["params"] = structured ? 500 : 1000;
      result["prune"] = prune;
      result["prune"]["params_unpruned"] = 1000;
      result["prune"]["weight_sparsity"] = structured ? 0.0 : 0.5;
      result["accuracy"] = {{"max_abs_err", 0.3}, {"mean_abs_err", 0.1}, {"rel_err", 0.2},
                            {"top1_agreement", structured ? 0.75 : 0.875}};
    }
    auto stored = Deliver(job.job_id, 1, result);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(*stored, ResultOutcome::kStored);
  }
  auto rows = Query(
      "select prune_kind, prune_amount, speedup, params_unpruned, params, params_share, weight_sparsity, "
      "top1_agreement from prune_comparison order by prune_kind", 10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->rows.size(), 2u);  // the unpruned result is the baseline, not a row
  EXPECT_EQ(rows->rows[0][0], "magnitude");
  EXPECT_DOUBLE_EQ(rows->rows[0][2].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(rows->rows[0][6].get<double>(), 0.5);
  EXPECT_EQ(rows->rows[1][0], "structured");
  EXPECT_DOUBLE_EQ(rows->rows[1][1].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(rows->rows[1][2].get<double>(), 2.0);
  EXPECT_EQ(rows->rows[1][3], 1000);
  EXPECT_EQ(rows->rows[1][4], 500);
  EXPECT_DOUBLE_EQ(rows->rows[1][5].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(rows->rows[1][7].get<double>(), 0.75);
  // result_summary shows the pruning of every result (null where there was none).
  EXPECT_EQ(Count("select count(*) from result_summary where prune_kind is null and params = 1000"), 1);
}

TEST_F(StoreTest, AResultCannotChangeItsJobsConfiguration) {
  ASSERT_TRUE(store_->CreateSweep(MakeSweep(kTwoJobs), {}).ok());
  int64_t job = QueuedFor("node-a").front().job_id;  // mlp, batch 1
  ASSERT_TRUE(store_->MarkRunning(job, host_).ok());
  json forged = GoodResult(1);
  forged["model"] = "cnn";
  std::string rejection;
  EXPECT_EQ(*Deliver(job, 1, forged, &rejection), ResultOutcome::kRejected);
  EXPECT_NE(rejection.find("result.model"), std::string::npos) << rejection;
  forged = GoodResult(999);
  EXPECT_EQ(*Deliver(job, 1, forged, &rejection), ResultOutcome::kRejected);
  EXPECT_NE(rejection.find("result.batch_size"), std::string::npos) << rejection;
  json calibration = {{"ok", true}, {"kind", "calibration"}, {"calibration", json::object()}};
  EXPECT_EQ(*Deliver(job, 1, calibration, &rejection), ResultOutcome::kRejected);
  EXPECT_EQ(Count("select count(*) from results"), 0);
  EXPECT_EQ(Count("select count(*) from stale_results"), 0);

  // Without an echo the configuration still comes from the job.
  json bare = GoodResult(1);
  for (const char* key : {"device", "model", "mode", "dtype", "batch_size", "threads"}) bare.erase(key);
  EXPECT_EQ(*Deliver(job, 1, bare), ResultOutcome::kStored);
  auto row = Query("select model, batch_size, threads, median_ms from result_summary", 10);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->rows.at(0), json::parse(R"(["mlp", 1, 1, 2.0])"));
}

TEST_F(StoreTest, ASubmissionIsStoredOnceHoweverOftenItIsSent) {
  auto first = store_->CreateSweep(MakeSweep(kTwoJobs), {}, "cli-123");
  auto again = store_->CreateSweep(MakeSweep(kTwoJobs), {}, "cli-123");
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_FALSE(first->existing);
  EXPECT_TRUE(again->existing);
  EXPECT_EQ(first->sweep_id, again->sweep_id);
  EXPECT_EQ(again->jobs, 2);
  EXPECT_EQ(Count("select count(*) from sweeps"), 1);
  EXPECT_EQ(Count("select count(*) from jobs"), 2);
  EXPECT_FALSE(store_->CreateSweep(MakeSweep(kTwoJobs), {}, "cli-456")->existing);
}

TEST_F(StoreTest, AnUndoneHandOutCostsNoAttempt) {
  ASSERT_TRUE(store_->CreateSweep(MakeSweep(kTwoJobs), {}).ok());
  int64_t job = QueuedFor("node-a").front().job_id;
  ASSERT_EQ(*store_->MarkRunning(job, host_), 1);
  EXPECT_TRUE(*store_->UndoHandOut(job, 1));
  EXPECT_FALSE(*store_->UndoHandOut(job, 1));  // already queued again
  EXPECT_EQ(*store_->MarkRunning(job, host_), 1);
}

TEST_F(StoreTest, QueriesMayHoldOneStatementOnly) {
  auto two = Query("select 1; delete from hosts", 10);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("only one SQL statement"), std::string::npos)
      << two.status().message();
  EXPECT_TRUE(Query("select 1; -- a comment\n", 10).ok());
  EXPECT_TRUE(Query("select 1;;  ", 10).ok());
}

TEST_F(StoreTest, EveryDeclaredResultFieldHasAColumnAndIsInTheSummary) {
  auto summary = (*StoreReader::Open(path_))->ResultSummary(std::nullopt, 1);
  ASSERT_TRUE(summary.ok());
  for (const ResultField& field : ResultFields()) {
    if (field.column.empty()) continue;
    EXPECT_NE(std::find(summary->columns.begin(), summary->columns.end(), field.column),
              summary->columns.end())
        << field.column;
  }
}

// Group commit at the SQLite layer: what a round of the coordinator's loop relies on.
class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("bf-group-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    std::filesystem::remove(path_);
    auto db = Database::Open(path_.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(*db);
    ASSERT_TRUE(db_->Exec("PRAGMA journal_mode=WAL; CREATE TABLE t(x INTEGER PRIMARY KEY, v TEXT NOT NULL)").ok());
    auto reader = Database::Open(path_.string(), SQLITE_OPEN_READONLY);
    ASSERT_TRUE(reader.ok());
    reader_ = std::move(*reader);
  }
  void TearDown() override {
    db_.reset();
    reader_.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_.string() + suffix);
  }
  Status Write(int x, const char* v) {
    Transaction tx(*db_);
    RETURN_IF_ERROR(tx.Begin());
    auto insert = db_->Prepare("INSERT INTO t VALUES (?1, ?2)");
    if (!insert.ok()) return insert.status();
    insert->Bind(1, x);
    if (v) insert->Bind(2, v);
    RETURN_IF_ERROR(insert->Run());
    return tx.Commit();
  }
  std::string Committed() {  // as another connection sees the table
    auto rows = reader_->Prepare("SELECT group_concat(x) FROM (SELECT x FROM t ORDER BY x)");
    EXPECT_TRUE(rows.ok());
    EXPECT_TRUE(*rows->Step());
    return rows->Text(0);
  }
  std::filesystem::path path_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Database> reader_;
};

TEST_F(GroupCommitTest, AGroupsWritesBecomeVisibleTogetherAndAFailedOneUndoesOnlyItself) {
  db_->OpenGroup();
  ASSERT_TRUE(Write(1, "a").ok());
  EXPECT_FALSE(Write(2, nullptr).ok());  // NOT NULL: this write alone is undone
  ASSERT_TRUE(Write(3, "c").ok());
  EXPECT_EQ(Committed(), "");            // nothing is visible before the group commits
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Committed(), "1,3");
  // Outside a group each write commits on its own.
  ASSERT_TRUE(Write(4, "d").ok());
  EXPECT_EQ(Committed(), "1,3,4");
  // A group with nothing written commits nothing and succeeds.
  db_->OpenGroup();
  EXPECT_TRUE(db_->CommitGroup().ok());
}

TEST_F(GroupCommitTest, AGroupSQLiteRolledBackKeepsNothingAndRefusesLaterWrites) {
  db_->OpenGroup();
  ASSERT_TRUE(Write(1, "a").ok());
  // What SQLite does by itself on a full disk or an I/O error: the whole transaction
  // is rolled back under the group.
  ASSERT_TRUE(db_->Exec("ROLLBACK").ok());
  Status after = Write(2, "b");
  EXPECT_FALSE(after.ok());  // it would otherwise commit on its own, outside the group
  EXPECT_NE(after.message().find("rolled back"), std::string::npos) << after.message();
  Status committed = db_->CommitGroup();
  EXPECT_FALSE(committed.ok());
  EXPECT_EQ(Committed(), "");
  // The next group starts afresh.
  db_->OpenGroup();
  ASSERT_TRUE(Write(5, "e").ok());
  ASSERT_TRUE(db_->CommitGroup().ok());
  EXPECT_EQ(Committed(), "5");
}

TEST_F(GroupCommitTest, AGroupThatCannotBeginFailsEachWriteAtOnceWithTheReason) {
  auto holder = Database::Open(path_.string(), SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE((*holder)->Exec("BEGIN IMMEDIATE").ok());  // another process holds the write lock
  db_->OpenGroup();
  Status first = Write(1, "a");
  EXPECT_FALSE(first.ok());
  EXPECT_NE(first.message().find("locked"), std::string::npos) << first.message();
  Status second = Write(2, "b");
  EXPECT_EQ(second.message(), first.message());  // no second busy wait
  EXPECT_TRUE(db_->CommitGroup().ok());           // nothing was written
  ASSERT_TRUE((*holder)->Exec("ROLLBACK").ok());
  ASSERT_TRUE(Write(3, "c").ok());
  EXPECT_EQ(Committed(), "3");
}

TEST_F(StoreTest, ProfiledOperatorsAreKeptAndComparedAcrossDtypesAndThreads) {
  // fp32 at 1 and 2 threads and int8 at 1 thread, profiled; the baseline is fp32 at 1.
  auto sweep = MakeSweep(R"({"name":"ops","placement":"any","matrix":{"model":"mlp","batch_size":8,
      "dtype":["fp32","int8"],"threads":[1,2],"profile":true},
      "exclude":[{"dtype":"int8","threads":2}]})");
  ASSERT_TRUE(store_->CreateSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 3u);
  // Per dtype and threads: the self time of aten::addmm over a block of 4 iterations.
  const std::map<std::pair<std::string, int>, double> addmm_us = {
      {{"fp32", 1}, 800}, {{"fp32", 2}, 500}, {{"int8", 1}, 40}};
  for (const QueuedJob& job : queued) {
    const json spec = json::parse(job.spec);
    EXPECT_EQ(spec["profile"], true);
    const std::string dtype = spec["dtype"];
    const int threads = spec["threads"];
    ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(8);
    result["dtype"] = dtype;
    result["threads"] = threads;
    result["profile_iterations"] = 4;
    result["op_profile"] = {{{"op", "aten::addmm"}, {"calls", 8}, {"self_us", addmm_us.at({dtype, threads})},
                             {"total_us", 900}, {"input_shapes", {{10}, {8, 32}, {32, 10}, json::array(), json::array()}}}};
    if (dtype == "int8") {
      result["op_profile"].push_back({{"op", "quantized::linear_dynamic"}, {"calls", 8}, {"self_us", 300},
                                      {"total_us", 320}, {"input_shapes", {{8, 32}, json::array()}}});
    }
    auto stored = Deliver(job.job_id, 1, result);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(*stored, ResultOutcome::kStored);
  }
  EXPECT_EQ(Count("select count(*) from op_profile"), 4);
  EXPECT_EQ(Count("select count(*) from results where detail like '%op_profile%'"), 0);
  auto shapes = Query("select input_shapes from op_profile where op = 'aten::addmm' limit 1", 1);
  ASSERT_TRUE(shapes.ok()) << shapes.status().ToString();
  EXPECT_EQ(shapes->rows[0][0], "[[10],[8,32],[32,10],[],[]]");
  auto rows = Query(
      "select dtype, threads, op, self_us_per_iter, self_us_per_call, base_threads, base_self_us_per_iter, "
      "speedup from op_comparison order by dtype, threads, op", 10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->rows.size(), 4u);
  const auto& r = rows->rows;
  EXPECT_EQ(r[0][0], "fp32");  // the baseline against itself
  EXPECT_DOUBLE_EQ(r[0][7].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r[1][3].get<double>(), 500.0 / 4);  // fp32, 2 threads
  EXPECT_DOUBLE_EQ(r[1][4].get<double>(), 500.0 / 8);
  EXPECT_EQ(r[1][5], 1);
  EXPECT_DOUBLE_EQ(r[1][7].get<double>(), 800.0 / 500);
  EXPECT_EQ(r[2][2], "aten::addmm");  // int8
  EXPECT_DOUBLE_EQ(r[2][7].get<double>(), 800.0 / 40);
  EXPECT_EQ(r[3][2], "quantized::linear_dynamic");  // not in the baseline
  EXPECT_TRUE(r[3][6].is_null());
  EXPECT_TRUE(r[3][7].is_null());
}

TEST_F(StoreTest, CheckpointingIsComparedWithTheSameTrainingJobWithoutIt) {
  auto sweep = MakeSweep(R"({"name":"ckpt","placement":"any","matrix":{"model":"cnn","mode":"train",
      "batch_size":4,"checkpointing":[false,true]}})");
  ASSERT_TRUE(store_->CreateSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 2u);
  for (const QueuedJob& job : queued) {
    const bool checkpointing = json::parse(job.spec)["checkpointing"];
    ASSERT_TRUE(store_->MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(4);
    result["model"] = "cnn";
    result["mode"] = "train";
    result["stats"]["median_ms"] = checkpointing ? 3.0 : 2.0;
    result["step_peak_alloc_mb"] = checkpointing ? 30.0 : 120.0;
    ASSERT_EQ(*Deliver(job.job_id, 1, result), ResultOutcome::kStored);
  }
  auto rows = Query("select plain_median_ms, checkpointed_median_ms, time_ratio, memory_ratio "
                    "from checkpointing_comparison", 10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows->rows[0][2].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(rows->rows[0][3].get<double>(), 0.25);
}

}  // namespace
}  // namespace benchfleet
