#include "coordinator/store/result_writer.h"

#include <algorithm>

#include "common/clock.h"
#include "common/job_spec.h"
#include "common/result_fields.h"
#include "coordinator/core/fingerprint.h"
#include "coordinator/store/result_admission.h"
#include "coordinator/store/sample_blob.h"

namespace benchfleet {
namespace {

// The results row: one statement for every result, its text built once (per result it
// cost as much as a tenth of storing one under load). Every column is named; one a
// result has no value for is left unbound, NULL, as an INSERT naming fewer would.
enum ResultColumn : int {  // parameter positions, from 1
  kResultJobId = 1,
  kResultSweepId,
  kResultAttempt,
  kResultHostId,
  kResultOk,
  kResultDetail,
  kResultReceivedAt,
  kResultError,
  // The job's configuration, the coordinator's own (from the job it handed out).
  kResultDevice,
  kResultModel,
  kResultMode,
  kResultDtype,
  kResultBatchSize,
  kResultThreads,
  kResultInteropThreads,
  kResultOnednn,
  kResultModelArgs,
  kResultPeakGflops,
  kResultFractionOfPeak,
  kResultFingerprint,
  kResultSeries,
  kResultSeriesKey,  // docs/regressions.md
  kResultFirstField  // then one per declared field with a column (ResultFields())
};

const std::string& ResultRowSql() {
  static const std::string sql = [] {
    std::string names =
        "job_id, sweep_id, attempt, host_id, ok, detail, received_at, error, device, model, mode, "
        "dtype, batch_size, threads, interop_threads, onednn, model_args, peak_gflops, "
        "fraction_of_peak, fingerprint, series, series_key";
    std::string slots;
    for (int i = 1; i < kResultFirstField; ++i) slots += (i > 1 ? ", ?" : "?") + std::to_string(i);
    int next = kResultFirstField;
    for (const ResultField& field : ResultFields()) {
      if (field.column.empty()) continue;
      names += ", " + field.column;
      slots += ", ?" + std::to_string(next++);
    }
    return "INSERT INTO results(" + names + ") VALUES (" + slots + ")";
  }();
  return sql;
}

// The parameter of ResultFields()[i] in ResultRowSql(); 0 for a field without a column.
int ResultFieldSlot(size_t i) {
  static const std::vector<int> slots = [] {
    std::vector<int> out;
    int next = kResultFirstField;
    for (const ResultField& field : ResultFields())
      out.push_back(field.column.empty() ? 0 : next++);
    return out;
  }();
  return slots[i];
}

// One rank's row of result_ranks: job_id, rank, host_id, detail, then RankFields()'
// columns (the rank among them: its column is declared in the CREATE TABLE and bound
// from the field).
const std::string& RankRowSql() {
  static const std::string sql = [] {
    std::string names = "job_id, host_id, detail";
    std::string slots = "?1, ?2, ?3";
    int next = 4;
    for (const ResultField& field : RankFields()) {
      if (field.column.empty()) continue;
      names += ", " + field.column;
      slots += ", ?" + std::to_string(next++);
    }
    return "INSERT INTO result_ranks(" + names + ") VALUES (" + slots + ")";
  }();
  return sql;
}

}  // namespace

const char* ResultOutcomeName(ResultOutcome outcome) {
  switch (outcome) {
    case ResultOutcome::kStored:
      return "stored";
    case ResultOutcome::kDuplicate:
      return "duplicate";
    case ResultOutcome::kStale:
    case ResultOutcome::kStaleAgain:
      return "stale";
    case ResultOutcome::kRejected:
      return "rejected";
  }
  return "?";
}

StatusOr<ResultOutcome> ResultWriter::Write(int64_t job_id, int attempt, int64_t host_id,
                                            const std::string& host_name,
                                            const WorkerResult& result, std::string* rejection,
                                            std::optional<JudgedResult>* judged) {
  std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());

  ASSIGN_OR_RETURN(
      auto find, db_->Prepare("SELECT j.state, j.attempts, j.sweep_id, r.attempt, j.kind, j.spec, "
                              "j.confirms_job_id "
                              "FROM jobs j LEFT JOIN results r ON r.job_id = j.job_id "
                              "WHERE j.job_id = ?1"));
  find.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool found, find.Step());
  std::string stale_reason;
  int64_t sweep_id = 0;
  std::string kind = "benchmark";
  json spec = json::object();
  // The job as stored: what the result is admitted against, and whose configuration
  // its row takes (parsed once, not copied).
  StoredJob stored{job_id, false, std::nullopt};
  std::optional<JobSpec>& job = stored.config;
  std::optional<int64_t> confirms_job_id;
  if (!found) {
    stale_reason = "no such job";
  } else {
    std::string state = find.Text(0);
    int current_attempt = static_cast<int>(find.Int(1));
    sweep_id = find.Int(2);
    kind = find.Text(4);
    spec = json::parse(find.Text(5), nullptr, false);
    if (!find.IsNull(6)) confirms_job_id = find.Int(6);
    if (!find.IsNull(3) && find.Int(3) == attempt) {
      return ResultOutcome::kDuplicate;  // the transaction rolls back: nothing to write
    }
    stored.calibration = kind == "calibration";
    if (!stored.calibration) {
      JobSpecError error;
      job = ParseJobConfig(spec, &error);
      if (!job)
        return Internal("stored job " + std::to_string(job_id) +
                        " does not parse: " + error.message);
    }
    if (Status admitted = AdmitResult(stored, result); !admitted.ok()) {
      *rejection = admitted.message();
      return ResultOutcome::kRejected;
    }
    // The fence: only the latest attempt may deliver, and only while the job is open.
    // A job requeued after its agent went silent but not yet handed out again still
    // takes the late result of that attempt: the work is valid and nothing ran twice.
    if (state != "running" && state != "queued") {
      stale_reason = "job is " + state;
    } else if (current_attempt != attempt) {
      stale_reason = "attempt " + std::to_string(attempt) + " was superseded by attempt " +
                     std::to_string(current_attempt);
    }
  }

  const std::string detail_text =
      result.detail.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!stale_reason.empty()) {
    ASSIGN_OR_RETURN(
        auto stale, db_->Prepare("INSERT INTO stale_results(job_id, attempt, host, reason, detail, "
                                 "received_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                                 "ON CONFLICT(job_id, attempt, host) DO NOTHING"));
    RETURN_IF_ERROR(stale.Bind(1, job_id)
                        .Bind(2, attempt)
                        .Bind(3, host_name)
                        .Bind(4, stale_reason)
                        .Bind(5, detail_text)
                        .Bind(6, now)
                        .Run());
    // A resend that crossed the first ack finds its row there (008_stale_once.sql).
    const bool recorded = db_->Changes() == 1;
    RETURN_IF_ERROR(tx.Commit());
    return recorded ? ResultOutcome::kStale : ResultOutcome::kStaleAgain;
  }

  const bool ok = result.ok;
  ASSIGN_OR_RETURN(auto row, db_->Prepare(ResultRowSql()));
  row.Bind(kResultJobId, job_id)
      .Bind(kResultSweepId, sweep_id)
      .Bind(kResultAttempt, static_cast<int64_t>(attempt))
      .Bind(kResultHostId, host_id)
      .Bind(kResultOk, static_cast<int64_t>(ok ? 1 : 0))
      .Bind(kResultDetail, detail_text)
      .Bind(kResultReceivedAt, now);
  if (!ok) row.Bind(kResultError, result.error);
  if (job) {
    // A search's figures are those of the batch it found (search.max_batch), not of the
    // batch_size it started from.
    const json& searched = ResultValue(result, "max_batch");
    const int64_t batch_size =
        searched.is_number_integer() ? searched.get<int64_t>() : job->batch_size;
    row.Bind(kResultDevice, job->device)
        .Bind(kResultModel, job->model)
        .Bind(kResultMode, job->mode)
        .Bind(kResultDtype, job->dtype)
        .Bind(kResultBatchSize, batch_size)
        .Bind(kResultThreads, job->threads)
        .Bind(kResultInteropThreads, job->interop_threads)
        .Bind(kResultOnednn, static_cast<int64_t>(job->onednn ? 1 : 0))
        .Bind(kResultModelArgs, spec.value("model_args", json::object()).dump());
  }
  for (size_t i = 0; i < ResultFields().size() && i < result.values.size(); ++i) {
    if (const int slot = ResultFieldSlot(i); slot > 0) row.BindJson(slot, result.values[i]);
  }
  // Its series: this job on its host's fingerprint (docs/regressions.md).
  std::string series;
  if (job && kind == "benchmark") {
    // The fingerprint of the worker that ran it (an agent may carry several LibTorches).
    const json& torch_version = ResultValue(result, "torch_version");
    ASSIGN_OR_RETURN(
        std::string fingerprint,
        hosts_->FingerprintOf(host_id,
                              torch_version.is_string() ? torch_version.get<std::string>() : ""));
    if (!fingerprint.empty()) {
      series = SeriesOf(fingerprint, spec);
      row.Bind(kResultFingerprint, fingerprint).Bind(kResultSeries, series);
      if (const std::optional<int64_t> key = SeriesKeyOf(series)) row.Bind(kResultSeriesKey, *key);
    }
  }
  const json& gflops = ResultValue(result, "gflops");
  if (ok && job && gflops.is_number()) {
    ASSIGN_OR_RETURN(json peak, hosts_->PeakFor(host_id, job->device, job->dtype, job->threads));
    if (peak.is_number() && peak.get<double>() > 0) {
      row.BindJson(kResultPeakGflops, peak);
      row.Bind(kResultFractionOfPeak, gflops.get<double>() / peak.get<double>());
    }
  }
  RETURN_IF_ERROR(row.Run());
  if (!result.ranks.empty()) {
    ASSIGN_OR_RETURN(auto rank_row, db_->Prepare(RankRowSql()));
    for (const WorkerResult::Rank& rank : result.ranks) {
      rank_row.Reset();
      rank_row.Bind(1, job_id)
          .Bind(2, rank.host_id != 0 ? rank.host_id : host_id)
          .Bind(3, rank.detail.dump(-1, ' ', false, json::error_handler_t::replace));
      int slot = 4;
      for (size_t i = 0; i < RankFields().size() && i < rank.values.size(); ++i) {
        if (!RankFields()[i].column.empty()) rank_row.BindJson(slot++, rank.values[i]);
      }
      RETURN_IF_ERROR(rank_row.Run());
    }
  }

  if (ok && !result.op_profile.empty()) {
    ASSIGN_OR_RETURN(auto op_row,
                     db_->Prepare("INSERT INTO op_profile(job_id, op, calls, self_us, total_us, "
                                  "input_shapes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    for (const OpProfileRow& op : result.op_profile) {  // unique ops: checked at the edge
      op_row.Reset();
      RETURN_IF_ERROR(op_row.Bind(1, job_id)
                          .Bind(2, op.op)
                          .Bind(3, op.calls)
                          .Bind(4, op.self_us)
                          .Bind(5, op.total_us)
                          .Bind(6, op.input_shapes)
                          .Run());
    }
  }
  if (ok && !result.samples_ms.empty()) {
    ASSIGN_OR_RETURN(auto samples, db_->Prepare("INSERT INTO result_samples(job_id, n, ms_f32le) "
                                                "VALUES (?1, ?2, ?3)"));
    RETURN_IF_ERROR(samples.Bind(1, job_id)
                        .Bind(2, static_cast<int64_t>(result.samples_ms.size()))
                        .BindBlob(3, PackSamples(result.samples_ms))
                        .Run());
  }
  if (ok && kind == "calibration") RETURN_IF_ERROR(WriteCalibration(job_id, host_id, result, now));

  ASSIGN_OR_RETURN(auto finish, db_->Prepare("UPDATE jobs SET state = ?2, error = ?3, "
                                             "finished_at = ?4 WHERE job_id = ?1"));
  finish.Bind(1, job_id).Bind(2, ok ? "done" : "failed").Bind(4, now);
  if (ok) {
    finish.BindNull(3);
  } else {
    finish.Bind(3, result.error);
  }
  RETURN_IF_ERROR(finish.Run());
  if (db_->group_open()) {
    sweeps_to_finish_.insert(sweep_id);  // judged once at CommitGroup
  } else {
    RETURN_IF_ERROR(jobs_->FinishSweepIfComplete(sweep_id));
  }
  RETURN_IF_ERROR(tx.Commit());
  if (judged != nullptr && job && kind == "benchmark") {
    JudgedResult r;
    r.job_id = job_id;
    r.host_id = host_id;
    r.host = host_name;
    r.model = job->model;
    r.series = std::move(series);
    if (const json& median = ResultValue(result, "median_ms"); median.is_number())
      r.median_ms = median.get<double>();
    for (const auto& [name, out] : {std::make_pair("median_ci_low_ms", &r.median_ci_low_ms),
                                    std::make_pair("median_ci_high_ms", &r.median_ci_high_ms)}) {
      if (const json& value = ResultValue(result, name); value.is_number())
        *out = value.get<double>();
    }
    r.ok = ok;
    r.unsteady = ResultValue(result, "unsteady") == true;
    r.confirms_job_id = confirms_job_id;
    r.sweep_id = sweep_id;
    if (const json& pace = ResultValue(result, "host_pace_ms"); pace.is_number())
      r.host_pace_ms = pace.get<double>();
    *judged = std::move(r);
  }
  return ResultOutcome::kStored;
}

Status ResultWriter::WriteCalibration(int64_t job_id, int64_t host_id, const WorkerResult& result,
                                      const std::string& now) {
  ColumnValues columns = {{"host_id", host_id}, {"job_id", job_id}, {"measured_at", now}};
  const auto& fields = CalibrationFields();
  for (size_t i = 0; i < fields.size() && i < result.calibration_values.size(); ++i) {
    if (!fields[i].column.empty())
      columns.emplace_back(fields[i].column, result.calibration_values[i]);
  }
  json gpus = json::array();
  if (const json* listed = FindPath(result.calibration, "gpus")) gpus = *listed;
  columns.emplace_back("gpus", gpus.dump(-1, ' ', false, json::error_handler_t::replace));
  columns.emplace_back("detail",
                       result.calibration.dump(-1, ' ', false, json::error_handler_t::replace));
  return InsertRow(*db_, "calibrations", columns);
}

Status ResultWriter::FinishGroupSweeps() {
  std::set<int64_t> sweeps = std::move(sweeps_to_finish_);
  sweeps_to_finish_.clear();
  for (int64_t sweep_id : sweeps) {
    Transaction tx(*db_);
    RETURN_IF_ERROR(tx.Begin());
    RETURN_IF_ERROR(jobs_->FinishSweepIfComplete(sweep_id));
    RETURN_IF_ERROR(tx.Commit());
  }
  return Status::Ok();
}

}  // namespace benchfleet
