// Runs real (small) LibTorch jobs through the worker library.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "worker/host/process_info.h"
#include "worker/host/torch_runtime.h"
#include "worker/job_runner.h"
#include "worker/measure/profile.h"
#include "worker/measure/sampler.h"
#include "worker/parallel/data_parallel.h"
#include "worker/parallel/pipeline.h"
#include "worker/worker_process.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

json SmallJob() {
  return json::parse(R"({
    "job_id": 12, "attempt": 3, "model": "mlp", "model_args": {"layers": [64, 128, 10]},
    "mode": "inference", "dtype": "fp32", "device": "cpu", "batch_size": 8, "threads": 1,
    "seed": 0, "timing": {"warmup_s": 0.05, "min_time_s": 0.2, "max_time_s": 1,
                          "target_ci": 0.01}})");
}

TEST(WorkerTest, SmallMlpJobProducesSaneResult) {
  const JobOutcome outcome = RunJob(SmallJob());
  const json& r = outcome.result;
  ASSERT_EQ(outcome.exit_code, kExitOk) << r.dump();
  ASSERT_TRUE(r.at("ok").get<bool>());
  EXPECT_EQ(r.at("job_id"), 12);
  EXPECT_EQ(r.at("attempt"), 3);
  for (const char* key : {"device", "model", "mode", "dtype"}) EXPECT_TRUE(r.at(key).is_string());
  EXPECT_EQ(r.at("batch_size"), 8);
  EXPECT_EQ(r.at("threads"), 1);

  const json& s = r.at("stats");
  for (const char* key : {"median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms", "p90_ms",
                          "p99_ms", "q1_ms", "q3_ms", "iqr_ms", "timed_s", "warmup_s"}) {
    ASSERT_TRUE(s.contains(key)) << key;
    EXPECT_GE(s.at(key).get<double>(), 0) << key;
  }
  EXPECT_TRUE(s.at("noisy").is_boolean());
  EXPECT_GE(s.at("iters_per_sample").get<int>(), 1);
  const auto n = s.at("n").get<std::size_t>();
  EXPECT_GE(n, 10u);
  EXPECT_EQ(r.at("samples_ms").size(), n);
  const double median = s.at("median_ms").get<double>();
  EXPECT_GT(median, 0);
  EXPECT_LE(s.at("min_ms").get<double>(), median);
  EXPECT_LE(median, s.at("max_ms").get<double>());
  EXPECT_LE(s.at("q1_ms").get<double>(), s.at("q3_ms").get<double>());
  EXPECT_GE(s.at("timed_s").get<double>(), 0.2);
  EXPECT_GE(s.at("warmup_s").get<double>(), 0.05);

  EXPECT_NEAR(r.at("throughput_per_s").get<double>(), 8 * 1000 / median, 0.01 * 8 * 1000 / median);
  const double effective = r.at("effective_threads").get<double>();
  EXPECT_GT(effective, 0);
  EXPECT_LT(effective, 1.25);
  // One thread keeps one CPU busy, unless others competed for it; the result
  // says so, and then the figure is theirs as much as ours.
  ASSERT_TRUE(r.at("disturbed").is_boolean());
  if (!r.at("disturbed").get<bool>()) {
    EXPECT_GT(effective, 0.75);
  }
  EXPECT_GE(r.at("host_busy_cpus").get<double>(), 0);
  EXPECT_GE(r.at("steal_fraction").get<double>(), 0);
  EXPECT_TRUE(s.at("unsteady").is_boolean());
  EXPECT_EQ(s.at("discarded_samples").get<std::size_t>() == 0,
            s.at("discarded_median_ms").is_null());
  EXPECT_GT(r.at("rss_before_model_mb").get<double>(), 0);
  EXPECT_EQ(r.at("param_bytes"), (64 * 128 + 128 + 128 * 10 + 10) * 4);
  // Start-up runs from the process's start to the first timed iteration, less the
  // model's build: it holds the warm-up, and this process has lived longer than both.
  const double build = r.at("model_build_s").get<double>();
  const double startup = r.at("startup_s").get<double>();
  EXPECT_GT(build, 0);
  EXPECT_GE(startup + 0.01, s.at("warmup_s").get<double>());  // 10 ms ticks
  EXPECT_LE(startup + build + s.at("timed_s").get<double>(), ProcessAgeSeconds().value() + 0.01);

  const json& rt = r.at("runtime");
  EXPECT_TRUE(rt.at("torch_version").is_string());
  EXPECT_TRUE(rt.at("blas").is_string());
  EXPECT_EQ(rt.at("intraop_threads"), 1);
  EXPECT_EQ(rt.at("interop_threads"), 1);
  if (!rt.at("openblas_threads").is_null()) {
    EXPECT_EQ(rt.at("openblas_threads"), 1);
  }
  EXPECT_TRUE(rt.contains("omp_wait_policy"));
  EXPECT_EQ(rt.at("affinity").get<std::vector<int>>(), AllowedCpus());
}

TEST(WorkerTest, ModelArgsDefaultToMlp1024) {
  json job = SmallJob();
  job["timing"] = {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.05}};
  // Absent model_args and absent keys inside it both take the defaults.
  for (const json& args : {json(nullptr), json::object()}) {
    if (args.is_null()) {
      job.erase("model_args");
    } else {
      job["model_args"] = args;
    }
    const JobOutcome outcome = RunJob(job);
    ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
    EXPECT_EQ(outcome.result.at("param_bytes"), (1024 * 1024 + 1024 + 1024 * 10 + 10) * 4);
  }
}

struct BadInput {
  std::string what;
  std::function<void(json&)> mutate;
  std::string error_mentions;
};

TEST(WorkerTest, BadInputIsRejectedNamingTheField) {
  const std::vector<BadInput> cases = {
      {"unknown model", [](json& j) { j["model"] = "resnet"; }, "model \"resnet\""},
      {"model not a string", [](json& j) { j["model"] = 3; }, "model"},
      {"negative batch", [](json& j) { j["batch_size"] = -4; }, "batch_size"},
      {"fractional batch", [](json& j) { j["batch_size"] = 2.5; }, "batch_size"},
      {"missing batch", [](json& j) { j.erase("batch_size"); }, "batch_size"},
      {"layers not an array", [](json& j) { j["model_args"]["layers"] = "64"; }, "layers"},
      {"layers empty", [](json& j) { j["model_args"]["layers"] = json::array(); }, "layers"},
      {"one layer", [](json& j) { j["model_args"]["layers"] = {4}; }, "layers"},
      {"zero layer",
       [](json& j) {
         j["model_args"]["layers"] = {4, 0};
       },
       "layers[1]"},
      {"unknown model arg", [](json& j) { j["model_args"]["width"] = 4; }, "width"},
      {"unknown dtype", [](json& j) { j["dtype"] = "fp16"; }, "dtype"},
      {"unknown mode", [](json& j) { j["mode"] = "training"; }, "mode"},
      {"unknown device", [](json& j) { j["device"] = "tpu"; }, "device"},
      {"unknown wait policy", [](json& j) { j["omp_wait_policy"] = "spin"; }, "omp_wait_policy"},
      {"zero threads", [](json& j) { j["threads"] = 0; }, "threads"},
      {"threads as string", [](json& j) { j["threads"] = "2"; }, "threads"},
      {"negative seed", [](json& j) { j["seed"] = -1; }, "seed"},
      {"min above max", [](json& j) { j["timing"]["min_time_s"] = 2; }, "min_time_s"},
      {"zero warmup", [](json& j) { j["timing"]["warmup_s"] = 0; }, "warmup_s"},
      {"ci target too big", [](json& j) { j["timing"]["target_ci"] = 1.5; }, "target_ci"},
      {"old iqr target too big", [](json& j) { j["timing"]["target_iqr"] = 1.5; }, "target_iqr"},
      {"unknown timing key", [](json& j) { j["timing"]["min_time"] = 1; }, "min_time"},
      {"missing job_id", [](json& j) { j.erase("job_id"); }, "job_id"},
  };
  for (const BadInput& c : cases) {
    json job = SmallJob();
    c.mutate(job);
    const JobOutcome outcome = RunJob(job);
    EXPECT_EQ(outcome.exit_code, kExitRejected) << c.what;
    EXPECT_FALSE(outcome.result.at("ok").get<bool>()) << c.what;
    const std::string error = outcome.result.value("error", "");
    EXPECT_NE(error.find(c.error_mentions), std::string::npos) << c.what << ": " << error;
    if (job.contains("job_id")) {
      EXPECT_EQ(outcome.result.at("job_id"), 12) << c.what;
    }
    EXPECT_FALSE(outcome.result.contains("stats")) << c.what;
  }
}

TEST(WorkerTest, UnknownModelListsKnownModels) {
  json job = SmallJob();
  job["model"] = "resnet";
  EXPECT_EQ(
      RunJob(job).result.at("error"),
      "unknown model \"resnet\"; known models: matmul, mlp, cnn, transformer, torchscript, aoti, "
      "allreduce, broadcast, allgather");
}

TEST(WorkerTest, CudaDeviceIsRefusedWithoutCuda) {
  if (CudaAvailable()) {
    GTEST_SKIP() << "this LibTorch and host have a CUDA device, so a cuda job is not refused "
                    "(the GPU tests run it)";
  }
  json job = SmallJob();
  job["device"] = "cuda:0";
  const JobOutcome outcome = RunJob(job);
  EXPECT_EQ(outcome.exit_code, kExitRejected);
  EXPECT_NE(outcome.result.at("error").get<std::string>().find("cuda"), std::string::npos);
}

// On a GPU: "fp32" runs with TF32 off and "tf32" with it on (its accuracy against true
// fp32), cuDNN autotuning on, blocks of at least kMinGpuBlockSeconds, and the caching
// allocator's peaks reported (a train step holds more than the weights it updates).
TEST(WorkerTest, AGpuJobReportsItsMathBlocksAndTheAllocatorsPeaks) {
  if (!CudaAvailable()) {
    GTEST_SKIP() << "this LibTorch build or host has no CUDA device: the GPU job's math, "
                    "blocks and memory are checked on a GPU host (deploy/gpu-check.sh)";
  }
  for (const std::string dtype : {"fp32", "tf32"}) {
    SCOPED_TRACE(dtype);
    json job = SmallJob();
    job["device"] = "cuda";
    job["dtype"] = dtype;
    job["mode"] = "train";
    job["model_args"] = {{"layers", {256, 1024, 10}}};
    const JobOutcome outcome = RunJob(job);
    const json& r = outcome.result;
    ASSERT_EQ(outcome.exit_code, kExitOk) << r.dump();
    const json& runtime = r.at("runtime");
    EXPECT_EQ(runtime.at("allow_tf32_cublas").get<bool>(), dtype == "tf32");
    EXPECT_EQ(runtime.at("allow_tf32_cudnn").get<bool>(), dtype == "tf32");
    EXPECT_TRUE(runtime.at("cudnn_benchmark").get<bool>());
    const json& stats = r.at("stats");
    EXPECT_GE(stats.at("median_ms").get<double>() *
                  static_cast<double>(stats.at("iters_per_sample").get<std::int64_t>()),
              0.9 * kMinGpuBlockSeconds * 1e3);
    ASSERT_TRUE(r.at("gpu_peak_mem_mb").is_number()) << r.dump();
    EXPECT_GE(r.at("gpu_peak_reserved_mb").get<double>(), r.at("gpu_peak_mem_mb").get<double>());
    const double weights_mb =
        static_cast<double>(r.at("param_bytes").get<std::int64_t>()) / (1 << 20);
    EXPECT_GE(r.at("gpu_peak_mem_mb").get<double>(), weights_mb);
    ASSERT_TRUE(r.at("step_peak_alloc_mb").is_number()) << r.dump();
    EXPECT_GT(r.at("step_peak_alloc_mb").get<double>(), 0);
    EXPECT_EQ(r.at("accuracy").is_null(), dtype == "fp32") << r.dump();
  }
}

// A pipeline across the GPUs of one worker: on a host with two, checked against the
// unsplit model on cuda:0 and timed, the baseline in blocks ended by the same wait for
// every GPU as the pipeline's; without them, refused naming what it needs.
TEST(WorkerTest, AnInProcessPipelineRunsOnTwoGpusOrIsRefused) {
  json job = {{"job_id", 1},
              {"model", "mlp"},
              {"model_args", {{"layers", {64, 128, 128, 10}}}},
              {"mode", "train"},
              {"dtype", "fp32"},
              {"device", "cuda"},
              {"batch_size", 16},
              {"threads", 1},
              {"parallel",
               {{"kind", "pipeline"}, {"stages", 2}, {"micro_batches", 4}, {"in_process", true}}},
              {"timing", {{"warmup_s", 0.02}, {"min_time_s", 0.1}, {"max_time_s", 0.3}}}};
  const JobOutcome outcome = RunJob(job);
  const std::int64_t gpus = CudaDeviceCount();
  if (gpus < 2) {
    EXPECT_EQ(outcome.exit_code, kExitRejected) << outcome.result.dump();
    GTEST_SKIP() << "an in-process pipeline of 2 stages needs 2 GPUs in one worker; this host has "
                 << gpus << " (LibTorch CUDA " << (CudaAvailable() ? "yes" : "no")
                 << "), so only its refusal was checked: "
                 << outcome.result.value("error", std::string());
  }
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  const json& p = outcome.result.at("parallel");
  EXPECT_EQ(p.at("in_process"), true);
  EXPECT_LE(p.at("check").at("max_rel_diff_vs_unsplit").get<double>(),
            p.at("check").at("tolerance").get<double>());
  const double baseline_ms = p.at("baseline_step_ms").get<double>();
  EXPECT_GT(baseline_ms, 0);
  EXPECT_NEAR(p.at("speedup_vs_unsplit").get<double>(),
              baseline_ms / p.at("step_p50_ms").get<double>(), 1e-9);
}

TEST(WorkerTest, NonObjectJobIsRejected) {
  const JobOutcome outcome = RunJob(json::array({1, 2}));
  EXPECT_EQ(outcome.exit_code, kExitRejected);
  EXPECT_FALSE(outcome.result.at("ok").get<bool>());
}

std::string ScratchPath(const std::string& name) {
  return testing::TempDir() + "worker_test_" + std::to_string(getpid()) + "_" + name;
}

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

TEST(WorkerTest, GradientBucketsFollowBackwardsOrderUpToTheirSize) {
  // Parameters 0..4 of 40, 10, 30, 100, 5 bytes; buckets of 50 filled from the last.
  const auto buckets = PlanBuckets({40, 10, 30, 100, 5}, 50);
  const std::vector<std::vector<std::size_t>> expected = {{4}, {3}, {2, 1}, {0}};
  EXPECT_EQ(buckets, expected);  // 100 bytes alone in its own; 5 + 100 would overflow
  EXPECT_EQ(PlanBuckets({8, 8, 8}, 1 << 20), (std::vector<std::vector<std::size_t>>{{2, 1, 0}}));
}

TEST(WorkerTest, PipelineStagesTakeConsecutiveLayersLargerFirst) {
  EXPECT_EQ(StageBoundaries(3, 2), (std::vector<std::int64_t>{0, 2, 3}));
  EXPECT_EQ(StageBoundaries(12, 4), (std::vector<std::int64_t>{0, 3, 6, 9, 12}));
  EXPECT_EQ(StageBoundaries(5, 3), (std::vector<std::int64_t>{0, 2, 4, 5}));
  EXPECT_DOUBLE_EQ(GpipeBubble(4, 8), 3.0 / 11);
  EXPECT_DOUBLE_EQ(GpipeBubble(2, 1), 0.5);
}

TEST(WorkerTest, RunJobFileWritesResult) {
  const std::string job_path = ScratchPath("job.json");
  const std::string out_path = ScratchPath("result.json");
  json job = SmallJob();
  job["timing"] = {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.05}};
  std::ofstream(job_path) << job.dump();
  EXPECT_EQ(RunJobFile(job_path, out_path), kExitOk);
  EXPECT_TRUE(ReadJson(out_path).at("ok").get<bool>());
  EXPECT_NE(access((out_path + ".tmp." + std::to_string(getpid())).c_str(), F_OK), 0);
  std::remove(job_path.c_str());
  std::remove(out_path.c_str());
}

TEST(WorkerTest, UnreadableOrMalformedJobFileStillWritesResult) {
  const std::string out_path = ScratchPath("result.json");
  EXPECT_EQ(RunJobFile(ScratchPath("does-not-exist.json"), out_path), kExitRejected);
  json r = ReadJson(out_path);
  EXPECT_FALSE(r.at("ok").get<bool>());
  EXPECT_NE(r.at("error").get<std::string>().find("cannot read job file"), std::string::npos);

  const std::string job_path = ScratchPath("bad.json");
  std::ofstream(job_path) << "{\"job_id\": 1,";
  EXPECT_EQ(RunJobFile(job_path, out_path), kExitRejected);
  r = ReadJson(out_path);
  EXPECT_NE(r.at("error").get<std::string>().find("not valid JSON"), std::string::npos);
  std::remove(job_path.c_str());
  std::remove(out_path.c_str());
}

// CPU time (clock ticks) used so far by each thread of this process.
std::map<std::string, long> ThreadCpuTicks() {
  std::map<std::string, long> ticks;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;  // the thread has exited
    // Fields after the parenthesised name start at field 3 (state); utime and
    // stime are fields 14 and 15.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::vector<std::string> fields{std::istream_iterator<std::string>(rest), {}};
    ticks[task.path().filename()] = std::stol(fields.at(11)) + std::stol(fields.at(12));
  }
  return ticks;
}

// Threads that did at least a fifth of the busiest thread's work between the
// two snapshots. Counting threads rather than comparing CPU time with wall
// time keeps the check valid on a host that other processes keep busy.
int BusyThreads(const std::map<std::string, long>& before,
                const std::map<std::string, long>& after) {
  long busiest = 0;
  for (const auto& [tid, t] : after) {
    busiest = std::max(busiest, t - (before.count(tid) ? before.at(tid) : 0));
  }
  int busy = 0;
  for (const auto& [tid, t] : after) {
    const long used = t - (before.count(tid) ? before.at(tid) : 0);
    if (used > 0 && used * 5 >= busiest) ++busy;
  }
  return busy;
}

// Whether 2 threads are faster is left to bench/worker_threads.sh (it depends
// on the host and its load); here we check that the requested thread count
// is the number of threads that really work.
TEST(WorkerTest, RequestedThreadsAreTheThreadsThatWork) {
  if (AllowedCpus().size() < 2) GTEST_SKIP() << "needs at least 2 CPUs";
  json job = SmallJob();
  job["model_args"]["layers"] = {1024, 1024, 1024, 10};
  job["batch_size"] = 64;
  job["timing"]["min_time_s"] = 0.5;

  job["threads"] = 1;
  auto before = ThreadCpuTicks();
  const JobOutcome one = RunJob(job);
  ASSERT_EQ(one.exit_code, kExitOk) << one.result.dump();
  EXPECT_EQ(BusyThreads(before, ThreadCpuTicks()), 1);
  EXPECT_LT(one.result.at("effective_threads").get<double>(), 1.25);

  job["threads"] = 2;
  before = ThreadCpuTicks();
  const JobOutcome two = RunJob(job);
  ASSERT_EQ(two.exit_code, kExitOk) << two.result.dump();
  EXPECT_EQ(BusyThreads(before, ThreadCpuTicks()), 2);
  EXPECT_EQ(two.result.at("runtime").at("intraop_threads"), 2);
  if (!two.result.at("runtime").at("openblas_threads").is_null()) {
    EXPECT_EQ(two.result.at("runtime").at("openblas_threads"), 2);
  }
}

// A job runs under the OpenMP wait policy it names. The runtime reads the policy once,
// before main: a process started under another one refuses the job (in-process here),
// and the worker binary starts itself again under the job's, as a worker run by hand
// must.
TEST(WorkerTest, AJobRunsUnderTheWaitPolicyItNames) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) {
    GTEST_SKIP() << "this test process runs under OMP_WAIT_POLICY="
                 << std::getenv("OMP_WAIT_POLICY");
  }
  json job = SmallJob();
  const JobOutcome plain = RunJob(job);
  ASSERT_EQ(plain.exit_code, kExitOk) << plain.result.dump();
  EXPECT_EQ(plain.result.at("runtime").at("omp_wait_policy"), "default");
  EXPECT_FALSE(plain.result.at("runtime").at("env").contains("OMP_WAIT_POLICY"));

  job["omp_wait_policy"] = "passive";
  const JobOutcome refused = RunJob(job);
  EXPECT_EQ(refused.exit_code, kExitRejected);
  const std::string error = refused.result.value("error", "");
  EXPECT_NE(error.find("omp_wait_policy \"passive\""), std::string::npos) << error;
  EXPECT_NE(error.find("OMP_WAIT_POLICY unset"), std::string::npos) << error;

  for (const char* policy : {"passive", "active"}) {
    job["omp_wait_policy"] = policy;
    const JobOutcome run = RunWorkerProcess(job);
    ASSERT_EQ(run.exit_code, kExitOk) << run.result.dump();
    const json& runtime = run.result.at("runtime");
    EXPECT_EQ(runtime.at("omp_wait_policy"), policy);
    EXPECT_EQ(runtime.at("env").at("OMP_WAIT_POLICY"),
              std::string(policy) == "passive" ? "PASSIVE" : "ACTIVE");
  }
  // Started under another policy than the job's default: again at once, without it.
  job["omp_wait_policy"] = "default";
  const JobOutcome back = RunWorkerProcess(job, "OMP_WAIT_POLICY=PASSIVE");
  ASSERT_EQ(back.exit_code, kExitOk) << back.result.dump();
  EXPECT_EQ(back.result.at("runtime").at("omp_wait_policy"), "default");
  EXPECT_FALSE(back.result.at("runtime").at("env").contains("OMP_WAIT_POLICY"));
}

// effective_threads says when spinning threads count in it, and a mismatch says why.
TEST(WorkerTest, AThreadsMismatchSaysWhy) {
  json job = SmallJob();
  job["threads"] = 2;
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  // Two threads on one CPU: at most one CPU's worth of time.
  const JobOutcome run = RunWorkerProcess(job, "taskset -c " + std::to_string(cpus.front()));
  ASSERT_EQ(run.exit_code, kExitOk) << run.result.dump();
  const json& r = run.result;
  EXPECT_EQ(r.at("threads_mismatch"), true) << r.dump();
  EXPECT_NE(r.at("threads_mismatch_reason").get<std::string>().find("1 CPUs only (its affinity)"),
            std::string::npos)
      << r.at("threads_mismatch_reason");
  EXPECT_EQ(r.at("effective_threads_includes_spin"), true);  // default policy, 2 threads
  const JobOutcome one = RunJob(SmallJob());
  ASSERT_EQ(one.exit_code, kExitOk);
  EXPECT_EQ(one.result.at("effective_threads_includes_spin"), false);  // one thread never waits
  // One thread has its CPU's worth of time, unless other processes (tests run beside this
  // one) took it meanwhile: then the reason must name the host, not the job's threads.
  const json& reason = one.result.at("threads_mismatch_reason");
  if (one.result.at("disturbed") == true && !reason.is_null()) {
    EXPECT_NE(reason.get<std::string>().find("the rest of the host kept"), std::string::npos)
        << reason;
  } else {
    EXPECT_TRUE(reason.is_null()) << one.result.dump();
  }
}

// On a GPU an operator's host time is its launch: a GPU job's profile is of the device
// time of the kernels each operator launched (Kineto's CUDA activity).
TEST(ProfileTest, AProfiledJobOnAGpuReportsItsOperatorsDeviceTime) {
  if (!CudaAvailable()) GTEST_SKIP() << "no CUDA device here: a GPU job's profile needs one";
  json job = SmallJob();
  job["device"] = "cuda";
  job["profile"] = true;
  const JobOutcome outcome = RunJob(job);
  ASSERT_EQ(outcome.exit_code, kExitOk) << outcome.result.dump();
  EXPECT_EQ(outcome.result["profile_time"], "device");
  const json& top = outcome.result["op_profile"];
  ASSERT_FALSE(top.empty());
  EXPECT_GT(top[0]["self_us"].get<double>(), 0) << top.dump();
  EXPECT_GE(top[0]["total_us"].get<double>(), top[0]["self_us"].get<double>());
}

// Device time: each call's own kernels are its self time, and a call's total adds those of
// the calls nested in it; host time plays no part.
TEST(ProfileTest, DeviceTimeIsTheKernelsEachCallLaunched) {
  // aten::linear (0..100 us on the host) holds aten::addmm (10..90), which launched 40 us
  // of kernels, and aten::t (2..5), which launched none; aten::relu (110..115) 7.5 us.
  const std::vector<ProfiledCall> calls = {
      {"aten::linear", 1, 0, 100, {}, 0.0},   {"aten::addmm", 1, 10, 80, {{8, 64}}, 40.0},
      {"aten::t", 1, 2, 3, {}, 0.0},          {"aten::relu", 1, 110, 5, {{8, 64}}, 7.5},
      {"aten::linear", 1, 200, 100, {}, 0.0}, {"aten::addmm", 1, 210, 80, {{8, 64}}, 42.0}};
  const json top = TopOperators(calls, 10, ProfileTime::kDevice);
  ASSERT_GE(top.size(), 3u) << top.dump();
  EXPECT_EQ(top[0]["op"], "aten::addmm");
  EXPECT_DOUBLE_EQ(top[0]["self_us"].get<double>(), 82.0);
  EXPECT_EQ(top[0]["calls"], 2);
  EXPECT_EQ(top[1]["op"], "aten::relu");
  EXPECT_DOUBLE_EQ(top[1]["self_us"].get<double>(), 7.5);
  for (const json& row : top) {
    if (row["op"] == "aten::linear") {
      EXPECT_DOUBLE_EQ(row["self_us"].get<double>(), 0.0);
      EXPECT_DOUBLE_EQ(row["total_us"].get<double>(), 82.0);
    }
  }
  EXPECT_STREQ(ProfileTimeName(ProfileTime::kDevice), "device");
}

}  // namespace
}  // namespace benchfleet::worker
