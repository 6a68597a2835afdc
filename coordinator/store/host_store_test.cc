// HostStore (coordinator/store/host_store.h): calibrations of a host's machine and the peaks
// its results are read against.
#include "coordinator/store/store_fixture.h"

namespace benchfleet {
namespace {

TEST_F(StoreTest, CalibrationsGoFirstAndSetTheFractionOfPeak) {
  ASSERT_TRUE(StoreWholeSweep(MakeSweep(R"({"name":"s","matrix":{"model":["mlp"],
      "batch_size":[1],"threads":[1,2]}})"),
                              {{"cpu", {"node-a"}}})
                  .ok());
  ASSERT_TRUE(store_->jobs().CreateCalibration({"node-a"}, 600).ok());
  auto queued = QueuedFor("node-a");
  ASSERT_EQ(queued.size(), 3u);
  EXPECT_EQ(queued[0].kind, "calibration");  // dispatched before the older benchmarks
  int64_t calibration_job = queued[0].job_id;
  ASSERT_TRUE(store_->jobs().MarkRunning(calibration_job, host_).ok());
  const json calibration = {{"ok", true},
                            {"kind", "calibration"},
                            {"calibration",
                             {{"cpu",
                               {{"gemm_gflops_all", 200.0},
                                {"gemm_threads_all", 2},
                                {"gemm_gflops_1", 110.0},
                                {"stream_triad_gbps_all", 20.0}}},
                              {"gpus", json::array()}}}};
  ASSERT_EQ(*Deliver(calibration_job, 1, calibration), ResultOutcome::kStored);
  EXPECT_EQ(Count("select count(*) from host_calibration where host = 'node-a'"), 1);
  EXPECT_EQ(Count("select count(*) from result_summary"), 0);  // not a benchmark row

  // One thread: compared with one CPU's peak. Two threads: with the all-CPU peak.
  for (int i = 1; i <= 2; ++i) {
    int64_t job = queued[i].job_id;
    ASSERT_TRUE(store_->jobs().MarkRunning(job, host_).ok());
    json result = GoodResult(static_cast<int>(json::parse(queued[i].spec)["batch_size"]));
    result["threads"] = json::parse(queued[i].spec)["threads"];
    result["gflops"] = 55.0;
    ASSERT_TRUE(Deliver(job, 1, result).ok());
  }
  auto rows = Query(
      "select threads, peak_gflops, fraction_of_peak from result_summary order by threads", 10);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows->rows[0][1].get<double>(), 110.0);
  EXPECT_DOUBLE_EQ(rows->rows[0][2].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(rows->rows[1][1].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(rows->rows[1][2].get<double>(), 55.0 / 200.0);
}

// A GPU result is read against its GPU's GEMM peak for its own dtype; a calibration
// from before a figure existed gives no peak for that dtype, not another dtype's.
TEST_F(StoreTest, AGpuResultIsReadAgainstItsGpusPeakForItsDtype) {
  ASSERT_TRUE(store_->jobs().CreateCalibration({"node-a"}, 600).ok());
  const QueuedJob calibration_job = QueuedFor("node-a").at(0);
  ASSERT_TRUE(store_->jobs().MarkRunning(calibration_job.job_id, host_).ok());
  const json calibration = {
      {"ok", true},
      {"kind", "calibration"},
      {"calibration",
       {{"cpu",
         {{"gemm_gflops_all", 200.0},
          {"gemm_threads_all", 2},
          {"gemm_gflops_1", 110.0},
          {"gemm_bf16_gflops_all", 400.0},
          {"gemm_bf16_gflops_1", 220.0}}},
        {"gpus",
         json::array(
             {{{"sgemm_gflops", 50000.0}, {"tf32_gflops", 400000.0}, {"bf16_gflops", 800000.0}},
              {{"sgemm_gflops", 40000.0}}})}}}};
  ASSERT_EQ(*Deliver(calibration_job.job_id, 1, calibration), ResultOutcome::kStored);
  ASSERT_TRUE(StoreWholeSweep(MakeSweep(R"({"name":"g","placement":"any","matrix":{"model":"mlp",
      "batch_size":8,"device":["cuda:0","cuda:1","cpu"],"dtype":["fp32","tf32","bf16"]},
      "exclude":[{"device":"cpu","dtype":"tf32"}]})"),
                              {})
                  .ok());
  for (const QueuedJob& job : QueuedFor("node-a")) {
    const json spec = json::parse(job.spec);
    ASSERT_TRUE(store_->jobs().MarkRunning(job.job_id, host_).ok());
    json result = GoodResult(8);
    result["device"] = spec["device"];
    result["dtype"] = spec["dtype"];
    result["gflops"] = 20000.0;
    auto stored = Deliver(job.job_id, 1, result);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(*stored, ResultOutcome::kStored);
  }
  auto rows =
      Query("select device, dtype, peak_gflops from result_summary order by device, dtype", 10);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  const std::vector<std::vector<json>> expected = {
      {"cpu", "bf16", 220.0},       {"cpu", "fp32", 110.0},  // one thread: one CPU's peak
      {"cuda:0", "bf16", 800000.0}, {"cuda:0", "fp32", 50000.0}, {"cuda:0", "tf32", 400000.0},
      {"cuda:1", "bf16", nullptr},  {"cuda:1", "fp32", 40000.0}, {"cuda:1", "tf32", nullptr}};
  ASSERT_EQ(rows->rows.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(rows->rows[i][0], expected[i][0]) << i;
    EXPECT_EQ(rows->rows[i][1], expected[i][1]) << i;
    EXPECT_EQ(rows->rows[i][2], expected[i][2]) << rows->rows[i][0] << " " << rows->rows[i][1];
  }
}

// A GPU's GEMM peaks are checked as they arrive: a number >= 0, or absent.
TEST_F(StoreTest, ACalibrationWithAMalformedGpuPeakIsRefused) {
  for (const char* field : {"sgemm_gflops", "tf32_gflops", "bf16_gflops"}) {
    const json calibration = {{"ok", true},
                              {"kind", "calibration"},
                              {"calibration", {{"gpus", json::array({{{field, "fast"}}})}}}};
    auto parsed = ParseWorkerResult(calibration);
    ASSERT_FALSE(parsed.ok()) << field;
    EXPECT_EQ(parsed.status().message(), std::string("result.calibration.gpus[0].") + field +
                                             ": must be a number >= 0 or null");
  }
}

TEST_F(StoreTest, ACalibrationIsPendingOnTheMachineOfItsAgentAloneUntilItsResult) {
  const int64_t other =
      *store_->hosts().UpsertHost("node-b", "m2", json::array(), {{"host", {{"cpu_model", "x"}}}});
  ASSERT_TRUE(StoreWholeSweep(MakeSweep(R"({"name":"s","matrix":{"model":["mlp"],
      "batch_size":[1,2,4,8],"threads":[1,2,3]}})"),
                              {{"cpu", {"node-a", "node-b"}}})
                  .ok());
  EXPECT_FALSE(*store_->hosts().CalibrationPending("m1"));  // benchmark jobs are no calibrations
  ASSERT_TRUE(store_->jobs().CreateCalibration({"node-a"}, 600).ok());
  EXPECT_TRUE(*store_->hosts().CalibrationPending("m1"));
  EXPECT_FALSE(*store_->hosts().CalibrationPending("m2"));
  const QueuedJob calibration = QueuedFor("node-a").at(0);
  ASSERT_EQ(calibration.kind, "calibration");
  ASSERT_TRUE(store_->jobs().MarkRunning(calibration.job_id, host_).ok());
  EXPECT_TRUE(*store_->hosts().CalibrationPending("m1"));  // running is pending too
  const json result = {{"ok", true},
                       {"kind", "calibration"},
                       {"calibration",
                        {{"cpu",
                          {{"gemm_gflops_all", 200.0},
                           {"gemm_threads_all", 2},
                           {"gemm_gflops_1", 110.0},
                           {"stream_triad_gbps_all", 20.0}}},
                         {"gpus", json::array()}}}};
  ASSERT_EQ(*Deliver(calibration.job_id, 1, result), ResultOutcome::kStored);
  EXPECT_FALSE(*store_->hosts().CalibrationPending("m1"));
  (void)other;
}

}  // namespace
}  // namespace benchfleet
