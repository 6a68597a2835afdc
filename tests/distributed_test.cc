// Jobs of several ranks across real benchfleet-worker processes: the ranks meet at rank
// 0's c10d TCPStore on loopback, check their work, and time it with rank 0 deciding.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/worker_result.h"
#include "tests/fleet.h"
#include "tests/process.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;

// A port free right now on loopback (the store binds it a moment later).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t size = sizeof(address);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return ntohs(address.sin_port);
}

json Job(const std::string& op, int64_t bytes, int rank, int world_size, int port,
         double timeout_s = 60) {
  return {{"job_id", 1},
          {"attempt", 1},
          {"model", op},
          {"model_args", {{"bytes", bytes}}},
          {"mode", "inference"},
          {"dtype", "fp32"},
          {"device", "cpu"},
          {"batch_size", 1},
          {"threads", 1},
          {"timing", {{"warmup_s", 0.05}, {"min_time_s", 0.2}, {"max_time_s", 1.0}}},
          {"distributed",
           {{"rank", rank},
            {"world_size", world_size},
            {"store", "127.0.0.1:" + std::to_string(port)},
            {"address", "127.0.0.1"},
            {"timeout_s", timeout_s}}}};
}

// One rank's job training (or running) an mlp across ranks.
json MlpJob(int rank, int port, const json& layers, const std::string& mode, int batch_size,
            const json& parallel) {
  json job = Job("allreduce", 4, rank, 2, port);
  job["model"] = "mlp";
  job["model_args"] = {{"layers", layers}};
  job["mode"] = mode;
  job["batch_size"] = batch_size;
  job["parallel"] = parallel;
  return job;
}

struct RankRun {
  int exit_code = -1;
  json result;
  double wall_s = 0;
};

// Runs one worker per job, all at once, and waits for every one of them.
std::vector<RankRun> RunRanks(const TempDir& dir, const std::vector<json>& jobs) {
  std::vector<ChildProcess> workers(jobs.size());
  const auto start = std::chrono::steady_clock::now();
  for (size_t r = 0; r < jobs.size(); ++r) {
    const std::string job = dir / ("job" + std::to_string(r) + ".json");
    std::ofstream(job) << jobs[r].dump();
    EXPECT_TRUE(workers[r].Start(
        {kWorkerBin, "--job", job, "--out", dir / ("result" + std::to_string(r) + ".json")},
        dir / ("worker" + std::to_string(r) + ".log")));
  }
  std::vector<RankRun> runs(jobs.size());
  for (size_t r = 0; r < jobs.size(); ++r) {
    const int status = workers[r].Wait(std::chrono::seconds(120));
    runs[r].wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    runs[r].exit_code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    runs[r].result =
        json::parse(ReadFile(dir / ("result" + std::to_string(r) + ".json")), nullptr, false);
    EXPECT_FALSE(runs[r].result.is_discarded()) << ReadFile(workers[r].log_path());
  }
  return runs;
}

TEST(CollectiveTest, TwoRanksCheckAndTimeEachCollectiveWithBusBandwidthByTheFormula) {
  TempDir dir("bf-collective");
  const int64_t bytes = int64_t{1} << 20;
  // nccl-tests' factors for n = 2: all-reduce 2(n-1)/n = 1, all-gather (n-1)/n = 0.5.
  const std::vector<std::pair<std::string, double>> ops = {
      {"allreduce", 1.0}, {"allgather", 0.5}, {"broadcast", 1.0}};
  for (const auto& [op, factor] : ops) {
    SCOPED_TRACE(op);
    const int port = FreePort();
    ASSERT_GT(port, 0);
    const std::vector<RankRun> runs =
        RunRanks(dir, {Job(op, bytes, 0, 2, port), Job(op, bytes, 1, 2, port)});
    for (int rank = 0; rank < 2; ++rank) {
      const json& result = runs[rank].result;
      ASSERT_EQ(runs[rank].exit_code, 0) << result.dump();
      ASSERT_TRUE(result.value("ok", false)) << result.dump();
      const json& c = result.at("collective");
      EXPECT_EQ(c.at("op"), op);
      const json& d = result.at("distributed");
      EXPECT_EQ(d.at("rank"), rank);
      EXPECT_EQ(d.at("world_size"), 2);
      EXPECT_EQ(d.at("address"), "127.0.0.1");  // the address asked for, not a fallback
      EXPECT_TRUE(c.at("checked").get<bool>());
      const double call_bytes = op == "allgather" ? 2.0 * bytes : static_cast<double>(bytes);
      EXPECT_DOUBLE_EQ(c.at("call_bytes").get<double>(), call_bytes);
      const double median_ms = result.at("stats").at("median_ms").get<double>();
      EXPECT_NEAR(c.at("algbw_gbps").get<double>(), call_bytes / (median_ms * 1e-3) / 1e9, 1e-9);
      EXPECT_NEAR(c.at("busbw_gbps").get<double>(), c.at("algbw_gbps").get<double>() * factor,
                  1e-9);
      EXPECT_GT(c.at("busbw_gbps").get<double>(), 0);
      // The coordinator takes it as any result.
      auto parsed = ParseWorkerResult(result);
      EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
      std::cout << "FIGURE " << op << " 1 MiB, 2 ranks on loopback, rank " << rank << ": median "
                << median_ms << " ms, algbw " << c.at("algbw_gbps").get<double>() << " GB/s, busbw "
                << c.at("busbw_gbps").get<double>() << " GB/s\n";
    }
    // Rank 0 took every timing decision: both ranks ran blocks of the same size.
    EXPECT_EQ(runs[0].result.at("stats").at("iters_per_sample"),
              runs[1].result.at("stats").at("iters_per_sample"));
  }
}

TEST(CollectiveTest, ARankWhosePartnerNeverComesFailsWithinItsTimeoutNamingTheStore) {
  TempDir dir("bf-collective");
  const int port = FreePort();
  ASSERT_GT(port, 0);
  // Rank 0 of 2 hosts the store and waits for rank 1, which never starts.
  const std::vector<RankRun> runs = RunRanks(dir, {Job("allreduce", 1024, 0, 2, port, 2.0)});
  EXPECT_EQ(runs[0].exit_code, 2);
  EXPECT_FALSE(runs[0].result.value("ok", true));
  const std::string error = runs[0].result.value("error", "");
  EXPECT_NE(error.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << error;
  EXPECT_NE(error.find("timeout_s"), std::string::npos) << error;
  EXPECT_EQ(error.find("frame #"), std::string::npos) << "a backtrace is no message: " << error;
  EXPECT_LT(runs[0].wall_s, 60) << "the 2 s timeout was not kept";
}

TEST(DataParallelTest, TwoRanksTrainIdenticallyToOneProcessAndReportTheirScaling) {
  TempDir dir("bf-data-parallel");
  const int port = FreePort();
  ASSERT_GT(port, 0);
  std::vector<json> jobs;
  for (int rank = 0; rank < 2; ++rank) {
    // The global batch 16: 8 per rank; buckets of 10 KiB: several.
    jobs.push_back(
        MlpJob(rank, port, {64, 128, 10}, "train", 16, {{"kind", "data"}, {"bucket_mb", 0.01}}));
  }
  const std::vector<RankRun> runs = RunRanks(dir, jobs);
  // mlp 64-128-10: (64 + 1) x 128 + (128 + 1) x 10 fp32 parameters.
  const int64_t param_bytes = ((64 + 1) * 128 + (128 + 1) * 10) * 4;
  for (int rank = 0; rank < 2; ++rank) {
    const json& result = runs[rank].result;
    ASSERT_EQ(runs[rank].exit_code, 0) << result.dump();
    const json& p = result.at("parallel");
    EXPECT_EQ(result.at("distributed").at("rank"), rank);
    EXPECT_EQ(result.at("distributed").at("world_size"), 2);
    EXPECT_EQ(p.at("rank_batch"), 8);
    EXPECT_EQ(p.at("allreduce_bytes_per_step"), param_bytes);
    EXPECT_GE(p.at("buckets").get<int>(), 2);  // 10 KiB buckets for 37 KiB of gradients
    const json& check = p.at("check");
    EXPECT_TRUE(check.at("ranks_identical").get<bool>());
    EXPECT_LE(check.at("max_abs_diff_vs_one_process").get<double>(),
              check.at("tolerance").get<double>());
    const double median_ms = result.at("stats").at("median_ms").get<double>();
    EXPECT_DOUBLE_EQ(p.at("samples_per_s").get<double>(), 16 * 1e3 / median_ms);
    const double efficiency = p.at("scaling_efficiency").get<double>();
    EXPECT_NEAR(
        efficiency,
        p.at("samples_per_s").get<double>() / (2 * p.at("baseline_samples_per_s").get<double>()),
        1e-9);
    EXPECT_GT(efficiency, 0);
    EXPECT_GT(p.at("comm_share").get<double>(), 0);
    EXPECT_LT(p.at("comm_share").get<double>(), 1);
    EXPECT_GT(p.at("busbw_gbps").get<double>(), 0);
    auto parsed = ParseWorkerResult(result);
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    std::cout << "FIGURE data-parallel mlp 64-128-10, global batch 16, 2 ranks, rank " << rank
              << ": step p50 " << median_ms << " ms, efficiency " << efficiency << ", comm share "
              << p.at("comm_share").get<double>() << ", max diff vs one process "
              << check.at("max_abs_diff_vs_one_process").get<double>() << "\n";
  }
  // Both ranks report rank 0's baseline.
  EXPECT_EQ(runs[0].result.at("parallel").at("baseline_step_ms"),
            runs[1].result.at("parallel").at("baseline_step_ms"));
}

TEST(DataParallelTest, OverlappedBucketsTrainAsBeforeAndReportTheShareHidden) {
  TempDir dir("bf-data-parallel-overlap");
  const int port = FreePort();
  ASSERT_GT(port, 0);
  std::vector<json> jobs;
  for (int rank = 0; rank < 2; ++rank) {
    jobs.push_back(MlpJob(rank, port, {64, 128, 128, 10}, "train", 16,
                          {{"kind", "data"}, {"bucket_mb", 0.01}, {"overlap", true}}));
  }
  const std::vector<RankRun> runs = RunRanks(dir, jobs);
  for (int rank = 0; rank < 2; ++rank) {
    const json& result = runs[rank].result;
    ASSERT_EQ(runs[rank].exit_code, 0) << result.dump();
    const json& p = result.at("parallel");
    EXPECT_EQ(p.at("overlap"), true);
    EXPECT_GE(p.at("buckets").get<int>(), 3);
    // The checks ran with the overlapped buckets: the same parameters as one process.
    const json& check = p.at("check");
    EXPECT_TRUE(check.at("ranks_identical").get<bool>());
    EXPECT_LE(check.at("max_abs_diff_vs_one_process").get<double>(),
              check.at("tolerance").get<double>());
    EXPECT_GT(p.at("comm_ms_sequential").get<double>(), 0);
    const double hidden = p.at("overlap_share").get<double>();
    EXPECT_GE(hidden, 0);
    EXPECT_LE(hidden, 1);
    EXPECT_NEAR(hidden,
                std::clamp(1 - p.at("comm_ms_per_step").get<double>() /
                                   p.at("comm_ms_sequential").get<double>(),
                           0.0, 1.0),
                1e-9);
    EXPECT_TRUE(ParseWorkerResult(result).ok());
    std::cout << "FIGURE data-parallel with overlap, mlp 64-128-128-10, rank " << rank
              << ": exposed comm " << p.at("comm_ms_per_step").get<double>() << " ms of "
              << p.at("comm_ms_sequential").get<double>() << " ms, hidden " << hidden << "\n";
  }
}

TEST(DataParallelTest, ACnnsBatchNormTakesTheGlobalBatchsStatisticsSoTheRanksTrainAsOneProcess) {
  TempDir dir("bf-data-parallel-cnn");
  const int port = FreePort();
  ASSERT_GT(port, 0);
  std::vector<json> jobs;
  for (int rank = 0; rank < 2; ++rank) {
    // A small ResNet: global batch 8, 4 images per rank, so each shard's BatchNorm
    // statistics differ from the batch's. Overlapped buckets: the BatchNorm sums in
    // backward interleave with the buckets' all-reduces.
    json job = MlpJob(rank, port, {1}, "train", 8,
                      {{"kind", "data"}, {"bucket_mb", 0.05}, {"overlap", true}});
    job["model"] = "cnn";
    job["model_args"] = {
        {"width", 8}, {"blocks", {1, 1, 1, 1}}, {"image_size", 32}, {"classes", 10}};
    jobs.push_back(job);
  }
  const std::vector<RankRun> runs = RunRanks(dir, jobs);
  for (int rank = 0; rank < 2; ++rank) {
    const json& result = runs[rank].result;
    ASSERT_EQ(runs[rank].exit_code, 0) << result.dump();
    const json& p = result.at("parallel");
    // The stem's, two per block, and the three projections' where the shape changes.
    EXPECT_EQ(p.at("batchnorm_layers_synced"), 1 + 2 * 4 + 3);
    const json& check = p.at("check");
    EXPECT_TRUE(check.at("ranks_identical").get<bool>());
    EXPECT_LE(check.at("max_abs_diff_vs_one_process").get<double>(),
              check.at("tolerance").get<double>());
    const double batchnorm_ms = p.at("batchnorm_sync_ms_per_step").get<double>();
    EXPECT_GT(batchnorm_ms, 0);
    EXPECT_LE(batchnorm_ms, p.at("comm_ms_per_step").get<double>() + 1e-9);
    EXPECT_GT(p.at("comm_share").get<double>(), 0);
    EXPECT_LT(p.at("comm_share").get<double>(), 1);
    EXPECT_GT(p.at("scaling_efficiency").get<double>(), 0);
    EXPECT_TRUE(ParseWorkerResult(result).ok());
    std::cout << "FIGURE data-parallel cnn width 8, 32x32, global batch 8, 2 ranks, rank " << rank
              << ": step p50 " << result.at("stats").at("median_ms").get<double>()
              << " ms, efficiency " << p.at("scaling_efficiency").get<double>() << ", comm "
              << p.at("comm_ms_per_step").get<double>() << " ms of which BatchNorm " << batchnorm_ms
              << " ms, max diff vs one process "
              << check.at("max_abs_diff_vs_one_process").get<double>() << "\n";
  }
}

TEST(PipelineTest, TwoStagesMatchTheUnsplitModelAndMeasureTheirBubble) {
  TempDir dir("bf-pipeline");
  for (const std::string mode : {"train", "inference"}) {
    SCOPED_TRACE(mode);
    const int port = FreePort();
    ASSERT_GT(port, 0);
    std::vector<json> jobs;
    for (int rank = 0; rank < 2; ++rank) {
      // 3 layers: 2 on stage 0, 1 on stage 1.
      jobs.push_back(MlpJob(rank, port, {64, 128, 128, 10}, mode, 16,
                            {{"kind", "pipeline"}, {"stages", 2}, {"micro_batches", 4}}));
    }
    const std::vector<RankRun> runs = RunRanks(dir, jobs);
    for (int rank = 0; rank < 2; ++rank) {
      const json& result = runs[rank].result;
      ASSERT_EQ(runs[rank].exit_code, 0) << result.dump();
      EXPECT_EQ(result.at("distributed").at("rank"), rank);
      const json& p = result.at("parallel");
      EXPECT_EQ(p.at("kind"), "pipeline");
      const json& check = p.at("check");
      EXPECT_EQ(check.at("compared"), mode == "train" ? "outputs and gradients" : "outputs");
      EXPECT_LE(check.at("max_rel_diff_vs_unsplit").get<double>(),
                check.at("tolerance").get<double>());
      EXPECT_DOUBLE_EQ(p.at("bubble_gpipe_theory").get<double>(), 1.0 / 5);  // (S-1)/(M+S-1)
      EXPECT_GE(p.at("bubble").get<double>(), 0);
      EXPECT_LT(p.at("bubble").get<double>(), 1);
      EXPECT_EQ(p.at("stages_busy_share").size(), 2u);
      EXPECT_EQ(p.at("schedule"), "gpipe");
      EXPECT_EQ(p.at("max_micro_batches_held"), 4);  // GPipe holds every micro-batch
      // 4 micro-batches of 4 x 128 fp32 activations forward, and as many gradients back.
      const double one_way = 4 * 4 * 128 * 4;
      EXPECT_DOUBLE_EQ(p.at("bytes_between_stages_per_step").get<double>(),
                       mode == "train" ? 2 * one_way : one_way);
      EXPECT_GT(p.at("speedup_vs_unsplit").get<double>(), 0);
      auto parsed = ParseWorkerResult(result);
      EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
      std::cout << "FIGURE pipeline mlp 64-128-128-10 " << mode
                << ", 2 stages x 4 micro-batches, rank " << rank << ": bubble "
                << p.at("bubble").get<double>() << " (GPipe theory 0.2), "
                << "max rel diff vs unsplit " << check.at("max_rel_diff_vs_unsplit").get<double>()
                << "\n";
    }
  }
}

TEST(PipelineTest, OneForwardOneBackwardMatchesTheUnsplitModelHoldingFewerMicroBatches) {
  TempDir dir("bf-pipeline-1f1b");
  const int port = FreePort();
  ASSERT_GT(port, 0);
  std::vector<json> jobs;
  for (int rank = 0; rank < 2; ++rank) {
    jobs.push_back(
        MlpJob(rank, port, {64, 128, 128, 10}, "train", 16,
               {{"kind", "pipeline"}, {"stages", 2}, {"micro_batches", 4}, {"schedule", "1f1b"}}));
  }
  const std::vector<RankRun> runs = RunRanks(dir, jobs);
  for (int rank = 0; rank < 2; ++rank) {
    const json& result = runs[rank].result;
    ASSERT_EQ(runs[rank].exit_code, 0) << result.dump();
    const json& p = result.at("parallel");
    EXPECT_EQ(p.at("schedule"), "1f1b");
    const json& check = p.at("check");
    EXPECT_EQ(check.at("compared"), "outputs and gradients");
    EXPECT_LE(check.at("max_rel_diff_vs_unsplit").get<double>(),
              check.at("tolerance").get<double>());
    // Stage s holds at most S - s micro-batches' activations (GPipe: all 4).
    EXPECT_EQ(p.at("max_micro_batches_held"), 2 - rank);
    EXPECT_TRUE(ParseWorkerResult(result).ok());
    std::cout << "FIGURE pipeline 1F1B mlp 64-128-128-10 train, 2 stages x 4 micro-batches, rank "
              << rank << ": bubble " << p.at("bubble").get<double>() << ", held at most "
              << p.at("max_micro_batches_held") << " micro-batches\n";
  }
}

}  // namespace
}  // namespace benchfleet::testing
