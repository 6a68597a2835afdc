// Jobs of several ranks scheduled by the coordinator, end to end: a sweep names
// `parallel`, one agent runs the ranks as a gang of worker processes (disjoint CPUs, c10d
// over loopback), and the figures land in results, result_ranks and parallel_scaling.
// Then a rank's worker is killed mid-job: the gang stops at once, the job fails with the
// reason, and no worker is left.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/cpu_list.h"
#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const json kTiming = {
    {"warmup_s", 0.05}, {"min_time_s", 0.2}, {"max_time_s", 0.5}, {"target_ci", 0.1}};

// The pids of benchfleet-worker processes whose command line names `needle`.
std::vector<pid_t> WorkersNaming(const std::string& needle) {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(atoi(entry->d_name));
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::stringstream text;
    text << in.rdbuf();
    std::string cmdline = text.str();
    // The program is the worker (an agent's command line names the worker too).
    const std::string program = cmdline.substr(0, cmdline.find('\0'));
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (program.size() >= 17 &&
        program.compare(program.size() - 17, 17, "benchfleet-worker") == 0 &&
        cmdline.find(needle) != std::string::npos) {
      pids.push_back(pid);
    }
  }
  closedir(proc);
  return pids;
}

class GangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (AllowedCpus().size() < 2) {
      GTEST_SKIP() << "a gang of 2 one-thread ranks on one agent needs 2 CPUs; this host allows "
                   << AllowedCpus().size();
    }
    FleetOptions options;
    options.heartbeat_ms = 1000;
    options.liveness = 3;
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_TRUE(fleet_->StartCoordinator());
    ASSERT_TRUE(fleet_->StartAgent("gang"));
    ASSERT_TRUE(fleet_->WaitForAgents(1, 60s)) << fleet_->Logs();
  }
  void TearDown() override {
    if (HasFailure() && fleet_) std::cerr << fleet_->Logs();
  }
  json Rows(const std::string& sql) { return QueryRows(fleet_->db_path(), sql); }
  std::unique_ptr<Fleet> fleet_;
};

TEST_F(GangTest, DataParallelPipelineAndAllReduceSweepsRunAsGangsAndFillParallelScaling) {
  const json data = {
      {"name", "dp"},
      {"placement", "any"},
      {"matrix",
       {{"model", "transformer"},
        {"mode", "train"},
        {"batch_size", 8},
        {"parallel", {{"kind", "data"}, {"world_size", 2}}}}},
      {"models",
       {{"transformer",
         {{"hidden", 32}, {"heads", 4}, {"layers", 2}, {"ffn", 64}, {"seq_len", 16}}}}},
      {"timing", kTiming}};
  const json pipeline = {
      {"name", "pipe"},
      {"placement", "any"},
      {"matrix",
       {{"model", "transformer"},
        {"mode", "train"},
        {"batch_size", 8},
        {"parallel", {{"kind", "pipeline"}, {"stages", 2}, {"micro_batches", 4}}}}},
      {"models",
       {{"transformer",
         {{"hidden", 32}, {"heads", 4}, {"layers", 2}, {"ffn", 64}, {"seq_len", 16}}}}},
      {"timing", kTiming}};
  const json allreduce = {{"name", "allreduce sizes"},
                          {"placement", "any"},
                          {"matrix",
                           {{"model", "allreduce"},
                            {"batch_size", 1},
                            {"bytes", {1024, 65536, 1048576}},
                            {"parallel", {{"kind", "collective"}, {"world_size", 2}}}}},
                          {"timing", kTiming}};
  std::vector<int64_t> sweeps;
  for (const json& sweep : {data, pipeline, allreduce}) {
    std::string error;
    sweeps.push_back(fleet_->Submit(sweep, &error));
    ASSERT_GT(sweeps.back(), 0) << error;
  }
  for (int64_t id : sweeps) ASSERT_TRUE(fleet_->WaitForSweep(id, 300s).is_object());
  const json failures = Rows("select job_id, error from jobs where state != 'done'");
  ASSERT_TRUE(failures.empty()) << failures.dump(1);

  // The correctness checks passed (a failed check fails the job) and say so.
  EXPECT_EQ(
      QueryValue(fleet_->db_path(),
                 "select json_extract(detail, '$.parallel.check.ranks_identical') from results "
                 "where sweep_id = " +
                     std::to_string(sweeps[0])),
      1);
  EXPECT_EQ(QueryValue(fleet_->db_path(),
                       "select json_extract(detail, '$.parallel.check.compared') from results "
                       "where sweep_id = " +
                           std::to_string(sweeps[1])),
            "outputs and gradients");

  const json rows = Rows("select * from parallel_scaling order by sweep_id, bytes");
  ASSERT_EQ(rows.size(), 5u) << rows.dump(1);
  const json& dp = rows[0];
  EXPECT_EQ(dp["kind"], "data");
  EXPECT_EQ(dp["world_size"], 2);
  EXPECT_EQ(dp["host_set"], "gang");
  for (const char* column : {"samples_per_s", "scaling_efficiency", "comm_share", "busbw_gbps"}) {
    EXPECT_TRUE(dp[column].is_number() && dp[column].get<double>() > 0)
        << column << ": " << dp.dump();
  }
  const json& pipe = rows[1];
  EXPECT_EQ(pipe["kind"], "pipeline");
  EXPECT_TRUE(pipe["bubble"].is_number()) << pipe.dump();
  EXPECT_DOUBLE_EQ(pipe["bubble_theory"].get<double>(), 1.0 / 5.0);  // (S-1)/(M+S-1)
  EXPECT_GT(pipe["bytes_between_stages"].get<double>(), 0);
  for (size_t i = 2; i < 5; ++i) {
    EXPECT_EQ(rows[i]["kind"], "collective");
    EXPECT_EQ(rows[i]["bytes"], (std::vector<int64_t>{1024, 65536, 1048576}[i - 2]));
    EXPECT_GT(rows[i]["busbw_gbps"].get<double>(), 0) << rows[i].dump();
  }

  // Every rank's own figures, one row each, with the address it used.
  const json ranks = Rows(
      "select job_id, rank, ok, address, median_ms, comm_share, stage_busy_ms "
      "from result_ranks order by job_id, rank");
  ASSERT_EQ(ranks.size(), 10u) << ranks.dump(1);
  for (const json& rank : ranks) {
    EXPECT_EQ(rank["ok"], 1);
    EXPECT_EQ(rank["address"], "127.0.0.1");
    EXPECT_GT(rank["median_ms"].get<double>(), 0);
  }
  EXPECT_TRUE(ranks[0]["comm_share"].is_number()) << ranks[0].dump();     // data-parallel
  EXPECT_TRUE(ranks[3]["stage_busy_ms"].is_number()) << ranks[3].dump();  // pipeline stage 1

  // The CLI's view shows the same rows.
  std::string out, err;
  ASSERT_EQ(RunCommand({kCliBin, "--coordinator", fleet_->clients_endpoint(), "results", "--view",
                        "parallel"},
                       &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("scaling_efficiency"), std::string::npos) << out;
  EXPECT_NE(out.find("pipeline"), std::string::npos) << out;
  EXPECT_NE(out.find("1048576"), std::string::npos) << out;
}

TEST_F(GangTest, ARankKilledMidJobStopsTheGangWithinTheLivenessWindowAndLeavesNoWorker) {
  // Long enough that the kill comes while the ranks work together.
  const json sweep = {{"name", "killed rank"},
                      {"placement", "any"},
                      {"matrix",
                       {{"model", "allreduce"},
                        {"batch_size", 1},
                        {"bytes", 1048576},
                        {"parallel", {{"kind", "collective"}, {"world_size", 2}}}}},
                      {"timing", {{"warmup_s", 60}, {"min_time_s", 60}, {"max_time_s", 60}}},
                      {"timeout_s", 600}};
  std::string error;
  const int64_t id = fleet_->Submit(sweep, &error);
  ASSERT_GT(id, 0) << error;
  const std::string rank1 = "rank-1/job.json";
  std::vector<pid_t> killed;
  // Mid-job: both ranks have met (rank 1's log says so).
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto pids = WorkersNaming(fleet_->dir("agent-gang/") + "jobs/" + "job-" +
                                        std::to_string(1) + "-1/" + rank1);
        if (pids.size() != 1) return false;
        const std::string log = fleet_->dir("agent-gang/") + "jobs/job-1-1/rank-1/worker.log";
        if (ReadFile(log).find("met the others") == std::string::npos) return false;
        killed = pids;
        return true;
      },
      120s))
      << fleet_->Logs();
  const std::string ours = fleet_->dir("agent-");  // this fleet's workers only
  const auto all_ranks = WorkersNaming(ours);
  EXPECT_EQ(all_ranks.size(), 2u);
  ASSERT_EQ(kill(killed[0], SIGKILL), 0);
  const auto at_kill = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor(
      [&] {
        return QueryValue(fleet_->db_path(), "select state from jobs where sweep_id = " +
                                                 std::to_string(id)) == "failed";
      },
      60s));
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - at_kill).count();
  EXPECT_LT(stop_s, 3.0) << "the liveness window is 3 s (heartbeat 1 s x 3)";
  const std::string reason = QueryValue(
      fleet_->db_path(), "select error from jobs where sweep_id = " + std::to_string(id));
  EXPECT_NE(reason.find("rank 1 of 2: worker killed by signal 9"), std::string::npos) << reason;
  EXPECT_NE(reason.find("the gang was stopped"), std::string::npos) << reason;
  EXPECT_TRUE(WorkersNaming(ours).empty()) << "a rank's worker outlived its gang";
  for (pid_t pid : all_ranks) EXPECT_NE(kill(pid, 0), 0) << "worker " << pid << " still exists";
  // The agent keeps serving: a short job after it runs.
  const json after = {{"name", "after"},
                      {"placement", "any"},
                      {"matrix",
                       {{"model", "allreduce"},
                        {"batch_size", 1},
                        {"bytes", 1024},
                        {"parallel", {{"kind", "collective"}, {"world_size", 2}}}}},
                      {"timing", kTiming}};
  const int64_t next = fleet_->Submit(after, &error);
  ASSERT_GT(next, 0) << error;
  ASSERT_TRUE(fleet_->WaitForSweep(next, 120s).is_object());
  EXPECT_EQ(QueryValue(fleet_->db_path(),
                       "select state from jobs where sweep_id = " + std::to_string(next)),
            "done");
}

TEST_F(GangTest, ASpreadGangPutsEachRankOnItsOwnAgentAndMeetsAtRankZerosStore) {
  // Two more agents, one CPU each, so that each rank has its own.
  ASSERT_TRUE(fleet_->StartAgent("left", {"--cpus", "0"}));
  ASSERT_TRUE(fleet_->StartAgent("right", {"--cpus", "1"}));
  ASSERT_TRUE(fleet_->WaitForAgents(3, 60s)) << fleet_->Logs();
  const json sweep = {{"name", "spread dp"},
                      {"placement", "spread"},
                      {"select", {{"name", {"left", "right"}}}},
                      {"matrix",
                       {{"model", "mlp"},
                        {"mode", "train"},
                        {"batch_size", 16},
                        {"parallel", {{"kind", "data"}, {"world_size", 2}}}}},
                      {"models", {{"mlp", {{"layers", {64, 128, 10}}}}}},
                      {"timing", kTiming}};
  std::string error;
  const int64_t id = fleet_->Submit(sweep, &error);
  ASSERT_GT(id, 0) << error;
  ASSERT_TRUE(fleet_->WaitForSweep(id, 300s).is_object());
  const json job = Rows("select state, error from jobs where sweep_id = " + std::to_string(id));
  ASSERT_EQ(job.at(0)["state"], "done") << job.dump();
  const json ranks = Rows(
      "select rr.rank, h.name as host, rr.store, rr.address, rr.ok from result_ranks rr "
      "join hosts h on h.host_id = rr.host_id join jobs j on j.job_id = rr.job_id "
      "where j.sweep_id = " +
      std::to_string(id) + " order by rr.rank");
  ASSERT_EQ(ranks.size(), 2u) << ranks.dump(1);
  EXPECT_EQ(ranks[0]["host"], "left");  // rank 0 on the first agent by name
  EXPECT_EQ(ranks[1]["host"], "right");
  EXPECT_EQ(ranks[0]["store"], ranks[1]["store"]);  // both met at rank 0's store
  EXPECT_EQ(ranks[0]["store"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << ranks.dump();
  const json row =
      Rows("select host_set, scaling_efficiency from parallel_scaling where sweep_id = " +
           std::to_string(id));
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0]["host_set"], "left,right");
  EXPECT_GT(row[0]["scaling_efficiency"].get<double>(), 0);
}

TEST_F(GangTest, ARankAgentKilledMidJobStopsTheSpreadGangWithinTheLivenessWindow) {
  ASSERT_TRUE(fleet_->StartAgent("left", {"--cpus", "0"}));
  ASSERT_TRUE(fleet_->StartAgent("right", {"--cpus", "1"}));
  ASSERT_TRUE(fleet_->WaitForAgents(3, 60s)) << fleet_->Logs();
  const json sweep = {{"name", "spread, killed"},
                      {"placement", "spread"},
                      {"select", {{"name", {"left", "right"}}}},
                      {"matrix",
                       {{"model", "allreduce"},
                        {"batch_size", 1},
                        {"bytes", 1048576},
                        {"parallel", {{"kind", "collective"}, {"world_size", 2}}}}},
                      {"timing", {{"warmup_s", 60}, {"min_time_s", 60}, {"max_time_s", 60}}},
                      {"timeout_s", 600}};
  std::string error;
  const int64_t id = fleet_->Submit(sweep, &error);
  ASSERT_GT(id, 0) << error;
  // Mid-job: rank 1 (on "right") has met rank 0 (on "left").
  const std::string rank1_log_dir = fleet_->dir("agent-right");
  ASSERT_TRUE(WaitFor(
      [&] {
        if (WorkersNaming(rank1_log_dir).size() != 1) return false;
        std::error_code ec;
        for (auto it = std::filesystem::recursive_directory_iterator(rank1_log_dir, ec);
             !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
          if (it->path().filename() == "worker.log" &&
              ReadFile(it->path().string()).find("met the others") != std::string::npos) {
            return true;
          }
        }
        return false;
      },
      120s))
      << fleet_->Logs();
  const std::string ours = fleet_->dir("agent-");  // this fleet's workers only
  const auto workers = WorkersNaming(ours);
  ASSERT_EQ(workers.size(), 2u);
  fleet_->agent("right").Signal(SIGKILL);
  const auto at_kill = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor(
      [&] {
        return QueryValue(fleet_->db_path(), "select state from jobs where sweep_id = " +
                                                 std::to_string(id)) != "running";
      },
      60s))
      << fleet_->Logs();
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - at_kill).count();
  EXPECT_LT(stop_s, 3.0 + 1.0) << "the liveness window is 3 s; the expiry sweep runs within 1 s";
  const json job =
      Rows("select state, error, attempts from jobs where sweep_id = " + std::to_string(id));
  std::cerr << "FIGURE spread gang stopped " << stop_s
            << " s after its rank's agent was killed: " << job.dump() << "\n";
  // Retried (the attempt lost) or failed, with the reason either way.
  EXPECT_TRUE(job[0]["state"] == "queued" || job[0]["state"] == "failed") << job.dump();
  EXPECT_FALSE(job[0]["error"].get<std::string>().empty()) << job.dump();
  EXPECT_TRUE(WaitFor([&] { return WorkersNaming(ours).empty(); }, 10s))
      << "a rank's worker outlived its gang";
}

}  // namespace
}  // namespace benchfleet::testing
