// AdmitResult (coordinator/store/result_admission.h): which results a job can ever have, with
// no store: its kind, its echoed configuration, and its ranks.
#include "coordinator/store/result_admission.h"

#include <gtest/gtest.h>

#include <string>

namespace benchfleet {
namespace {

JobSpec MlpJob() {
  JobSpec job;
  job.model = "mlp";
  job.mode = "inference";
  job.dtype = "fp32";
  job.device = "cpu";
  job.batch_size = 8;
  job.threads = 2;
  job.interop_threads = 1;
  return job;
}

StoredJob Benchmark(JobSpec config) { return StoredJob{7, false, std::move(config)}; }

WorkerResult Ok() {
  WorkerResult result;
  result.ok = true;
  return result;
}

WorkerResult WithRanks(WorkerResult result, int n) {
  for (int i = 0; i < n; ++i) result.ranks.push_back({i, 0, {}, nullptr});
  return result;
}

// The message of a refusal, or "" when admitted.
std::string Refusal(const StoredJob& job, const WorkerResult& result) {
  Status admitted = AdmitResult(job, result);
  if (!admitted.ok()) {
    EXPECT_EQ(admitted.code(), StatusCode::kInvalidArgument);
  }
  return admitted.ok() ? "" : admitted.message();
}

TEST(AdmitResultTest, AResultMustBeOfItsJobsKind) {
  WorkerResult calibration = Ok();
  calibration.calibration_kind = true;
  EXPECT_EQ(Refusal(Benchmark(MlpJob()), calibration),
            "result.kind: job 7 is a benchmark, not a calibration");
  const StoredJob calibration_job{9, true, std::nullopt};
  EXPECT_EQ(Refusal(calibration_job, Ok()),
            "result.kind: job 9 is a calibration; its result must be one");
  EXPECT_EQ(Refusal(calibration_job, calibration), "");
  // A failed result says nothing of its kind: a worker that failed early sends none.
  WorkerResult failed;
  EXPECT_EQ(Refusal(calibration_job, failed), "");
  EXPECT_EQ(Refusal(Benchmark(MlpJob()), failed), "");
}

TEST(AdmitResultTest, AnEchoedFieldMustBeTheJobsAndTheFirstThatIsNotIsNamed) {
  const StoredJob job = Benchmark(MlpJob());
  EXPECT_EQ(Refusal(job, Ok()), "");  // absent fields agree
  struct Case {
    void (*set)(ResultEcho&);
    std::string refusal;
  };
  const Case cases[] = {
      {[](ResultEcho& e) { e.model = "cnn"; }, "result.model: \"cnn\" is not the job's \"mlp\""},
      {[](ResultEcho& e) { e.mode = "train"; },
       "result.mode: \"train\" is not the job's \"inference\""},
      {[](ResultEcho& e) { e.dtype = "int8"; }, "result.dtype: \"int8\" is not the job's \"fp32\""},
      {[](ResultEcho& e) { e.device = "cuda"; },
       "result.device: \"cuda\" is not the job's \"cpu\""},
      {[](ResultEcho& e) { e.batch_size = 16; }, "result.batch_size: 16 is not the job's 8"},
      {[](ResultEcho& e) { e.threads = 1; }, "result.threads: 1 is not the job's 2"},
      {[](ResultEcho& e) { e.interop_threads = 4; },
       "result.interop_threads: 4 is not the job's 1"},
  };
  for (const Case& c : cases) {
    WorkerResult result = Ok();
    c.set(result.echo);
    EXPECT_EQ(Refusal(job, result), c.refusal);
  }
  WorkerResult agreeing = Ok();
  agreeing.echo.model = "mlp";
  agreeing.echo.batch_size = 8;
  agreeing.echo.threads = 2;
  EXPECT_EQ(Refusal(job, agreeing), "");
  // A failed result is held to the same configuration.
  WorkerResult failed;
  failed.echo.dtype = "bf16";
  EXPECT_EQ(Refusal(job, failed), "result.dtype: \"bf16\" is not the job's \"fp32\"");
  // An echo longer than any name is cut in the message.
  WorkerResult long_model = Ok();
  long_model.echo.model = std::string(1000, 'x');
  EXPECT_EQ(Refusal(job, long_model),
            "result.model: \"" + std::string(64, 'x') + "\" is not the job's \"mlp\"");
}

TEST(AdmitResultTest, AGangOnOneAgentReportsEveryRankWhenItSucceeded) {
  JobSpec gang = MlpJob();
  gang.parallel = ParallelSpec{};
  gang.parallel->world_size = 4;
  const StoredJob job = Benchmark(gang);
  EXPECT_EQ(Refusal(job, WithRanks(Ok(), 4)), "");
  EXPECT_EQ(Refusal(job, WithRanks(Ok(), 3)), "result.ranks: 3 ranks for job 7 of 4");
  EXPECT_EQ(Refusal(job, Ok()), "result.ranks: 0 ranks for job 7 of 4");
  EXPECT_EQ(Refusal(job, WithRanks(Ok(), 5)), "result.ranks: 5 ranks for job 7 of 4");
  // A failed gang reports the ranks that got as far as ending, never more than all.
  EXPECT_EQ(Refusal(job, WithRanks(WorkerResult{}, 2)), "");
  EXPECT_EQ(Refusal(job, WorkerResult{}), "");
  EXPECT_EQ(Refusal(job, WithRanks(WorkerResult{}, 5)), "result.ranks: 5 ranks for job 7 of 4");
}

TEST(AdmitResultTest, ReplicasReportEachCopyAsAGangReportsEachRank) {
  JobSpec replicas = MlpJob();
  replicas.replicas = 3;
  EXPECT_EQ(Refusal(Benchmark(replicas), WithRanks(Ok(), 3)), "");
  EXPECT_EQ(Refusal(Benchmark(replicas), WithRanks(Ok(), 2)),
            "result.ranks: 2 ranks for job 7 of 3");
}

TEST(AdmitResultTest, AJobOfOneProcessOrOneRankOfASpreadGangHasNoRanks) {
  EXPECT_EQ(Refusal(Benchmark(MlpJob()), WithRanks(Ok(), 1)),
            "result.ranks: 1 ranks for job 7 of 1");
  // A rank of a gang spread over agents reports as a job of its own.
  JobSpec rank = MlpJob();
  rank.parallel = ParallelSpec{};
  rank.distributed = DistributedSpec{};
  rank.distributed->world_size = 2;
  EXPECT_EQ(Refusal(Benchmark(rank), Ok()), "");
  EXPECT_EQ(Refusal(Benchmark(rank), WithRanks(Ok(), 2)), "result.ranks: 2 ranks for job 7 of 2");
  const StoredJob calibration{9, true, std::nullopt};
  WorkerResult calibrated = WithRanks(Ok(), 1);
  calibrated.calibration_kind = true;
  EXPECT_EQ(Refusal(calibration, calibrated), "result.ranks: 1 ranks for job 9 of 1");
}

}  // namespace
}  // namespace benchfleet
