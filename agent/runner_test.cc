// The runner against the real benchfleet-worker: a job that completes, one that runs past
// its timeout, one whose worker crashes, and a missing worker binary.
#include "agent/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "common/clock.h"
#include "common/cpu_list.h"

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
    return {worker, dir_.string(), AllowedCpus()};
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
                  {"target_iqr", 0.05}}}};
    return job;
  }

  // Polls until the worker has ended; the deadline only guards against a hang.
  static nlohmann::json WaitForResult(WorkerRunner& runner) {
    MonoTime deadline = MonoNow() + std::chrono::seconds(120);
    while (MonoNow() < deadline) {
      if (auto result = runner.Poll()) return *result;
      usleep(10000);
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
    if (!execd) usleep(10000);
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

TEST(RunnerEnvironmentTest, ThreadsAndAffinityAreFixedBeforeExec) {
  WorkerRunner runner({"w", "d", {0, 1, 2, 3}});
  EXPECT_EQ(runner.CpusFor(1), (std::vector<int>{0}));
  EXPECT_EQ(runner.CpusFor(3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(runner.CpusFor(8), (std::vector<int>{0, 1, 2, 3}));  // oversubscribed: all
  setenv("OMP_NUM_THREADS", "99", 1);
  auto env = runner.WorkerEnvironment(2);
  unsetenv("OMP_NUM_THREADS");
  auto has = [&](const std::string& entry) {
    return std::find(env.begin(), env.end(), entry) != env.end();
  };
  EXPECT_TRUE(has("OMP_NUM_THREADS=2"));
  EXPECT_TRUE(has("OPENBLAS_NUM_THREADS=2"));
  EXPECT_TRUE(has("OMP_WAIT_POLICY=PASSIVE"));
  EXPECT_FALSE(has("OMP_NUM_THREADS=99"));
}

}  // namespace
}  // namespace benchfleet
