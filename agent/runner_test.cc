// The runner against the real benchfleet-worker: a job that completes, one that runs past
// its timeout, one whose worker crashes, and a missing worker binary.
#include "agent/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/clock.h"
#include "common/cpu_list.h"
#include "common/limits.h"

namespace benchfleet {
namespace {

#ifdef BENCHFLEET_WORKER_BIN
const char* kWorker = BENCHFLEET_WORKER_BIN;
#else
const char* kWorker = "";
#endif

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(kWorker).empty()) {
      GTEST_SKIP() << "built without the worker (BENCHFLEET_BUILD_WORKER=OFF): nothing to run";
    }
    dir_ = std::filesystem::temp_directory_path() /
           ("bf-runner-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RunnerOptions Options(const std::string& worker = kWorker) {
    return {worker, dir_.string(), AllowedCpus(), (dir_ / "packages").string()};
  }

  static WorkerJob Job(double timeout_s, double max_time_s) {
    WorkerJob job;
    job.job_id = 5;
    job.attempt = 1;
    job.timeout_s = timeout_s;
    job.spec = {{"model", "mlp"},
                {"model_args", {{"layers", {64, 64, 10}}}},
                {"mode", "inference"},
                {"dtype", "fp32"},
                {"device", "cpu"},
                {"batch_size", 4},
                {"threads", 1},
                {"seed", 0},
                {"timing",
                 {{"warmup_s", 0.02},
                  {"min_time_s", max_time_s},
                  {"max_time_s", max_time_s},
                  {"target_ci", 0.01}}}};
    return job;
  }

  // Polls until the worker has ended; the deadline only guards against a hang.
  static nlohmann::json WaitForResult(WorkerRunner& runner) {
    MonoTime deadline = MonoNow() + std::chrono::seconds(120);
    while (MonoNow() < deadline) {
      if (auto result = runner.Poll()) return *result;
      usleep(10000);  // polls a real worker process; the deadline guards a hang
    }
    ADD_FAILURE() << "worker did not end within 120 s";
    runner.Kill();
    return {};
  }

  std::filesystem::path dir_;
};

TEST_F(RunnerTest, CompletedJobCarriesPeakMemoryFromWait4) {
  WorkerRunner runner(Options());
  ASSERT_TRUE(runner.Start(Job(60, 0.1)).ok());
  EXPECT_FALSE(runner.Start(Job(60, 0.1)).ok());  // one job at a time
  auto result = WaitForResult(runner);
  ASSERT_EQ(result.value("ok", false), true) << result.dump();
  EXPECT_EQ(result["job_id"], 5);
  EXPECT_GT(result["peak_rss_mb"].get<double>(), 10.0);
  EXPECT_GT(result["worker_wall_s"].get<double>(), 0.1);
  EXPECT_EQ(result["exit"], "exited with code 0");
  EXPECT_FALSE(runner.busy());
}

TEST_F(RunnerTest, JobPastItsTimeoutIsKilledAndReported) {
  WorkerRunner runner(Options());
  ASSERT_TRUE(runner.Start(Job(1.0, 30)).ok());
  auto result = WaitForResult(runner);
  EXPECT_EQ(result.value("ok", true), false);
  EXPECT_NE(result["error"].get<std::string>().find("timed out"), std::string::npos)
      << result.dump();
  EXPECT_EQ(result["model"], "mlp");  // a failure still names its configuration
}

TEST_F(RunnerTest, CrashedWorkerBecomesAFailedResultWithTheSignal) {
  WorkerRunner runner(Options());
  ASSERT_TRUE(runner.Start(Job(60, 30)).ok());
  // Wait until the child has exec'd the worker, then crash it.
  pid_t pid = runner.pid();
  MonoTime deadline = MonoNow() + std::chrono::seconds(30);
  bool execd = false;
  while (MonoNow() < deadline && !execd) {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    execd = !ec && exe.filename() == "benchfleet-worker";
    if (!execd) usleep(10000);  // until the forked child has exec'd the worker
  }
  ASSERT_TRUE(execd);
  pid_t group = pid;
  kill(group, SIGSEGV);
  auto result = WaitForResult(runner);
  EXPECT_EQ(result.value("ok", true), false);
  EXPECT_NE(result["error"].get<std::string>().find("signal 11"), std::string::npos)
      << result.dump();
}

TEST_F(RunnerTest, MissingWorkerBinaryIsAFailedResult) {
  WorkerRunner runner(Options("/nonexistent/benchfleet-worker"));
  ASSERT_TRUE(runner.Start(Job(60, 0.1)).ok());
  auto result = WaitForResult(runner);
  EXPECT_EQ(result.value("ok", true), false);
  EXPECT_NE(result["error"].get<std::string>().find("exited with code 127"), std::string::npos);
  EXPECT_NE(result["stderr_tail"].get<std::string>().find("exec of the worker failed"),
            std::string::npos);
}

// A job of several ranks that names no distributed object runs as a gang on this
// runner: one worker per rank.
WorkerJob GangJob(const nlohmann::json& spec, double timeout_s = 120) {
  WorkerJob job;
  job.job_id = 9;
  job.attempt = 1;
  job.timeout_s = timeout_s;
  job.spec = spec;
  job.needs = NeedsOfJobJson(spec).value();  // as the offer carries them
  return job;
}

bool ProcessGone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

TEST_F(RunnerTest, ALocalGangRunsEachRankOnItsOwnCpusAndReportsEveryRank) {
  if (AllowedCpus().size() < 2)
    GTEST_SKIP() << "a gang of 2 one-thread ranks needs 2 CPUs; this host allows "
                 << AllowedCpus().size();
  WorkerRunner runner(Options());
  const WorkerJob job = GangJob(
      {{"model", "allreduce"},
       {"model_args", {{"bytes", 65536}}},
       {"mode", "inference"},
       {"dtype", "fp32"},
       {"device", "cpu"},
       {"batch_size", 1},
       {"threads", 1},
       {"seed", 0},
       {"parallel", {{"kind", "collective"}, {"world_size", 2}}},
       {"timing",
        {{"warmup_s", 0.02}, {"min_time_s", 0.1}, {"max_time_s", 0.3}, {"target_ci", 0.01}}}});
  EXPECT_EQ(LocalRanks(job), 2);
  ASSERT_TRUE(runner.Start(job).ok());
  const std::vector<pid_t> pids = runner.pids();
  ASSERT_EQ(pids.size(), 2u);
  auto result = WaitForResult(runner);
  ASSERT_EQ(result.value("ok", false), true) << result.dump();
  ASSERT_EQ(result["ranks"].size(), 2u) << result.dump();
  for (int rank = 0; rank < 2; ++rank) {
    const auto& entry = result["ranks"][rank];
    EXPECT_EQ(entry["ok"], true);
    EXPECT_EQ(entry["distributed"]["rank"], rank);
    EXPECT_EQ(entry["distributed"]["address"], "127.0.0.1");  // never leaves the host
    EXPECT_EQ(entry["distributed"]["store"], result["ranks"][0]["distributed"]["store"]);
    EXPECT_GT(entry["collective"]["busbw_gbps"].get<double>(), 0) << entry.dump();
    EXPECT_FALSE(entry.contains("samples_ms"));
    EXPECT_TRUE(ProcessGone(pids[rank]));
  }
  EXPECT_EQ(result["distributed"]["rank"], 0);  // the row is rank 0's
  EXPECT_FALSE(result["samples_ms"].empty());
}

TEST_F(RunnerTest, ARankKilledStopsItsGangAtOnceWithTheReasonAndNoProcessLeft) {
  if (AllowedCpus().size() < 2)
    GTEST_SKIP() << "a gang of 2 one-thread ranks needs 2 CPUs; this host allows "
                 << AllowedCpus().size();
  WorkerRunner runner(Options());
  // Long enough that rank 1 is killed while the ranks still work together.
  ASSERT_TRUE(
      runner
          .Start(GangJob(
              {{"model", "allreduce"},
               {"model_args", {{"bytes", 1048576}}},
               {"mode", "inference"},
               {"dtype", "fp32"},
               {"device", "cpu"},
               {"batch_size", 1},
               {"threads", 1},
               {"seed", 0},
               {"parallel", {{"kind", "collective"}, {"world_size", 2}}},
               {"timing",
                {{"warmup_s", 30}, {"min_time_s", 30}, {"max_time_s", 60}, {"target_ci", 0.01}}}}))
          .ok());
  const std::vector<pid_t> pids = runner.pids();
  ASSERT_EQ(pids.size(), 2u);
  // Mid-job: once rank 1's log says the gang formed, the ranks work together.
  const std::string log = (dir_ / "job-9-1" / "rank-1" / "worker.log").string();
  MonoTime deadline = MonoNow() + std::chrono::seconds(60);
  bool met = false;
  while (MonoNow() < deadline && !met) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    met = text.str().find("met the others") != std::string::npos;
    if (!met) usleep(10000);  // until the real ranks have met (their log says so)
  }
  ASSERT_TRUE(met) << "rank 1 never met rank 0";
  EXPECT_FALSE(runner.Poll()) << "the gang ended before its rank was killed";
  kill(pids[1], SIGKILL);
  const MonoTime killed = MonoNow();
  auto result = WaitForResult(runner);
  const double stop_s = std::chrono::duration<double>(MonoNow() - killed).count();
  EXPECT_EQ(result.value("ok", true), false);
  const std::string error = result.value("error", std::string());
  EXPECT_NE(error.find("rank 1 of 2: worker killed by signal 9"), std::string::npos) << error;
  EXPECT_NE(error.find("the gang was stopped"), std::string::npos) << error;
  ASSERT_EQ(result["ranks"].size(), 2u);
  EXPECT_NE(result["ranks"][0]["error"].get<std::string>().find("stopped: rank 1"),
            std::string::npos)
      << result["ranks"][0].dump();
  // Rank 0 was not left waiting for its peer until the 60 s timeout.
  EXPECT_LT(stop_s, kHeartbeatIntervalMs * kHeartbeatLiveness / 1000.0)
      << "stopping the gang took " << stop_s << " s";
  for (pid_t pid : pids) EXPECT_TRUE(ProcessGone(pid)) << "worker " << pid << " left behind";
  EXPECT_FALSE(runner.busy());
}

TEST_F(RunnerTest, AGangLargerThanTheAgentsCpusIsRefusedBeforeAnyRankStarts) {
  WorkerRunner runner({kWorker, dir_.string(), {0}, ""});
  const Status started =
      runner.Start(GangJob({{"model", "allreduce"},
                            {"mode", "inference"},
                            {"dtype", "fp32"},
                            {"device", "cpu"},
                            {"batch_size", 1},
                            {"threads", 1},
                            {"parallel", {{"kind", "collective"}, {"world_size", 2}}}}));
  EXPECT_FALSE(started.ok());
  EXPECT_NE(started.message().find("needs 2 CPUs"), std::string::npos) << started.message();
  EXPECT_FALSE(runner.busy());
}

TEST_F(RunnerTest, ReplicasRunTogetherOnDisjointCpusAndAddUpTheirThroughput) {
  if (AllowedCpus().size() < 2)
    GTEST_SKIP() << "2 one-thread replicas need 2 CPUs; this host allows " << AllowedCpus().size();
  WorkerRunner runner(Options());
  WorkerJob job = Job(120, 0.3);
  job.spec["replicas"] = 2;
  job.needs = NeedsOfJobJson(job.spec).value();
  EXPECT_EQ(LocalRanks(job), 2);
  EXPECT_TRUE(IsReplicated(job));
  EXPECT_NE(runner.CpusFor(1, 0), runner.CpusFor(1, 1));
  ASSERT_TRUE(runner.Start(job).ok());
  const std::vector<pid_t> pids = runner.pids();
  ASSERT_EQ(pids.size(), 2u);
  const auto result = WaitForResult(runner);
  ASSERT_EQ(result.value("ok", false), true) << result.dump();
  ASSERT_EQ(result["ranks"].size(), 2u) << result.dump();
  double sum = 0;
  for (int r = 0; r < 2; ++r) {
    const auto& entry = result["ranks"][r];
    EXPECT_EQ(entry["ok"], true);
    EXPECT_EQ(entry["distributed"]["rank"], r);  // its row of result_ranks
    EXPECT_EQ(entry["replica"]["index"], r);
    EXPECT_GT(entry["stats"]["median_ms"].get<double>(), 0);
    sum += entry["replica"]["throughput_per_s"].get<double>();
    EXPECT_TRUE(ProcessGone(pids[r]));
  }
  const auto& replicas = result["replicas"];
  EXPECT_EQ(replicas["count"], 2);
  EXPECT_NEAR(replicas["aggregate_throughput_per_s"].get<double>(), sum, 1e-9 * sum);
  // They met before timing: each timed while the other ran, so their windows overlap.
  EXPECT_GT(replicas["overlap_s"].get<double>(), 0) << result.dump();
  EXPECT_LE(replicas["median_ms_min"].get<double>(), replicas["median_ms_max"].get<double>());
  EXPECT_FALSE(result.contains("distributed"));  // no c10d: independent copies
}

TEST(ReplicaSummaryTest, SumsTheCopiesAndFindsTheirCommonWindow) {
  auto copy = [](double from, double to, double rate, double median) {
    return nlohmann::json{
        {"stats", {{"median_ms", median}}},
        {"replica", {{"timed_from_s", from}, {"timed_to_s", to}, {"throughput_per_s", rate}}}};
  };
  const nlohmann::json summary =
      SummarizeReplicas({copy(10.0, 15.0, 100, 2.0), copy(10.5, 14.0, 50, 4.0)});
  EXPECT_EQ(summary["count"], 2);
  EXPECT_EQ(summary["aggregate_throughput_per_s"], 150.0);
  EXPECT_EQ(summary["overlap_s"], 3.5);
  EXPECT_EQ(summary["median_ms_min"], 2.0);
  EXPECT_EQ(summary["median_ms_max"], 4.0);
  // Windows that never met overlap for 0 s; a copy without its figures makes no summary.
  EXPECT_EQ(SummarizeReplicas({copy(0, 1, 1, 1), copy(2, 3, 1, 1)})["overlap_s"], 0.0);
  EXPECT_TRUE(SummarizeReplicas({copy(0, 1, 1, 1), {{"ok", true}}}).is_null());
}

TEST_F(RunnerTest, ReplicasNeedACpuPerThreadOfEveryCopy) {
  WorkerRunner runner({kWorker, dir_.string(), {0}, ""});
  WorkerJob job = Job(120, 0.1);
  job.spec["replicas"] = 2;
  job.needs = NeedsOfJobJson(job.spec).value();
  const Status started = runner.Start(job);
  EXPECT_FALSE(started.ok());
  EXPECT_NE(started.message().find("a job of 2 replicas of 1 threads needs 2 CPUs"),
            std::string::npos)
      << started.message();
  EXPECT_FALSE(runner.busy());
}

TEST(RunnerEnvironmentTest, ThreadsAndAffinityAreFixedBeforeExec) {
  WorkerRunner runner({"w", "d", {0, 1, 2, 3}, ""});
  EXPECT_EQ(runner.CpusFor(1), (std::vector<int>{0}));
  EXPECT_EQ(runner.CpusFor(3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(runner.CpusFor(8), (std::vector<int>{0, 1, 2, 3}));  // oversubscribed: all
  // Rank r of a gang on this agent: the r-th slice.
  EXPECT_EQ(runner.CpusFor(2, 1), (std::vector<int>{2, 3}));
  EXPECT_EQ(runner.CpusFor(1, 3), (std::vector<int>{3}));
  setenv("OMP_NUM_THREADS", "99", 1);
  setenv("OMP_WAIT_POLICY", "ACTIVE", 1);  // the agent's own: never the job's
  auto env = runner.WorkerEnvironment(2, "default");
  const auto passive = runner.WorkerEnvironment(1, "passive");
  const auto active = runner.WorkerEnvironment(1, "active");
  unsetenv("OMP_NUM_THREADS");
  unsetenv("OMP_WAIT_POLICY");
  auto has = [](const std::vector<std::string>& in, const std::string& entry) {
    return std::find(in.begin(), in.end(), entry) != in.end();
  };
  EXPECT_TRUE(has(env, "OMP_NUM_THREADS=2"));
  EXPECT_TRUE(has(env, "OPENBLAS_NUM_THREADS=2"));
  EXPECT_FALSE(has(env, "OMP_NUM_THREADS=99"));
  // By default the runtime's own wait policy: the variable is not set at all.
  EXPECT_TRUE(std::none_of(env.begin(), env.end(), [](const std::string& e) {
    return e.rfind("OMP_WAIT_POLICY=", 0) == 0;
  }));
  EXPECT_TRUE(has(passive, "OMP_WAIT_POLICY=PASSIVE"));
  EXPECT_TRUE(has(active, "OMP_WAIT_POLICY=ACTIVE"));
  EXPECT_FALSE(has(passive, "OMP_WAIT_POLICY=ACTIVE"));
}

}  // namespace
}  // namespace benchfleet
