// The views over stored results (schemas/views.sql), each fed through the stores as the
// coordinator feeds them.
#include "coordinator/store/store_fixture.h"

namespace benchfleet {
namespace {

TEST_F(StoreTest, ResultSummaryHasTheDocumentedColumns) {
  ASSERT_TRUE(StoreWholeSweep(MakeSweep(kTwoJobs), {}).ok());
  int64_t job = QueuedFor("node-a").front().job_id;
  ASSERT_TRUE(store_->jobs().MarkRunning(job, host_).ok());
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

TEST_F(StoreTest, ComparisonViewsPairIdenticalConfigurations) {
  // Three jobs of one configuration: fp32 at 1 and 2 threads, int8 at 1 thread.
  auto sweep = MakeSweep(R"({"name":"v","placement":"any","matrix":{"model":["mlp"],
      "batch_size":[8],"dtype":["fp32","int8"],"threads":[1,2]}})");
  ASSERT_TRUE(StoreWholeSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 4u);
  std::map<std::pair<std::string, int>, double> medians = {
      {{"fp32", 1}, 4.0}, {{"fp32", 2}, 2.5}, {{"int8", 1}, 2.0}};
  for (const QueuedJob& job : queued) {
    const std::string dtype = json::parse(job.spec)["dtype"];
    const int threads = json::parse(job.spec)["threads"];
    auto median = medians.find({dtype, threads});
    if (median == medians.end()) continue;  // int8 at 2 threads stays queued
    ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(8);
    result["dtype"] = dtype;
    result["threads"] = threads;
    result["stats"]["median_ms"] = median->second;
    if (dtype == "int8") {
      result["accuracy"] = {{"max_abs_err", 0.02},
                            {"mean_abs_err", 0.004},
                            {"rel_err", 0.01},
                            {"top1_agreement", 0.98}};
    }
    auto stored = Deliver(job.job_id, 1, result);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(*stored, ResultOutcome::kStored);
  }
  auto threads = Query(
      "select threads, speedup, parallel_efficiency from thread_scaling where dtype = 'fp32' "
      "order by threads",
      10);
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
  ASSERT_TRUE(StoreWholeSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 6u);
  struct Run {
    double median_ms;
    bool noisy;
  };
  // (device, threads, checkpointing) -> what it measured.
  const std::map<std::tuple<std::string, int, bool>, Run> runs = {
      {{"cpu", 1, false}, {4.0, false}},
      {{"cpu", 2, false}, {1.0, true}},  // fastest plain CPU run, but noisy
      {{"cpu", 1, true}, {0.1, false}},  // a technique the GPU did not run
      {{"cpu", 2, true}, {0.2, false}},
      {{"cuda:0", 1, false}, {0.4, true}},  // fastest GPU run, but noisy
      {{"cuda:0", 2, false}, {0.5, false}}};
  for (const QueuedJob& job : queued) {
    const json spec = json::parse(job.spec);
    const Run& run = runs.at({spec["device"], spec["threads"], spec.value("checkpointing", false)});
    ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
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
  auto rows = Query(
      "select cpu_threads, gpu_device, gpu_threads, cpu_median_ms, gpu_median_ms, speedup, "
      "cpu_throughput_per_s, gpu_throughput_per_s from cpu_gpu_speedup",
      10);
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
  EXPECT_TRUE(
      Query("select sweep_id, host, model, model_args, mode, dtype, batch_size, cpu_threads, "
            "gpu_device, cpu_median_ms, gpu_median_ms, speedup, cpu_throughput_per_s, "
            "gpu_throughput_per_s, cpu_job_id, gpu_job_id from cpu_gpu_speedup",
            10)
          .ok());
}

TEST_F(StoreTest, PruneComparisonSetsEachPrunedResultAgainstTheUnprunedOne) {
  auto sweep = MakeSweep(R"({"name":"p","placement":"any","matrix":{"model":"mlp","batch_size":8,
      "prune":[null,{"kind":"structured","ratio":0.5},{"kind":"magnitude","sparsity":0.5}]}})");
  ASSERT_TRUE(StoreWholeSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 3u);
  for (const QueuedJob& job : queued) {
    const json prune = json::parse(job.spec).value("prune", json(nullptr));
    ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
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
      result["accuracy"] = {{"max_abs_err", 0.3},
                            {"mean_abs_err", 0.1},
                            {"rel_err", 0.2},
                            {"top1_agreement", structured ? 0.75 : 0.875}};
    }
    auto stored = Deliver(job.job_id, 1, result);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(*stored, ResultOutcome::kStored);
  }
  auto rows = Query(
      "select prune_kind, prune_amount, speedup, params_unpruned, params, params_share, "
      "weight_sparsity, "
      "top1_agreement from prune_comparison order by prune_kind",
      10);
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
  EXPECT_EQ(Count("select count(*) from result_summary where prune_kind is null and params = 1000"),
            1);
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

TEST_F(StoreTest, ProfiledOperatorsAreKeptAndComparedAcrossDtypesAndThreads) {
  // fp32 at 1 and 2 threads and int8 at 1 thread, profiled; the baseline is fp32 at 1.
  auto sweep = MakeSweep(R"({"name":"ops","placement":"any","matrix":{"model":"mlp","batch_size":8,
      "dtype":["fp32","int8"],"threads":[1,2],"profile":true},
      "exclude":[{"dtype":"int8","threads":2}]})");
  ASSERT_TRUE(StoreWholeSweep(sweep, {}).ok());
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
    ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(8);
    result["dtype"] = dtype;
    result["threads"] = threads;
    result["profile_iterations"] = 4;
    result["op_profile"] = {
        {{"op", "aten::addmm"},
         {"calls", 8},
         {"self_us", addmm_us.at({dtype, threads})},
         {"total_us", 900},
         {"input_shapes", {{10}, {8, 32}, {32, 10}, json::array(), json::array()}}}};
    if (dtype == "int8") {
      result["op_profile"].push_back({{"op", "quantized::linear_dynamic"},
                                      {"calls", 8},
                                      {"self_us", 300},
                                      {"total_us", 320},
                                      {"input_shapes", {{8, 32}, json::array()}}});
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
      "select dtype, threads, op, self_us_per_iter, self_us_per_call, base_threads, "
      "base_self_us_per_iter, "
      "speedup from op_comparison order by dtype, threads, op",
      10);
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
  ASSERT_TRUE(StoreWholeSweep(sweep, {}).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 2u);
  for (const QueuedJob& job : queued) {
    const bool checkpointing = json::parse(job.spec)["checkpointing"];
    ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(4);
    result["model"] = "cnn";
    result["mode"] = "train";
    result["stats"]["median_ms"] = checkpointing ? 3.0 : 2.0;
    result["step_peak_alloc_mb"] = checkpointing ? 30.0 : 120.0;
    ASSERT_EQ(*Deliver(job.job_id, 1, result), ResultOutcome::kStored);
  }
  auto rows = Query(
      "select plain_median_ms, checkpointed_median_ms, time_ratio, memory_ratio "
      "from checkpointing_comparison",
      10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows->rows[0][2].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(rows->rows[0][3].get<double>(), 0.25);
}

}  // namespace
}  // namespace benchfleet
