#include "common/job_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "common/job_needs.h"
#include "common/limits.h"
#include "common/sweep.h"
#include "common/thread_placement.h"

namespace benchfleet {
namespace {

using nlohmann::json;

TEST(JobSpecTest, DefaultsFillTheGaps) {
  JobSpecError error;
  auto spec = ParseJobSpec(json::parse(R"({"job_id": 1, "model": "cnn", "mode": "train",
      "dtype": "bf16", "device": "cpu", "batch_size": 4, "threads": 2})"),
                           &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_EQ(spec->cnn.width, 64);
  EXPECT_EQ(spec->cnn.blocks, (std::vector<std::int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(spec->cnn.image_size, 224);
  EXPECT_EQ(spec->interop_threads, 1);
  EXPECT_TRUE(spec->onednn);
  EXPECT_DOUBLE_EQ(spec->timing.max_time_s, 5.0);
  EXPECT_EQ(spec->attempt, 1);
}

TEST(JobSpecTest, ErrorsNameTheJobField) {
  const json base = json::parse(R"({"job_id": 1, "model": "transformer", "mode": "inference",
      "dtype": "fp32", "device": "cpu", "batch_size": 1, "threads": 1})");
  struct Case {
    json patch;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{
           {{{"model_args", {{"heads", 5}}}}, "model_args.heads"},
           {{{"model_args", {{"hidden", -1}}}}, "model_args.hidden"},
           {{{"model_args", {{"depth", 2}}}}, "model_args.depth"},
           {{{"dtype", "fp16"}}, "dtype"},
           {{{"mode", "train"}, {"dtype", "int8"}}, "dtype"},
           {{{"interop_threads", 0}}, "interop_threads"},
           {{{"timing", {{"warmup_s", 0}}}}, "timing.warmup_s"},
       }) {
    json job = base;
    job.update(c.patch);
    JobSpecError error;
    EXPECT_FALSE(ParseJobSpec(job, &error)) << job.dump();
    EXPECT_EQ(error.field, c.field) << error.message;
  }
}

TEST(JobSpecTest, ACollectiveIsOneRankOfSeveralAndMovesWholeElements) {
  const json base = json::parse(R"({"job_id": 1, "model": "allreduce",
      "model_args": {"bytes": 4096}, "mode": "inference", "dtype": "fp32", "device": "cpu",
      "batch_size": 1, "threads": 1,
      "distributed": {"rank": 1, "world_size": 2, "store": "10.0.0.1:29500",
                      "address": "10.0.0.2"}})");
  JobSpecError error;
  auto spec = ParseJobSpec(base, &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_TRUE(IsCollectiveModel(spec->model));
  EXPECT_EQ(spec->collective.bytes, 4096);
  ASSERT_TRUE(spec->distributed);
  EXPECT_EQ(spec->distributed->rank, 1);
  EXPECT_EQ(spec->distributed->world_size, 2);
  EXPECT_EQ(spec->distributed->store_host, "10.0.0.1");
  EXPECT_EQ(spec->distributed->store_port, 29500);
  EXPECT_EQ(spec->distributed->address, "10.0.0.2");
  EXPECT_DOUBLE_EQ(spec->distributed->timeout_s, 300);

  struct Case {
    json patch;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{
           {{{"distributed", nullptr}}, "distributed"},                // removed below
           {{{"model_args", {{"bytes", 4097}}}}, "model_args.bytes"},  // not whole fp32s
           {{{"model_args", {{"bytes", (int64_t{256} << 20) + 4}}}}, "model_args.bytes"},
           {{{"model_args", {{"size", 4}}}}, "model_args.size"},
           {{{"dtype", "int8"}}, "dtype"},
           {{{"mode", "train"}}, "mode"},
           {{{"batch_size", 8}}, "batch_size"},
           {{{"device", "cuda:0"}}, "device"},
           {{{"distributed", {{"rank", 2}, {"world_size", 2}, {"store", "h:1"}, {"address", "a"}}}},
            "distributed.rank"},
           {{{"distributed", {{"rank", 0}, {"world_size", 1}, {"store", "h:1"}, {"address", "a"}}}},
            "distributed.world_size"},
           {{{"distributed", {{"rank", 0}, {"world_size", 2}, {"store", "h"}, {"address", "a"}}}},
            "distributed.store"},
           {{{"distributed",
              {{"rank", 0}, {"world_size", 2}, {"store", "h:70000"}, {"address", "a"}}}},
            "distributed.store"},
           {{{"distributed", {{"rank", 0}, {"world_size", 2}, {"store", "h:1"}}}},
            "distributed.address"},
           {{{"distributed",
              {{"rank", 0},
               {"world_size", 2},
               {"store", "h:1"},
               {"address", "a"},
               {"timeout_s", 0}}}},
            "distributed.timeout_s"},
           {{{"distributed",
              {{"rank", 0}, {"world_size", 2}, {"store", "h:1"}, {"address", "a"}, {"port", 1}}}},
            "distributed.port"},
       }) {
    json job = base;
    job.update(c.patch);
    if (job["distributed"].is_null()) job.erase("distributed");
    EXPECT_FALSE(ParseJobSpec(job, &error)) << job.dump();
    EXPECT_EQ(error.field, c.field) << error.message;
  }
  // A model run in one process takes no distributed object.
  json mlp = base;
  mlp["model"] = "mlp";
  mlp.erase("model_args");
  EXPECT_FALSE(ParseJobSpec(mlp, &error));
  EXPECT_EQ(error.field, "distributed");
  // A sweep says how many ranks (parallel.world_size); the agents add each rank's
  // distributed object, so a sweep without a world size is refused at submit.
  const auto sweep = ParseSweep(json::parse(R"({"name": "bw", "matrix": {"model": "allreduce",
      "mode": "inference", "batch_size": 1}})"));
  ASSERT_FALSE(sweep.ok());
  EXPECT_EQ(sweep.status().message().rfind("matrix.parallel: ", 0), 0u) << sweep.status().message();
  EXPECT_NE(sweep.status().message().find("parallel.world_size"), std::string::npos)
      << sweep.status().message();
  // With it, and a size axis: one job per size, each naming its ranks and bytes.
  const auto sized = ParseSweep(json::parse(R"({"name": "bw", "matrix": {"model": "allreduce",
      "mode": "inference", "batch_size": 1, "bytes": [1024, 1048576],
      "parallel": {"kind": "collective", "world_size": 2}}})"));
  ASSERT_TRUE(sized.ok()) << sized.status().message();
  const auto combinations = sized->Combinations();
  ASSERT_EQ(combinations.size(), 2u);
  EXPECT_EQ(combinations[1].Spec()["model_args"]["bytes"], 1048576);
  EXPECT_EQ(combinations[1].needs.world_size, 2);
  ASSERT_TRUE(ParseJobConfig(combinations[0].Spec(), &error)) << error.message;
  json rank_job = combinations[0].Spec();
  rank_job["job_id"] = 1;
  EXPECT_FALSE(ParseJobSpec(rank_job, &error))
      << "a worker runs one rank: it needs the distributed object";
  EXPECT_EQ(error.field, "distributed") << error.message;
  // The size axis is the collectives': another model refuses it, naming the axis.
  const auto mlp_sized = ParseSweep(json::parse(R"({"name": "bw", "matrix": {"model": "mlp",
      "batch_size": 1, "bytes": [1024]}})"));
  ASSERT_FALSE(mlp_sized.ok());
  EXPECT_EQ(mlp_sized.status().message().rfind("matrix.bytes[0]: ", 0), 0u)
      << mlp_sized.status().message();
  // A world size given both ways must agree.
  json both = base;
  both["parallel"] = {{"kind", "collective"}, {"world_size", 4}};
  EXPECT_FALSE(ParseJobSpec(both, &error));
  EXPECT_EQ(error.field, "parallel.world_size") << error.message;
}

TEST(JobSpecTest, DataParallelTrainsAModelOnShardsOfTheGlobalBatch) {
  const json base = json::parse(R"({"job_id": 1, "model": "mlp", "mode": "train", "dtype": "fp32",
      "device": "cpu", "batch_size": 16, "threads": 1, "parallel": {"kind": "data"},
      "distributed": {"rank": 0, "world_size": 4, "store": "h:29500", "address": "a"}})");
  JobSpecError error;
  auto spec = ParseJobSpec(base, &error);
  ASSERT_TRUE(spec) << error.message;
  ASSERT_TRUE(spec->parallel);
  EXPECT_EQ(spec->parallel->kind, "data");
  EXPECT_DOUBLE_EQ(spec->parallel->bucket_mb, kDefaultBucketMb);
  // cnn trains data-parallel: its BatchNorm takes the global batch's statistics.
  json cnn = base;
  cnn["model"] = "cnn";
  EXPECT_TRUE(ParseJobSpec(cnn, &error)) << error.message;
  struct Case {
    json patch;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{
           {{{"batch_size", 18}}, "batch_size"},  // 18 does not split over 4 ranks
           {{{"mode", "inference"}}, "mode"},
           {{{"dtype", "bf16"}}, "dtype"},
           {{{"model", "matmul"}}, "model"},
           {{{"model", "allreduce"}, {"mode", "inference"}, {"batch_size", 1}}, "parallel.kind"},
           {{{"parallel", {{"kind", "collective"}}}}, "parallel.kind"},  // mlp is no collective
           {{{"parallel", {{"kind", "data"}, {"world_size", 2}}}}, "parallel.world_size"},  // != 4
           {{{"parallel", {{"kind", "data"}, {"world_size", 1}}}}, "parallel.world_size"},
           {{{"parallel", {{"kind", "tensor"}}}}, "parallel.kind"},
           {{{"parallel", {{"kind", "data"}, {"bucket_mb", 0}}}}, "parallel.bucket_mb"},
           {{{"parallel", {{"kind", "data"}, {"overlap", 1}}}}, "parallel.overlap"},
           {{{"parallel", {{"kind", "data"}, {"stages", 2}}}}, "parallel.stages"},
           {{{"distributed", nullptr}}, "distributed"},
       }) {
    json job = base;
    job.update(c.patch);
    if (job["distributed"].is_null()) job.erase("distributed");
    EXPECT_FALSE(ParseJobSpec(job, &error)) << job.dump();
    EXPECT_EQ(error.field, c.field) << error.message;
  }
}

TEST(JobSpecTest, APipelineSplitsTheModelIntoOneStagePerRank) {
  const json base = json::parse(R"({"job_id": 1, "model": "transformer",
      "model_args": {"layers": 4}, "mode": "inference", "dtype": "fp32", "device": "cpu",
      "batch_size": 8, "threads": 1, "parallel": {"kind": "pipeline", "stages": 2, "micro_batches": 4},
      "distributed": {"rank": 1, "world_size": 2, "store": "h:29500", "address": "a"}})");
  JobSpecError error;
  auto spec = ParseJobSpec(base, &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_EQ(spec->parallel->stages, 2);
  EXPECT_EQ(spec->parallel->micro_batches, 4);
  EXPECT_EQ(spec->parallel->schedule, "gpipe");
  json one_f_one_b = base;
  one_f_one_b["parallel"]["schedule"] = "1f1b";
  ASSERT_TRUE(ParseJobSpec(one_f_one_b, &error)) << error.message;
  struct Case {
    json patch;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{
           {{{"parallel", {{"kind", "pipeline"}, {"micro_batches", 4}}}}, "parallel.stages"},
           {{{"parallel", {{"kind", "pipeline"}, {"stages", 3}}}}, "parallel.stages"},  // 2 ranks
           {{{"parallel", {{"kind", "pipeline"}, {"stages", 2}, {"micro_batches", 3}}}},
            "parallel.micro_batches"},  // 8 rows do not split in 3
           {{{"parallel", {{"kind", "pipeline"}, {"stages", 2}, {"bucket_mb", 1}}}},
            "parallel.bucket_mb"},
           {{{"parallel", {{"kind", "pipeline"}, {"stages", 2}, {"schedule", "zb"}}}},
            "parallel.schedule"},
           {{{"model_args", {{"layers", 1}}}}, "parallel.stages"},         // one layer, two stages
           {{{"model", "cnn"}, {"model_args", json::object()}}, "model"},  // no stack of layers
           {{{"dtype", "bf16"}}, "dtype"},
       }) {
    json job = base;
    job.update(c.patch);
    EXPECT_FALSE(ParseJobSpec(job, &error)) << job.dump();
    EXPECT_EQ(error.field, c.field) << error.message;
  }
}

TEST(JobSpecTest, AnInProcessPipelinePutsItsStagesOnTheGpusOfOneWorker) {
  const json base =
      json::parse(R"({"job_id": 1, "model": "transformer", "model_args": {"layers": 4},
      "mode": "train", "dtype": "fp32", "device": "cuda", "batch_size": 8, "threads": 1,
      "parallel": {"kind": "pipeline", "stages": 2, "micro_batches": 4, "in_process": true}})");
  JobSpecError error;
  auto spec = ParseJobSpec(base, &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_TRUE(spec->parallel->in_process);
  EXPECT_EQ(JobWorldSize(*spec), 1);  // one worker: not a gang
  EXPECT_EQ(NeedsOfJobJson(base).value().local_processes, 1);
  struct Case {
    json patch;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{
           {{{"device", "cpu"}}, "device"},
           {{{"device", "cuda:1"}}, "device"},  // stage s is cuda:s
           {{{"distributed", {{"rank", 0}, {"world_size", 2}, {"store", "h:1"}, {"address", "a"}}}},
            "distributed"},
           {{{"parallel", {{"kind", "pipeline"}, {"stages", 2}, {"in_process", "yes"}}}},
            "parallel.in_process"},
           {{{"parallel",
              {{"kind", "pipeline"}, {"stages", 2}, {"in_process", true}, {"schedule", "1f1b"}}}},
            "parallel.schedule"},
       }) {
    json job = base;
    job.update(c.patch);
    EXPECT_FALSE(ParseJobSpec(job, &error)) << job.dump();
    EXPECT_EQ(error.field, c.field) << error.message;
  }
}

TEST(JobSpecTest, ConfigNeedsNoJobId) {
  JobSpecError error;
  const json config = json::parse(
      R"({"model": "matmul", "mode": "inference", "dtype": "fp32", "device": "cuda:1",
          "batch_size": 1, "threads": 1})");
  EXPECT_TRUE(ParseJobConfig(config, &error)) << error.message;
  EXPECT_FALSE(ParseJobSpec(config, &error));
  EXPECT_EQ(error.field, "job_id");
}

// "tf32" is a CUDA math mode: valid for a model on a GPU, refused on the CPU naming
// "fp32" (which is true fp32 everywhere).
TEST(JobSpecTest, Tf32IsAGpuDtype) {
  const json gpu = json::parse(R"({"job_id": 1, "model": "cnn", "mode": "train", "dtype": "tf32",
      "device": "cuda", "batch_size": 8, "threads": 1})");
  JobSpecError error;
  auto spec = ParseJobSpec(gpu, &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_EQ(spec->dtype, "tf32");
  json cpu = gpu;
  cpu["device"] = "cpu";
  EXPECT_FALSE(ParseJobSpec(cpu, &error));
  EXPECT_EQ(error.field, "dtype");
  EXPECT_NE(error.message.find("use \"fp32\""), std::string::npos) << error.message;
  json collective = {
      {"job_id", 1},
      {"model", "allreduce"},
      {"mode", "inference"},
      {"dtype", "tf32"},
      {"device", "cuda"},
      {"batch_size", 1},
      {"threads", 1},
      {"distributed", {{"rank", 0}, {"world_size", 2}, {"store", "h:1"}, {"address", "a"}}}};
  EXPECT_FALSE(ParseJobSpec(collective, &error));
  EXPECT_EQ(error.field, "dtype");
}

// profile on a GPU would time operator launches, not kernels: refused at validation, so
// a sweep never sends such a job; on the CPU accepted.
// A GPU job is profiled by its kernels' device time (schemas/worker.md, Profile).
TEST(JobSpecTest, ProfileRunsOnEveryDevice) {
  json job = json::parse(R"({"job_id": 1, "model": "mlp", "mode": "inference", "dtype": "fp32",
      "device": "cuda:1", "batch_size": 8, "threads": 1, "profile": true})");
  JobSpecError error;
  EXPECT_TRUE(ParseJobSpec(job, &error)) << error.message;
  job["device"] = "cpu";
  EXPECT_TRUE(ParseJobSpec(job, &error)) << error.message;
}

// Every model x mode x dtype, each as a one-combination sweep: valid, or refused
// with the worker's own message and the matrix field it came from.
TEST(JobSpecTest, EveryCombinationThroughTheSweepValidator) {
  for (const std::string model : {"matmul", "mlp", "cnn", "transformer"}) {
    for (const std::string mode : {"inference", "train"}) {
      for (const std::string dtype : {"fp32", "bf16", "int8"}) {
        SCOPED_TRACE(model + " " + mode + " " + dtype);
        const json sweep = {{"name", "all"},
                            {"matrix",
                             {{"model", model},
                              {"mode", mode},
                              {"dtype", json::array({dtype})},
                              {"batch_size", 1}}}};
        const auto parsed = ParseSweep(sweep);
        if (dtype != "int8") {
          ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
          EXPECT_EQ(parsed->combination_count, 1u);
        } else if (mode == "train") {
          ASSERT_FALSE(parsed.ok());
          EXPECT_EQ(parsed.status().message().rfind("matrix.dtype[0]: dtype \"int8\"", 0), 0u)
              << parsed.status().message();
        } else if (model == "matmul") {
          ASSERT_FALSE(parsed.ok());
          EXPECT_EQ(parsed.status().message(),
                    "matrix.dtype[0]: int8 dynamic quantization needs Linear layers; model "
                    "matmul has none");
        } else {
          EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
        }
      }
    }
  }
}

TEST(JobSpecTest, SweepErrorsPointAtTheSweepField) {
  struct Case {
    const char* sweep;
    const char* message;
  };
  for (
      const Case& c : std::vector<Case>{
          {R"({"name":"x","matrix":{"model":"matmul","batch_size":1},"models":{"matmul":{"m":0}}})",
           "models.matmul.m: model_args.m must be an integer in [1, 1048576], got 0"},
          {R"({"name":"x","matrix":{"model":["mlp","matmul"],"batch_size":1,"dtype":["fp32","int8"]}})",
           "matrix.dtype[1]: int8 dynamic quantization needs Linear layers; model matmul has none"},
          {R"({"name":"x","matrix":{"model":"mlp","batch_size":1,"interop_threads":[1,0]}})",
           "matrix.interop_threads[1]: interop_threads must be an integer in [1, 4096], got 0"},
          {R"({"name":"x","matrix":{"model":"mlp","batch_size":1,"onednn":["no"]}})",
           "matrix.onednn[0]: onednn must be true or false, got \"no\""},
          {R"({"name":"x","matrix":{"model":"mlp","batch_size":1},"seed":-2})",
           "seed: seed must be an integer >= 0, got -2"},
          {R"({"name":"x","matrix":{"model":"mlp","batch_size":1},"models":{"transformer":{"hidden":10,"heads":3}}})",
           "models.transformer.heads: model_args.hidden (10) must be divisible by "
           "model_args.heads (3)"},
      }) {
    const auto parsed = ParseSweepText(c.sweep);
    ASSERT_FALSE(parsed.ok()) << c.sweep;
    EXPECT_EQ(parsed.status().message(), c.message);
  }
}

TEST(JobSpecTest, InteropThreadsAndOnednnAreAxes) {
  const auto sweep = ParseSweepText(
      R"({"name":"x","matrix":{"model":"mlp","batch_size":1,"interop_threads":[1,2],
          "onednn":[true,false]}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 4u);
  EXPECT_EQ(sweep->Combinations()[1].Spec()["interop_threads"], 1);
  EXPECT_EQ(sweep->Combinations()[1].Spec()["onednn"], false);
  EXPECT_EQ(sweep->Combinations()[2].Spec()["interop_threads"], 2);
  EXPECT_FALSE(sweep->Combinations()[0].Spec().contains("model_args"));  // the worker's defaults
}

TEST(JobSpecTest, TheThreadPlacementIsAChoiceOfOneProcessesCpuJobsAndAnAxis) {
  JobSpecError error;
  json job = {{"model", "mlp"},  {"mode", "inference"}, {"dtype", "fp32"},
              {"device", "cpu"}, {"batch_size", 2},     {"threads", 2}};
  EXPECT_EQ(JobThreadPlacement(job), "cores");
  for (const std::string& placement : KnownThreadPlacements()) {
    job["thread_placement"] = placement;
    EXPECT_TRUE(ParseJobConfig(job, &error)) << placement << ": " << error.message;
    EXPECT_EQ(JobThreadPlacement(job), placement);
  }
  job["thread_placement"] = "compact";
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "thread_placement");
  EXPECT_NE(error.message.find("cores, spread, smt, node, os"), std::string::npos) << error.message;
  job["thread_placement"] = "smt";
  job["threads"] = 1;
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "thread_placement");
  EXPECT_NE(error.message.find("a job of 1 thread has none to pair"), std::string::npos)
      << error.message;
  job["threads"] = 2;
  job["replicas"] = 2;
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "thread_placement");
  job["thread_placement"] = "cores";  // the default: any job
  EXPECT_TRUE(ParseJobConfig(job, &error)) << error.message;

  const auto sweep = ParseSweepText(
      R"({"name":"x","matrix":{"model":"mlp","batch_size":1,"threads":2,"thread_placement":["cores","spread"]}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 2u);
  EXPECT_EQ(sweep->Combinations()[1].Spec()["thread_placement"], "spread");
  const auto plain = ParseSweepText(R"({"name":"x","matrix":{"model":"mlp","batch_size":1}})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->Combinations()[0].Spec().contains("thread_placement"));
  const auto bad = ParseSweepText(
      R"({"name":"x","matrix":{"model":"mlp","batch_size":1,"thread_placement":["smt"]}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("thread_placement"), std::string::npos)
      << bad.status().message();
}

TEST(JobSpecTest, TheOpenMpWaitPolicyIsAChoiceAndAnAxisLeftOutWhenNotSwept) {
  JobSpecError error;
  json job = {{"model", "mlp"},  {"mode", "inference"}, {"dtype", "fp32"},
              {"device", "cpu"}, {"batch_size", 2},     {"threads", 1}};
  auto parsed = ParseJobConfig(job, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_EQ(parsed->omp_wait_policy, "default");
  for (const char* policy : {"default", "passive", "active"}) {
    job["omp_wait_policy"] = policy;
    parsed = ParseJobConfig(job, &error);
    ASSERT_TRUE(parsed) << error.message;
    EXPECT_EQ(parsed->omp_wait_policy, policy);
  }
  EXPECT_EQ(OmpWaitPolicyVariable("passive"), "PASSIVE");
  EXPECT_EQ(OmpWaitPolicyVariable("active"), "ACTIVE");
  EXPECT_FALSE(OmpWaitPolicyVariable("default"));
  job["omp_wait_policy"] = "PASSIVE";
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "omp_wait_policy");
  EXPECT_EQ(error.message,
            "omp_wait_policy must be one of default, passive, active, got \"PASSIVE\"");
  job["omp_wait_policy"] = nullptr;  // the default
  EXPECT_TRUE(ParseJobConfig(job, &error));
  EXPECT_EQ(JobOmpWaitPolicy(job), "default");
  job["omp_wait_policy"] = "active";
  EXPECT_EQ(JobOmpWaitPolicy(job), "active");

  const auto sweep = ParseSweepText(
      R"({"name":"x","matrix":{"model":"mlp","batch_size":1,"omp_wait_policy":["default","passive"]}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 2u);
  EXPECT_EQ(sweep->Combinations()[1].Spec()["omp_wait_policy"], "passive");
  const auto plain = ParseSweepText(R"({"name":"x","matrix":{"model":"mlp","batch_size":1}})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->Combinations()[0].Spec().contains("omp_wait_policy"));
  EXPECT_FALSE(
      ParseSweepText(
          R"({"name":"x","matrix":{"model":"mlp","batch_size":1,"omp_wait_policy":["spin"]}})")
          .ok());
}

TEST(JobSpecTest, TimingStopsOnTheMediansPrecisionAndStillReadsTheOldSpreadTarget) {
  TimingSpec timing;
  JobSpecError error;
  EXPECT_DOUBLE_EQ(timing.target_ci, 0.01);
  ASSERT_TRUE(ParseTiming(json{{"target_ci", 0.02}}, &timing, &error)) << error.message;
  EXPECT_DOUBLE_EQ(timing.target_ci, 0.02);
  // A sweep file or schedule written before target_ci keeps working.
  EXPECT_TRUE(ParseTiming(json{{"target_iqr", 0.05}}, &timing, &error)) << error.message;
  EXPECT_FALSE(ParseTiming(json{{"target_ci", 1.0}}, &timing, &error));
  EXPECT_EQ(error.field, "timing.target_ci");
  EXPECT_FALSE(ParseTiming(json{{"target_iqr", 2.0}}, &timing, &error));
  EXPECT_EQ(error.field, "timing.target_iqr");
  // A sweep's jobs carry target_ci.
  const auto sweep = ParseSweepText(R"({"name":"x","matrix":{"model":"mlp","batch_size":1},
                                        "timing":{"target_iqr":0.05}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_EQ(sweep->Combinations()[0].Spec()["timing"]["target_ci"], 0.01);
  EXPECT_FALSE(sweep->Combinations()[0].Spec()["timing"].contains("target_iqr"));
}

TEST(JobSpecTest, MemoryFormatAndJitAreChoicesOfTheirModels) {
  JobSpecError error;
  json cnn = {{"model", "cnn"},
              {"mode", "train"},
              {"dtype", "fp32"},
              {"device", "cpu"},
              {"batch_size", 2},
              {"threads", 1},
              {"model_args", {{"memory_format", "channels_last"}}}};
  auto parsed = ParseJobConfig(cnn, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_EQ(parsed->cnn.memory_format, "channels_last");
  cnn["model_args"]["memory_format"] = "nchw";
  EXPECT_FALSE(ParseJobConfig(cnn, &error));
  EXPECT_EQ(error.field, "model_args.memory_format");
  EXPECT_EQ(error.message,
            "model_args.memory_format must be one of contiguous, channels_last, got \"nchw\"");
  json mlp = cnn;
  mlp["model"] = "mlp";
  mlp["model_args"] = {{"memory_format", "channels_last"}};
  EXPECT_FALSE(ParseJobConfig(mlp, &error));  // the cnn's argument only
  EXPECT_EQ(error.field, "model_args.memory_format");

  json ts = {{"model", "torchscript"},
             {"mode", "inference"},
             {"dtype", "fp32"},
             {"device", "cpu"},
             {"batch_size", 2},
             {"threads", 1},
             {"model_args", {{"path", "/m.pt"}, {"inputs", {{4}}}, {"jit", "optimize"}}}};
  parsed = ParseJobConfig(ts, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_EQ(parsed->file.jit, "optimize");
  ts["model_args"].erase("jit");
  EXPECT_EQ(ParseJobConfig(ts, &error)->file.jit, "none");
  ts["model_args"]["jit"] = "freeze";
  ts["mode"] = "train";
  EXPECT_FALSE(ParseJobConfig(ts, &error));
  EXPECT_EQ(error.field, "model_args.jit");
  // A sweep crosses them like any argument axis.
  auto sweep = ParseSweepText(R"({"name": "s", "matrix": {"model": "cnn", "batch_size": 1},
      "models": {"cnn": {"width": 8, "memory_format": ["contiguous", "channels_last"]}}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 2u);
  EXPECT_EQ(sweep->Combinations()[1].Spec()["model_args"]["memory_format"], "channels_last");
}

TEST(JobSpecTest, PruneIsAKindAndItsShare) {
  JobSpecError error;
  json job = {{"model", "mlp"},
              {"mode", "inference"},
              {"dtype", "fp32"},
              {"device", "cpu"},
              {"batch_size", 2},
              {"threads", 1},
              {"prune", {{"kind", "structured"}, {"ratio", 0.5}}}};
  auto parsed = ParseJobConfig(job, &error);
  ASSERT_TRUE(parsed) << error.message;
  ASSERT_TRUE(parsed->prune);
  EXPECT_EQ(parsed->prune->kind, "structured");
  EXPECT_DOUBLE_EQ(parsed->prune->ratio, 0.5);
  job["prune"] = nullptr;  // null: not pruned
  parsed = ParseJobConfig(job, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_FALSE(parsed->prune);

  struct Case {
    std::string model;
    json prune;
    std::string field;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"mlp",
            {{"kind", "magnitude"}, {"sparsity", 2}},
            "prune.sparsity",
            "prune.sparsity must be a number in [0, 1), the share of each layer's weights set to "
            "zero, got 2"},
           {"mlp", {{"kind", "structured"}, {"ratio", 1.0}}, "prune.ratio", ""},
           {"mlp", {{"kind", "structured"}}, "prune.ratio", ""},
           {"mlp",
            {{"kind", "structured"}, {"sparsity", 0.5}},
            "prune.sparsity",
            "unknown key \"sparsity\" in prune of kind \"structured\"; known keys: kind, ratio"},
           {"mlp",
            {{"kind", "random"}, {"ratio", 0.5}},
            "prune.kind",
            "prune.kind must be one of magnitude, structured, got \"random\""},
           {"mlp", 0.5, "prune", ""},
           {"matmul", {{"kind", "magnitude"}, {"sparsity", 0.5}}, "prune.kind", ""},
           {"transformer", {{"kind", "structured"}, {"ratio", 0.5}}, "prune.kind", ""}}) {
    SCOPED_TRACE(c.prune.dump());
    json bad = job;
    bad["model"] = c.model;
    bad["prune"] = c.prune;
    EXPECT_FALSE(ParseJobConfig(bad, &error));
    EXPECT_EQ(error.field, c.field);
    if (!c.message.empty()) {
      EXPECT_EQ(error.message, c.message);
    }
  }
  json ts = job;
  ts["model"] = "torchscript";
  ts["model_args"] = {{"path", "/m.pt"}, {"inputs", {{4}}}};
  ts["prune"] = {{"kind", "magnitude"}, {"sparsity", 0.5}};
  EXPECT_FALSE(ParseJobConfig(ts, &error));
  EXPECT_NE(error.message.find("prune the module before saving it"), std::string::npos)
      << error.message;
  json shallow = job;
  shallow["model_args"] = {{"layers", {8, 4}}};  // no hidden layer
  shallow["prune"] = {{"kind", "structured"}, {"ratio", 0.5}};
  EXPECT_FALSE(ParseJobConfig(shallow, &error));
  EXPECT_EQ(error.field, "prune.kind");
  // Magnitude pruning reaches the transformer's Linear layers; int8 after pruning.
  json transformer = job;
  transformer["model"] = "transformer";
  transformer["dtype"] = "int8";
  transformer["prune"] = {{"kind", "magnitude"}, {"sparsity", 0.9}};
  EXPECT_TRUE(ParseJobConfig(transformer, &error)) << error.message;
}

TEST(JobSpecTest, AReferenceIsAModelOfItsOwnOnTheJobsInputs) {
  JobSpecError error;
  json job = {{"model", "torchscript"},
              {"mode", "inference"},
              {"dtype", "fp32"},
              {"device", "cpu"},
              {"batch_size", 2},
              {"threads", 1},
              {"seed", 7},
              {"model_args", {{"path", "/student.pt"}, {"inputs", {{16}}}}},
              {"reference", {{"model", "torchscript"}, {"model_args", {{"path", "/teacher.pt"}}}}}};
  auto parsed = ParseJobConfig(job, &error);
  ASSERT_TRUE(parsed) << error.message;
  ASSERT_TRUE(parsed->reference);
  EXPECT_EQ(parsed->reference->model, "torchscript");
  EXPECT_EQ(parsed->reference->file.path, "/teacher.pt");
  EXPECT_TRUE(parsed->reference->file.inputs.empty());  // the job's
  EXPECT_EQ(parsed->reference->seed, 7u);
  EXPECT_EQ(parsed->reference->batch_size, 2);
  EXPECT_EQ(parsed->reference->dtype, "fp32");

  job["reference"] = {{"model", "mlp"}, {"model_args", {{"layers", {16, 64, 10}}}}};
  parsed = ParseJobConfig(job, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_EQ(parsed->reference->mlp.layers, (std::vector<std::int64_t>{16, 64, 10}));

  struct Case {
    json reference;
    std::string field;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{{"model", "torchscript"}, {"model_args", {{"path", "teacher.pt"}}}},
            "reference.model_args.path",
            "reference.model_args.path must be the absolute path of a TorchScript file (saved with "
            "torch.jit.save), got \"teacher.pt\""},
           {{{"model", "torchscript"}, {"model_args", {{"path", "/t.pt"}, {"inputs", {{16}}}}}},
            "reference.model_args.inputs",
            ""},
           {{{"model", "mlp"}, {"model_args", {{"width", 3}}}}, "reference.model_args.width", ""},
           {{{"model", "allreduce"}}, "reference.model", ""},
           {{{"model", "mlp"}, {"seed", 3}}, "reference.seed", ""},
           {"mlp", "reference", ""}}) {
    SCOPED_TRACE(c.reference.dump());
    json bad = job;
    bad["reference"] = c.reference;
    EXPECT_FALSE(ParseJobConfig(bad, &error));
    EXPECT_EQ(error.field, c.field);
    if (!c.message.empty()) {
      EXPECT_EQ(error.message, c.message);
    }
  }
  json both = job;
  both["model"] = "mlp";
  both.erase("model_args");
  both["prune"] = {{"kind", "magnitude"}, {"sparsity", 0.5}};
  EXPECT_FALSE(ParseJobConfig(both, &error));
  EXPECT_EQ(error.field, "reference");
}

TEST(JobSpecTest, PruneAndReferenceAreSweepAxes) {
  auto sweep = ParseSweepText(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": 4,
      "prune": [null, {"kind": "structured", "ratio": 0.5}, {"kind": "magnitude", "sparsity": 0.5}]}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 3u);
  const auto combinations = sweep->Combinations();
  EXPECT_FALSE(json::parse(combinations[0].spec).contains("prune"));  // null: left out
  EXPECT_EQ(json::parse(combinations[1].spec)["prune"]["kind"], "structured");
  EXPECT_EQ(json::parse(combinations[2].spec)["prune"]["sparsity"], 0.5);
  // The worker's objection names the axis value it came from.
  auto bad = ParseSweepText(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": 4,
      "prune": [null, {"kind": "magnitude", "sparsity": 2}]}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(
                "matrix.prune[1].sparsity: prune.sparsity must be a number in [0, 1)"),
            std::string::npos)
      << bad.status().ToString();
  auto ref = ParseSweepText(R"({"name": "s", "matrix": {"model": "mlp", "batch_size": 4,
      "reference": [null, {"model": "mlp", "model_args": {"layers": [1024, 64, 10]}},
                    {"model": "cnn", "model_args": {"blocks": [1]}}]}})");
  ASSERT_FALSE(ref.ok());
  EXPECT_NE(ref.status().message().find(
                "matrix.reference[2].model_args.blocks: reference.model_args.blocks"),
            std::string::npos)
      << ref.status().ToString();
}

TEST(JobSpecTest, ProfileAndCheckpointingAreFlagsWithTheirRules) {
  JobSpecError error;
  json train = {{"model", "transformer"}, {"mode", "train"},      {"dtype", "fp32"},
                {"device", "cpu"},        {"batch_size", 2},      {"threads", 1},
                {"profile", true},        {"checkpointing", true}};
  auto parsed = ParseJobConfig(train, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_TRUE(parsed->profile);
  EXPECT_TRUE(parsed->checkpointing);
  train.erase("profile");
  train.erase("checkpointing");
  parsed = ParseJobConfig(train, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_FALSE(parsed->profile);
  EXPECT_FALSE(parsed->checkpointing);

  struct Case {
    json patch;
    std::string field;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{{"profile", "yes"}}, "profile", "profile must be true or false, got \"yes\""},
           {{{"checkpointing", 1}}, "checkpointing", "checkpointing must be true or false, got 1"},
           {{{"checkpointing", true}, {"mode", "inference"}},
            "checkpointing",
            "checkpointing trades recomputation in backward for the activations a backward pass "
            "would "
            "keep: it runs in mode \"train\" only; got mode \"inference\""},
           {{{"checkpointing", true}, {"model", "matmul"}}, "checkpointing", ""},
           {{{"profile", true}, {"parallel", {{"kind", "data"}, {"world_size", 2}}}},
            "profile",
            ""},
           {{{"checkpointing", true}, {"parallel", {{"kind", "data"}, {"world_size", 2}}}},
            "checkpointing",
            ""},
       }) {
    SCOPED_TRACE(c.patch.dump());
    json job = train;
    job.merge_patch(c.patch);
    EXPECT_FALSE(ParseJobConfig(job, &error));
    EXPECT_EQ(error.field, c.field);
    if (!c.message.empty()) {
      EXPECT_EQ(error.message, c.message);
    }
  }
}

TEST(JobSpecTest, ProfileAndCheckpointingAreAxesLeftOutWhenNotSwept) {
  auto sweep = ParseSweepText(R"({"name":"x","matrix":{"model":"cnn","mode":"train","batch_size":1,
      "checkpointing":[false,true],"profile":true}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 2u);
  EXPECT_EQ(sweep->Combinations()[0].Spec()["checkpointing"], false);
  EXPECT_EQ(sweep->Combinations()[1].Spec()["checkpointing"], true);
  EXPECT_EQ(sweep->Combinations()[1].Spec()["profile"], true);
  // A sweep that does not name them leaves them out of its jobs (and so of their series).
  sweep = ParseSweepText(R"({"name":"x","matrix":{"model":"mlp","batch_size":1}})");
  ASSERT_TRUE(sweep.ok());
  EXPECT_FALSE(sweep->Combinations()[0].Spec().contains("profile"));
  EXPECT_FALSE(sweep->Combinations()[0].Spec().contains("checkpointing"));
  // An inference job cannot be checkpointed: the sweep says which value of which axis.
  sweep = ParseSweepText(
      R"({"name":"x","matrix":{"model":"mlp","batch_size":1,"checkpointing":[false,true]}})");
  ASSERT_FALSE(sweep.ok());
  EXPECT_EQ(sweep.status().message().rfind("matrix.checkpointing[1]: checkpointing trades", 0), 0u)
      << sweep.status().message();
}

}  // namespace
}  // namespace benchfleet

namespace benchfleet {
namespace {

json SearchConfig() {
  return {{"model", "cnn"},  {"mode", "inference"},
          {"dtype", "fp32"}, {"device", "cpu"},
          {"threads", 1},    {"search", {{"max_batch", {{"memory_mb", 2048}}}}}};
}

TEST(JobSpecTest, MaxBatchSearchStartsAtBatchSizeAndNamesItsFields) {
  JobSpecError error;
  auto parsed = ParseJobConfig(SearchConfig(), &error);
  ASSERT_TRUE(parsed) << error.message;
  ASSERT_TRUE(parsed->max_batch);
  EXPECT_EQ(parsed->max_batch->memory_mb, 2048);
  EXPECT_EQ(parsed->batch_size, 1);  // no batch_size: the search starts at 1
  json job = SearchConfig();
  job["batch_size"] = 8;
  EXPECT_EQ(ParseJobConfig(job, &error)->batch_size, 8);

  job["search"]["max_batch"]["memory_mb"] = 0;
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "search.max_batch.memory_mb");
  EXPECT_EQ(error.message, "search.max_batch.memory_mb must be an integer in [1, 1048576], got 0");
  job["search"] = {{"min_batch", {}}};
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "search");
  job["search"] = {{"max_batch", {{"memory_mb", 64}, {"start", 2}}}};
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "search.max_batch");
  // Without a search, batch_size is still required.
  job.erase("search");
  job.erase("batch_size");
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "batch_size");
  // One process: no search across ranks.
  json parallel = {{"model", "mlp"},
                   {"mode", "train"},
                   {"dtype", "fp32"},
                   {"device", "cpu"},
                   {"threads", 1},
                   {"batch_size", 4},
                   {"parallel", {{"kind", "data"}, {"world_size", 2}}},
                   {"search", {{"max_batch", {{"memory_mb", 64}}}}}};
  EXPECT_FALSE(ParseJobConfig(parallel, &error));
  EXPECT_EQ(error.field, "search");
}

TEST(JobSpecTest, MaxBatchSearchInASweep) {
  // The batch_size axis may be left out (the search starts at 1) or give the starts.
  auto sweep = ParseSweepText(R"({"name": "fit", "search": {"max_batch": {"memory_mb": 2048}},
      "matrix": {"model": "cnn"}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  ASSERT_EQ(sweep->combination_count, 1u);
  const json spec = sweep->Combinations()[0].Spec();
  EXPECT_EQ(spec["search"]["max_batch"]["memory_mb"], 2048);
  EXPECT_FALSE(spec.contains("batch_size"));
  EXPECT_GT(JobTimeoutSeconds(*sweep), kMaxBatchSearchAllowanceS);
  sweep = ParseSweepText(R"({"name": "fit", "search": {"max_batch": {"memory_mb": 512}},
      "matrix": {"model": "mlp", "batch_size": [1, 64], "threads": [1, 2]}})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  EXPECT_EQ(sweep->combination_count, 4u);
  EXPECT_EQ(sweep->Combinations()[1].Spec()["batch_size"], 1);
  // A bad search is the sweep's error, by the job rules.
  sweep = ParseSweepText(R"({"name": "fit", "search": {"max_batch": {"memory_mb": -1}},
      "matrix": {"model": "mlp"}})");
  ASSERT_FALSE(sweep.ok());
  EXPECT_NE(sweep.status().message().find(
                "search.max_batch.memory_mb must be an integer in [1, 1048576], got -1"),
            std::string::npos)
      << sweep.status().ToString();
  // Without a search the batch_size axis stays required, and sweeps without one do not
  // change: their jobs carry no search.
  sweep = ParseSweepText(R"({"name": "plain", "matrix": {"model": "mlp"}})");
  ASSERT_FALSE(sweep.ok());
  EXPECT_EQ(sweep.status().message(), "matrix.batch_size: required");
  sweep = ParseSweepText(R"({"name": "plain", "matrix": {"model": "mlp", "batch_size": 2}})");
  ASSERT_TRUE(sweep.ok());
  EXPECT_EQ(sweep->Combinations()[0].spec.find("search"), std::string::npos);
  EXPECT_EQ(sweep->Combinations()[0].spec.find("replicas"), std::string::npos);
}

}  // namespace
}  // namespace benchfleet

namespace benchfleet {
namespace {

TEST(JobSpecTest, ReplicasAreCopiesOfAJobOfOneCpuProcess) {
  JobSpecError error;
  json job = {{"model", "mlp"},   {"mode", "inference"}, {"dtype", "fp32"}, {"device", "cpu"},
              {"batch_size", 64}, {"threads", 1},        {"replicas", 2}};
  auto parsed = ParseJobConfig(job, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_EQ(parsed->replicas, 2);
  EXPECT_EQ(NeedsOfJobJson(job).value().local_processes, 2);
  job["replicas"] = 0;
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "replicas");
  EXPECT_EQ(error.message, "replicas must be an integer in [1, 4096], got 0");
  job["replicas"] = 2;
  job["device"] = "cuda";
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "replicas");
  job["device"] = "cpu";
  job["search"] = {{"max_batch", {{"memory_mb", 64}}}};
  EXPECT_FALSE(ParseJobConfig(job, &error));
  EXPECT_EQ(error.field, "replicas");
  job.erase("search");
  // Refused with parallel: a gang is one job across processes.
  json gang = job;
  gang["mode"] = "train";
  gang["parallel"] = {{"kind", "data"}, {"world_size", 2}};
  EXPECT_FALSE(ParseJobConfig(gang, &error));
  EXPECT_EQ(error.field, "replicas");
  gang["replicas"] = 1;
  EXPECT_TRUE(ParseJobConfig(gang, &error)) << error.message;
  EXPECT_EQ(NeedsOfJobJson(gang).value().local_processes, 2);  // its ranks
  // The copy a worker runs, as the agent names it.
  json copy = job;
  copy["job_id"] = 3;
  copy["replica"] = {{"index", 1}, {"count", 2}, {"barrier", "/tmp/b"}};
  parsed = ParseJobSpec(copy, &error);
  ASSERT_TRUE(parsed) << error.message;
  EXPECT_EQ(parsed->replica->index, 1);
  copy["replica"]["index"] = 2;
  EXPECT_FALSE(ParseJobSpec(copy, &error));
  EXPECT_EQ(error.field, "replica.index");
  copy["replica"] = {{"index", 0}, {"count", 2}, {"barrier", "relative"}};
  EXPECT_FALSE(ParseJobSpec(copy, &error));
  EXPECT_EQ(error.field, "replica.barrier");
}

TEST(JobSpecTest, ReplicasAreAMatrixAxis) {
  auto sweep = ParseSweepText(R"({"name": "procs or threads", "matrix": {"model": "mlp",
      "batch_size": [1, 64], "replicas": [1, 2], "threads": [2, 1]},
      "exclude": [{"replicas": 2, "threads": 2}, {"replicas": 1, "threads": 1}]})");
  ASSERT_TRUE(sweep.ok()) << sweep.status().ToString();
  const std::vector<Combination> jobs = sweep->Combinations();
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs[0].Spec()["replicas"], 1);
  EXPECT_EQ(jobs[0].Spec()["threads"], 2);
  EXPECT_EQ(jobs[1].Spec()["replicas"], 2);
  EXPECT_EQ(jobs[1].Spec()["threads"], 1);
  sweep = ParseSweepText(
      R"({"name": "r", "matrix": {"model": "mlp", "batch_size": 1, "replicas": [2, -1]}})");
  ASSERT_FALSE(sweep.ok());
  EXPECT_EQ(sweep.status().message(),
            "matrix.replicas[1]: must be a positive integer up to 4096, got -1");
  sweep =
      ParseSweepText(R"({"name": "r", "matrix": {"model": "mlp", "mode": "train", "batch_size": 2,
      "replicas": 2, "parallel": {"kind": "data", "world_size": 2}}})");
  ASSERT_FALSE(sweep.ok());
  EXPECT_NE(sweep.status().message().find("matrix.replicas[0]: replicas are independent copies"),
            std::string::npos)
      << sweep.status().ToString();
}

json Inference(const json& patch) {
  json job = json::parse(R"({"model": "mlp", "mode": "inference", "dtype": "fp32", "device": "cpu",
                             "batch_size": 8, "threads": 1})");
  job.merge_patch(patch);
  return job;
}

std::string Refusal(const json& job, std::string* field = nullptr) {
  JobSpecError error;
  if (ParseJobConfig(job, &error)) return "";
  if (field) *field = error.field;
  return error.message;
}

TEST(JobSpecTest, TorchIsAVersionOrItsPrefix) {
  JobSpecError error;
  for (const char* version : {"2.15", "1.13.1", "2", "2.15.0+cu132"}) {
    auto spec = ParseJobConfig(Inference({{"torch", version}}), &error);
    ASSERT_TRUE(spec) << version << ": " << error.message;
    EXPECT_EQ(spec->torch, version);
  }
  EXPECT_EQ(ParseJobConfig(Inference(json::object()), &error)->torch, "");
  for (const json& bad :
       {json("two"), json(""), json("2..15"), json(".2"), json("2.15."), json("2.15+"), json(2.15),
        json(std::string(kMaxTorchVersionLength + 1, '1'))}) {
    std::string field;
    const std::string why = Refusal(Inference({{"torch", bad}}), &field);
    EXPECT_EQ(field, "torch") << bad.dump();
    EXPECT_NE(why.find("such as \"2.15\""), std::string::npos) << why;
  }
}

TEST(JobSpecTest, TorchVersionsMatchByWholeComponentsAndCompareByNumber) {
  EXPECT_TRUE(TorchVersionMatches("", "2.15.0"));
  EXPECT_TRUE(TorchVersionMatches("2.15", "2.15.0"));
  EXPECT_TRUE(TorchVersionMatches("2.15.0", "2.15.0+cu132"));
  EXPECT_TRUE(TorchVersionMatches("2", "2.15.0"));
  EXPECT_FALSE(TorchVersionMatches("2.1", "2.15.0"));
  EXPECT_FALSE(TorchVersionMatches("2.15.1", "2.15.0"));
  EXPECT_EQ(CompareTorchVersions("2.9.0", "2.15.0"), -1);
  EXPECT_EQ(CompareTorchVersions("2.15.0+cu132", "2.15.0"), 0);
  EXPECT_EQ(CompareTorchVersions("2.15", "2.15.0"), 0);
  EXPECT_EQ(CompareTorchVersions("2.16.0", "2.15.9"), 1);
  EXPECT_EQ(CompareTorchVersions("1.13.1", "1.13.0"), 1);
}

TEST(JobSpecTest, ATechniqueCompilesAZooModelForInference) {
  JobSpecError error;
  for (const char* technique : {"eager", "torchscript", "aoti"}) {
    auto spec = ParseJobConfig(Inference({{"technique", technique}}), &error);
    ASSERT_TRUE(spec) << technique << ": " << error.message;
    EXPECT_EQ(spec->technique, technique);
  }
  EXPECT_EQ(ParseJobConfig(Inference(json::object()), &error)->technique, "eager");
  // int8 goes into a package through PT2E; TorchScript takes it from the eager path only.
  EXPECT_TRUE(ParseJobConfig(Inference({{"technique", "aoti"}, {"dtype", "int8"}}), &error))
      << error.message;
  struct Case {
    json patch;
    std::string field;
    std::string why;
  };
  for (const Case& c : std::vector<Case>{
           {{{"technique", "inductor"}},
            "technique",
            "known techniques: eager, torchscript, aoti, cuda_graph"},
           {{{"technique", "aoti"}, {"mode", "train"}},
            "technique",
            "runs in mode \"inference\" only"},
           {{{"technique", "torchscript"}, {"dtype", "int8"}}, "dtype", "int8 goes through PT2E"},
           {{{"technique", "aoti"},
             {"model", "allreduce"},
             {"batch_size", 1},
             {"parallel", {{"kind", "collective"}, {"world_size", 2}}}},
            "technique",
            "runs eager only"},
           {{{"technique", "aoti"}, {"prune", {{"kind", "magnitude"}, {"sparsity", 0.5}}}},
            "prune",
            "takes no prune"},
           {{{"technique", "aoti"}, {"replicas", 2}}, "replicas", "takes no replicas"},
           {{{"technique", "aoti"}, {"batch_size", 1}, {"scenario", "single_stream"}},
            "scenario",
            "takes no scenario"},
           {{{"technique", 1}}, "technique", "technique must be a string"},
           {{{"technique", "cuda_graph"}}, "technique", "runs on device \"cuda\" only"},
       }) {
    std::string field;
    const std::string why = Refusal(Inference(c.patch), &field);
    EXPECT_EQ(field, c.field) << c.patch.dump() << ": " << why;
    EXPECT_NE(why.find(c.why), std::string::npos) << why;
  }
}

TEST(JobSpecTest, AnAotiModelIsAPackageNamedAsATorchScriptFileIs) {
  JobSpecError error;
  const json package =
      Inference({{"model", "aoti"},
                 {"model_args", {{"sha256", std::string(64, 'a')}, {"inputs", {{1024}}}}}});
  auto spec = ParseJobConfig(package, &error);
  ASSERT_TRUE(spec) << error.message;
  EXPECT_EQ(spec->file.sha256, std::string(64, 'a'));
  EXPECT_EQ(spec->file.inputs, (std::vector<std::vector<std::int64_t>>{{1024}}));
  EXPECT_TRUE(ParseJobConfig(
      Inference({{"model", "aoti"},
                 {"dtype", "bf16"},
                 {"model_args", {{"agent_path", "/models/m.pt2"}, {"inputs", {{3, 8}}}}}}),
      &error))
      << error.message;
  struct Case {
    json patch;
    std::string field;
    std::string why;
  };
  for (const Case& c : std::vector<Case>{
           {{{"model_args", {{"inputs", {{8}}}}}}, "model_args.path", "an AOTInductor package"},
           {{{"model_args", {{"path", "rel.pt2"}, {"inputs", {{8}}}}}},
            "model_args.path",
            "absolute path of an AOTInductor package"},
           {{{"model_args", {{"sha256", std::string(64, 'a')}}}},
            "model_args.inputs",
            "one shape per forward() argument"},
           {{{"model_args",
              {{"sha256", std::string(64, 'a')}, {"inputs", {{8}}}, {"jit", "freeze"}}}},
            "model_args.jit",
            "unknown key \"jit\""},
           {{{"model_args", {{"sha256", std::string(64, 'a')}, {"inputs", {{8}}}}},
             {"mode", "train"}},
            "mode",
            "runs in mode \"inference\" only"},
           {{{"model_args", {{"sha256", std::string(64, 'a')}, {"inputs", {{8}}}}},
             {"dtype", "int8"}},
            "dtype",
            "runs as saved"},
           {{{"model_args", {{"sha256", std::string(64, 'a')}, {"inputs", {{8}}}}},
             {"technique", "aoti"}},
            "technique",
            "compiled already"},
       }) {
    json job = Inference({{"model", "aoti"}});
    job.merge_patch(c.patch);
    std::string field;
    const std::string why = Refusal(job, &field);
    EXPECT_EQ(field, c.field) << c.patch.dump() << ": " << why;
    EXPECT_NE(why.find(c.why), std::string::npos) << why;
  }
  // Not a teacher: a reference runs eager.
  std::string field;
  Refusal(Inference({{"reference",
                      {{"model", "aoti"}, {"model_args", {{"sha256", std::string(64, 'a')}}}}}}),
          &field);
  EXPECT_EQ(field, "reference.model");
}

}  // namespace
}  // namespace benchfleet
