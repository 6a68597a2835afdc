// ResultWriter (coordinator/store/result_writer.h): a result stored once, duplicates and stale
// results, the sweep's end within a group, and the series it joins.
#include "coordinator/store/store_fixture.h"

namespace benchfleet {
namespace {

TEST(SeriesKeyTest, IsTheFirstSixtyBitsOfTheSeriesHex) {
  const std::string series = Sha256Hex("a fingerprint\n{}");
  EXPECT_EQ(SeriesKeyOf(series), std::stoll(series.substr(0, 15), nullptr, 16));
  EXPECT_EQ(SeriesKeyOf("0123456789abcdef0123"), 0x0123456789abcdeLL);
  EXPECT_EQ(SeriesKeyOf("fffffffffffffff"), (int64_t{1} << 60) - 1);
  EXPECT_EQ(SeriesKeyOf("0123"), std::nullopt);                  // too short
  EXPECT_EQ(SeriesKeyOf("0123456789ABCDEF0123"), std::nullopt);  // SeriesOf writes lower case only
}

TEST_F(StoreTest, ResultIsStoredOnceThenDuplicateThenStale) {
  ASSERT_TRUE(StoreWholeSweep(MakeSweep(kTwoJobs), {}).ok());
  auto queued = QueuedFor("node-a");
  int64_t job = queued[0].job_id;
  auto attempt = store_->jobs().MarkRunning(job, host_);
  ASSERT_TRUE(attempt.ok());
  EXPECT_EQ(*attempt, 1);
  EXPECT_FALSE(store_->jobs().MarkRunning(job, host_).ok());  // no longer queued

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

TEST_F(StoreTest, InAGroupASweepEndsWithTheCommitThatKeepsItsLastResultOrNotAtAll) {
  auto sweep_id = StoreWholeSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  auto jobs = QueuedFor("node-a");
  for (const auto& job : jobs) ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
  auto state = [&] { return (*store_->jobs().SweepStatus(sweep_id, 1))[0].state; };
  // A sweep that cannot be marked done (another process's trigger, standing in for a
  // write that fails): its last result must not be kept without it.
  {
    auto other = Database::Open(path_, SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE((*other)
                    ->Exec("CREATE TRIGGER no_end BEFORE UPDATE OF state ON sweeps "
                           "BEGIN SELECT RAISE(ABORT, 'cannot end sweeps'); END")
                    .ok());
  }
  store_->OpenGroup();
  for (const auto& job : jobs) {
    ASSERT_EQ(*Deliver(job.job_id, 1, GoodResult(json::parse(job.spec)["batch_size"].get<int>())),
              ResultOutcome::kStored);
  }
  EXPECT_EQ(state(), "running");  // judged once, at the group's commit
  Status committed = store_->CommitGroup();
  EXPECT_FALSE(committed.ok());
  EXPECT_NE(committed.message().find("cannot end sweeps"), std::string::npos)
      << committed.message();
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

TEST_F(StoreTest, AResultCannotChangeItsJobsConfiguration) {
  ASSERT_TRUE(StoreWholeSweep(MakeSweep(kTwoJobs), {}).ok());
  int64_t job = QueuedFor("node-a").front().job_id;  // mlp, batch 1
  ASSERT_TRUE(store_->jobs().MarkRunning(job, host_).ok());
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
  for (const char* key : {"device", "model", "mode", "dtype", "batch_size", "threads"})
    bare.erase(key);
  EXPECT_EQ(*Deliver(job, 1, bare), ResultOutcome::kStored);
  auto row = Query("select model, batch_size, threads, median_ms from result_summary", 10);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->rows.at(0), json::parse(R"(["mlp", 1, 1, 2.0])"));
}

}  // namespace
}  // namespace benchfleet
