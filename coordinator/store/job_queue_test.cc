// JobQueue (coordinator/store/job_queue.h): sweeps stored whole or in slices, the queue, each
// hand-out's fence, requeues, cancels and the counts status shows.
#include "coordinator/store/store_fixture.h"

namespace benchfleet {
namespace {

TEST_F(StoreTest, SweepExpandsIntoJobsPerPinnedHost) {
  auto stored = StoreWholeSweep(MakeSweep(kTwoJobs), {{"cpu", {"node-a", "node-b"}}});
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
  auto accepted = store_->jobs().AcceptSweep(sweep, pinned, "cli-7");
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_EQ(accepted->jobs, 6);
  EXPECT_EQ(accepted->agents, (std::vector<std::string>{"node-a", "node-b"}));
  const int64_t id = accepted->sweep_id;
  auto status = [&] { return (*store_->jobs().SweepStatus(id, 1))[0]; };
  EXPECT_EQ(status().jobs.total, 6);
  EXPECT_EQ(status().jobs.storing, 6);
  // A resend finds it with every job it will have, and where they go.
  auto again = store_->jobs().FindSubmission("cli-7");
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->jobs, 6);
  EXPECT_EQ((*again)->agents, (std::vector<std::string>{"node-a", "node-b"}));
  // Combinations 0 and 1 (cpu, batch 1 and 2; the device axis turns slowest): 4 jobs.
  ASSERT_TRUE(*store_->jobs().StoreJobs(id, sweep, pinned, 0, 2));
  EXPECT_EQ(status().jobs.storing, 2);
  // A slice from the wrong place is refused and stores nothing.
  EXPECT_FALSE(*store_->jobs().StoreJobs(id, sweep, pinned, 0, 2));
  EXPECT_EQ(Count("select count(*) from jobs"), 4);
  auto unstored = store_->jobs().UnstoredSweeps();
  ASSERT_TRUE(unstored.ok());
  ASSERT_EQ(unstored->size(), 1u);
  EXPECT_EQ((*unstored)[0].next_combination, 2u);
  EXPECT_EQ((*unstored)[0].pinned, pinned);
  // The rest: cpu batch 3 (2 jobs), then the cuda combinations (none).
  ASSERT_TRUE(*store_->jobs().StoreJobs(id, sweep, pinned, 2, 100));
  EXPECT_EQ(status().jobs.storing, 0);
  EXPECT_EQ(status().jobs.total, 6);
  EXPECT_TRUE(store_->jobs().UnstoredSweeps()->empty());
  EXPECT_EQ(Count("select count(*) from jobs where sweep_id = " + std::to_string(id) +
                  " and json_extract(spec, '$.device') = 'cpu'"),
            6);

  // Every stored job of a sweep ended: not done while jobs are still to come.
  const Sweep three = MakeSweep(R"({"name": "t", "placement": "any",
                                     "matrix": {"model": "mlp", "batch_size": [1, 2, 3]}})");
  const int64_t any = store_->jobs().AcceptSweep(three, {})->sweep_id;
  auto run_queued = [&] {
    for (const auto& job : QueuedFor("node-a")) {
      ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
      ASSERT_TRUE(Deliver(job.job_id, 1, {{"ok", false}, {"error", "killed"}}).ok());
    }
  };
  ASSERT_TRUE(*store_->jobs().StoreJobs(any, three, {}, 0, 2));
  run_queued();
  EXPECT_EQ((*store_->jobs().SweepStatus(any, 1))[0].state, "running");
  ASSERT_TRUE(*store_->jobs().StoreJobs(any, three, {}, 2, 2));
  run_queued();
  EXPECT_EQ((*store_->jobs().SweepStatus(any, 1))[0].state, "done");

  // Cancelled while storing: no more jobs, and a total of what was stored.
  auto other = store_->jobs().AcceptSweep(sweep, {});
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(*store_->jobs().StoreJobs(other->sweep_id, sweep, {}, 0, 2));
  EXPECT_EQ(*store_->jobs().CancelSweep(other->sweep_id), 2);
  EXPECT_FALSE(*store_->jobs().StoreJobs(other->sweep_id, sweep, {}, 2, 2));
  const SweepJobCounts cancelled = (*store_->jobs().SweepStatus(other->sweep_id, 1))[0].jobs;
  EXPECT_EQ(cancelled.total, 2);
  EXPECT_EQ(cancelled.storing, 0);
}

TEST_F(StoreTest, SweepFinishesWhenEveryJobHasEnded) {
  auto sweep_id = StoreWholeSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  auto jobs = QueuedFor("node-a");
  for (const auto& job : jobs) {
    ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
    json failed = {{"ok", false}, {"error", "worker killed by signal 9"}};
    ASSERT_TRUE(Deliver(job.job_id, 1, failed).ok());
  }
  auto status = store_->jobs().SweepStatus(sweep_id, 1);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ((*status)[0].state, "done");
  EXPECT_EQ((*status)[0].jobs.failed, 2);
  EXPECT_EQ(Count("select count(*) from result_summary"), 0);  // failures are not summary rows
  EXPECT_EQ(Count("select count(*) from job_failures"), 2);
}

TEST_F(StoreTest, LostAttemptsRequeueUntilMaxAttemptsThenFail) {
  ASSERT_TRUE(StoreWholeSweep(MakeSweep(kTwoJobs), {}).ok());
  int64_t job = QueuedFor("node-a").front().job_id;
  ASSERT_EQ(*store_->jobs().MarkRunning(job, host_), 1);
  EXPECT_TRUE(*store_->jobs().RequeueOrFail(job, 1, 2, "agent went silent"));
  EXPECT_FALSE(*store_->jobs().RequeueOrFail(job, 1, 2, "again"));  // not running any more: no-op
  ASSERT_EQ(*store_->jobs().MarkRunning(job, host_), 2);
  EXPECT_FALSE(*store_->jobs().RequeueOrFail(job, 2, 2, "agent went silent"));
  auto failures = Query("select error from job_failures", 10);
  ASSERT_TRUE(failures.ok());
  ASSERT_EQ(failures->rows.size(), 1u);
  EXPECT_NE(failures->rows[0][0].get<std::string>().find("gave up after 2 attempts"),
            std::string::npos);
}

TEST_F(StoreTest, JobCountsFollowEveryStateChange) {
  // What status and the "sweep finished" check read, against a count of the jobs.
  auto agree = [&] {
    auto counted = Query(
        "SELECT group_concat(sweep_id || ':' || state || '=' || n) FROM (SELECT "
        "sweep_id, state, COUNT(*) AS n FROM jobs GROUP BY 1, 2 ORDER BY 1, 2)",
        10);
    auto kept = Query(
        "SELECT group_concat(sweep_id || ':' || state || '=' || n) FROM (SELECT "
        "sweep_id, state, SUM(n) AS n FROM job_counts GROUP BY 1, 2 HAVING SUM(n) > 0 "
        "ORDER BY 1, 2)",
        10);
    EXPECT_TRUE(counted.ok() && kept.ok());
    return counted->rows.at(0).at(0) == kept->rows.at(0).at(0)
               ? std::string()
               : counted->rows.at(0).at(0).dump() + " counted, " + kept->rows.at(0).at(0).dump() +
                     " kept";
  };
  auto first = StoreWholeSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  auto second = StoreWholeSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  EXPECT_EQ(agree(), "");
  std::vector<QueuedJob> queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 4u);
  const int64_t a = queued[0].job_id, b = queued[1].job_id;
  ASSERT_EQ(*store_->jobs().MarkRunning(a, host_), 1);
  ASSERT_EQ(*store_->jobs().MarkRunning(b, host_), 1);
  EXPECT_EQ(agree(), "");
  EXPECT_TRUE(*store_->jobs().UndoHandOut(b, 1));
  ASSERT_EQ(*store_->jobs().MarkRunning(b, host_), 1);
  EXPECT_TRUE(*store_->jobs().RequeueOrFail(b, 1, 3, "agent went silent"));
  EXPECT_EQ(agree(), "");
  json result = GoodResult(1);
  EXPECT_EQ(*Deliver(a, 1, result), ResultOutcome::kStored);
  EXPECT_EQ(agree(), "");
  EXPECT_EQ(*store_->jobs().CancelSweep(second), 2);
  EXPECT_EQ(agree(), "");
  auto status = store_->jobs().SweepStatus(std::nullopt, 20);
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(status->size(), 2u);
  EXPECT_EQ((*status)[0].sweep_id, second);
  EXPECT_EQ((*status)[0].jobs.ToJson(),
            json::parse(R"({"total": 2, "queued": 0, "running": 0, "done": 0,
                                                  "failed": 0, "cancelled": 2, "storing": 0})"));
  EXPECT_EQ((*status)[1].sweep_id, first);
  EXPECT_EQ((*status)[1].jobs.ToJson(),
            json::parse(R"({"total": 2, "queued": 1, "running": 0, "done": 1,
                                                  "failed": 0, "cancelled": 0, "storing": 0})"));
  // A change by hand (a user's sqlite3 shell) keeps them true as well.
  auto db = Database::Open(path_, SQLITE_OPEN_READWRITE);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("UPDATE jobs SET state = 'cancelled' WHERE state = 'queued'").ok());
  EXPECT_EQ(agree(), "");
}

TEST_F(StoreTest, CancelDropsQueuedJobs) {
  auto sweep_id = StoreWholeSweep(MakeSweep(kTwoJobs), {})->sweep_id;
  EXPECT_EQ(*store_->jobs().CancelSweep(sweep_id), 2);
  EXPECT_TRUE(QueuedFor("node-a").empty());
  EXPECT_EQ(store_->jobs().CancelSweep(999).status().code(), StatusCode::kNotFound);
}

TEST_F(StoreTest, ASubmissionIsStoredOnceHoweverOftenItIsSent) {
  auto first = StoreWholeSweep(MakeSweep(kTwoJobs), {}, "cli-123");
  auto again = StoreWholeSweep(MakeSweep(kTwoJobs), {}, "cli-123");
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_FALSE(first->existing);
  EXPECT_TRUE(again->existing);
  EXPECT_EQ(first->sweep_id, again->sweep_id);
  EXPECT_EQ(again->jobs, 2);
  EXPECT_EQ(Count("select count(*) from sweeps"), 1);
  EXPECT_EQ(Count("select count(*) from jobs"), 2);
  EXPECT_FALSE(StoreWholeSweep(MakeSweep(kTwoJobs), {}, "cli-456")->existing);
}

TEST_F(StoreTest, AnUndoneHandOutCostsNoAttempt) {
  ASSERT_TRUE(StoreWholeSweep(MakeSweep(kTwoJobs), {}).ok());
  int64_t job = QueuedFor("node-a").front().job_id;
  ASSERT_EQ(*store_->jobs().MarkRunning(job, host_), 1);
  EXPECT_TRUE(*store_->jobs().UndoHandOut(job, 1));
  EXPECT_FALSE(*store_->jobs().UndoHandOut(job, 1));  // already queued again
  EXPECT_EQ(*store_->jobs().MarkRunning(job, host_), 1);
}

}  // namespace
}  // namespace benchfleet
