// search.max_batch: the search's order of probes, and real searches of a small mlp
// within an address-space limit (CPU) or a cap on the CUDA caching allocator (GPU).
#include "worker/max_batch.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "worker/host/torch_runtime.h"
#include "worker/job_runner.h"
#include "worker/worker_process.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// Fits up to `limit`: the search must find exactly it.
std::vector<BatchProbe> Search(std::int64_t start, std::int64_t limit, std::int64_t cap = 1 << 20) {
  return SearchLargestBatch(start, cap, [limit](std::int64_t b) {
    return BatchProbe{b, b <= limit, b <= limit ? "" : "too big"};
  });
}

TEST(MaxBatchSearchTest, DoublesThenBisectsToTheBoundary) {
  for (const std::int64_t start : {1, 3, 100}) {
    for (const std::int64_t limit : {1, 5, 64, 1000, 4097}) {
      SCOPED_TRACE("start " + std::to_string(start) + ", limit " + std::to_string(limit));
      const std::vector<BatchProbe> probes = Search(start, limit);
      EXPECT_EQ(LargestFitting(probes), limit);
      EXPECT_EQ(probes.front().batch_size, start);
      bool next_probed = false;  // limit + 1 was tried and did not fit: the boundary is exact
      for (const BatchProbe& p : probes) {
        if (p.batch_size == limit + 1) next_probed = !p.fits;
      }
      EXPECT_TRUE(next_probed);
      // Doubling reaches the limit in log2 steps and bisecting closes it in as many.
      EXPECT_LE(probes.size(), 30u);
    }
  }
  // The doubling never passes the cap; a cap that fits is the answer.
  const std::vector<BatchProbe> capped = Search(1, 1 << 30, 48);
  EXPECT_EQ(LargestFitting(capped), 48);
  EXPECT_EQ(capped.back().batch_size, 48);
  // Nothing fits: the answer is 0 and 1 was tried.
  const std::vector<BatchProbe> none = Search(8, 0);
  EXPECT_EQ(LargestFitting(none), 0);
  EXPECT_EQ(none.back().batch_size, 1);
}

// An mlp of 512 -> 2048 -> 10 (4.2 MB of weights): a sample's input and hidden
// activation take 10 KiB.
json SearchJob(std::int64_t memory_mb, const std::string& mode = "inference") {
  return {{"job_id", 7},
          {"model", "mlp"},
          {"model_args", {{"layers", {512, 2048, 10}}}},
          {"mode", mode},
          {"dtype", "fp32"},
          {"device", "cpu"},
          {"threads", 1},
          {"search", {{"max_batch", {{"memory_mb", memory_mb}}}}},
          {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.05}}}};
}

// Runs `job` in a fresh benchfleet-worker, as the agent does: the address space a
// search counts from must not hold what earlier tests in this process freed (the
// allocator keeps it mapped, and it would count as room).
JobOutcome RunWorker(const json& job) { return RunWorkerProcess(job); }

TEST(MaxBatchSearchTest, FindsTheLargestMlpBatchWithinTheAddressSpaceLimit) {
  // 64 MiB: the heap grows and fragments in steps of megabytes (glibc, MKL's buffers), and
  // where it can grow depends on the process's layout; 32 MiB left some binaries no room.
  const std::int64_t memory_mb = 64;
  const JobOutcome outcome = RunWorker(SearchJob(memory_mb));
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  const json& r = outcome.result;
  const json& search = r.at("search");
  const std::int64_t max_batch = search.at("max_batch").get<std::int64_t>();
  EXPECT_EQ(search.at("memory_mb"), memory_mb);
  EXPECT_EQ(search.at("limit"), "address_space");
  EXPECT_NEAR(search.at("limit_mb").get<double>(),
              search.at("baseline_mb").get<double>() + memory_mb, 1e-6);
  // The inputs and hidden activations alone must fit in the budget; and the budget is
  // not eaten by the runtime (counted in the baseline): far more than a handful fit.
  const double sample_bytes = (512 + 2048) * 4.0;
  EXPECT_LT(static_cast<double>(max_batch) * sample_bytes, memory_mb * 1024.0 * 1024.0);
  EXPECT_GT(max_batch, 100);
  // The search started at batch 1 (no batch_size given), which the result echoes, and
  // closed on the boundary: max_batch + 1 was tried and did not fit.
  EXPECT_EQ(r.at("batch_size"), 1);
  const json& probes = search.at("probes");
  EXPECT_EQ(probes.front().at("batch_size"), 1);
  bool boundary = false;
  for (const json& p : probes) {
    if (p.at("batch_size") == max_batch) {
      EXPECT_TRUE(p.at("fits").get<bool>());
    }
    if (p.at("batch_size") == max_batch + 1) {
      boundary = !p.at("fits").get<bool>();
      EXPECT_FALSE(p.at("reason").get<std::string>().empty());
    }
  }
  EXPECT_TRUE(boundary) << search.dump();
  // The figures are max_batch's.
  const double median_ms = r.at("stats").at("median_ms").get<double>();
  EXPECT_NEAR(r.at("throughput_per_s").get<double>(),
              static_cast<double>(max_batch) * 1e3 / median_ms, 1e-6);
}

TEST(MaxBatchSearchTest, StartsAtBatchSizeAndSearchesTraining) {
  json job = SearchJob(48, "train");
  job["batch_size"] = 3;
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &before), 0);
  const JobOutcome outcome = RunJob(job);  // in this process: to see the limit put back
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &after), 0);
  EXPECT_EQ(after.rlim_cur, before.rlim_cur);  // the limit held for the probes only
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  const json& search = outcome.result.at("search");
  EXPECT_EQ(search.at("probes").front().at("batch_size"), 3);
  EXPECT_EQ(outcome.result.at("batch_size"), 3);
  EXPECT_GE(search.at("max_batch").get<std::int64_t>(), 3);
}

TEST(MaxBatchSearchTest, WeightsLargerThanTheBudgetFitNothing) {
  const JobOutcome outcome = RunWorker(SearchJob(1));  // 4.2 MB of weights, 1 MiB allowed
  EXPECT_EQ(outcome.exit_code, kExitRejected);
  EXPECT_NE(outcome.result.value("error", "")
                .find("search.max_batch: not even batch_size 1 fits within memory_mb 1 MiB"),
            std::string::npos)
      << outcome.result.dump();
}

TEST(MaxBatchSearchTest, OnAGpuMemoryMbCapsTheCachingAllocator) {
  if (!CudaAvailable()) {
    GTEST_SKIP() << "this LibTorch build or host has no CUDA device: the GPU search (the CUDA "
                    "caching allocator capped at memory_mb) cannot run here";
  }
  // 4.2 MB of weights, 1 MiB allowed above the warm allocator's own: nothing fits.
  json tiny = SearchJob(1);
  tiny["device"] = "cuda";
  const JobOutcome refused = RunJob(tiny);
  EXPECT_EQ(refused.exit_code, kExitRejected);
  EXPECT_NE(
      refused.result.value("error", "")
          .find("search.max_batch: not even batch_size 1 fits within memory_mb 1 MiB of cuda"),
      std::string::npos)
      << refused.result.dump();

  const std::int64_t memory_mb = 256;
  json job = SearchJob(memory_mb);
  job["device"] = "cuda";
  const JobOutcome outcome = RunJob(job);
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  const json& search = outcome.result.at("search");
  EXPECT_EQ(search.at("limit"), "device");
  const double baseline_mb = search.at("baseline_mb").get<double>();
  EXPECT_GE(baseline_mb, 0);
  EXPECT_NEAR(search.at("limit_mb").get<double>(), baseline_mb + memory_mb, 1e-6);
  // The inputs and hidden activations of what fit stay within the cap, and the largest
  // batch is a boundary inside it: max_batch + 1 was tried and did not fit.
  const std::int64_t max_batch = search.at("max_batch").get<std::int64_t>();
  EXPECT_LT(static_cast<double>(max_batch) * (512 + 2048) * 4.0, memory_mb * 1024.0 * 1024.0);
  bool boundary = false;
  for (const json& p : search.at("probes")) {
    if (p.at("batch_size") == max_batch + 1) boundary = !p.at("fits").get<bool>();
  }
  EXPECT_TRUE(boundary) << search.dump();
}

}  // namespace
}  // namespace benchfleet::worker
