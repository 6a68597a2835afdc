#include "coordinator/store/process_results.h"

#include <algorithm>
#include <cmath>

#include "common/clock.h"
#include "common/job_spec.h"
#include "common/limits.h"
#include "common/ratio_interval.h"
#include "coordinator/store/result_admission.h"

namespace benchfleet {
namespace {

using nlohmann::json;

double Number(const json& result, const char* section, const char* key, double fallback = 0) {
  const json* holder = section ? (result.contains(section) ? &result[section] : nullptr) : &result;
  if (holder == nullptr || !holder->is_object()) return fallback;
  const auto it = holder->find(key);
  return it != holder->end() && it->is_number() ? it->get<double>() : fallback;
}

std::optional<double> MaybeNumber(const json& result, const char* section, const char* key) {
  const json* holder = result.contains(section) ? &result[section] : nullptr;
  if (holder == nullptr || !holder->is_object()) return std::nullopt;
  const auto it = holder->find(key);
  return it != holder->end() && it->is_number() ? std::optional<double>(it->get<double>())
                                                : std::nullopt;
}

}  // namespace

ProcessFigures FiguresOfResult(const json& result) {
  ProcessFigures p;
  p.median_ms = Number(result, "stats", "median_ms");
  p.ci_low_ms = MaybeNumber(result, "stats", "median_ci_low_ms");
  p.ci_high_ms = MaybeNumber(result, "stats", "median_ci_high_ms");
  p.samples = static_cast<int64_t>(Number(result, "stats", "n"));
  p.timed_s = Number(result, "stats", "timed_s");
  p.wall_s = Number(result, nullptr, "worker_wall_s");
  return p;
}

Status KeepProcess(Database& db, int64_t job_id, int64_t process, int attempt, int64_t host_id,
                   const json& sent) {
  const ProcessFigures figures = FiguresOfResult(sent);
  ColumnValues row = {{"job_id", job_id},
                      {"process", process},
                      {"attempt", static_cast<int64_t>(attempt)},
                      {"host_id", host_id},
                      {"median_ms", figures.median_ms},
                      {"samples", figures.samples},
                      {"received_at", UtcNowIso8601()},
                      {"detail", sent.dump(-1, ' ', false, json::error_handler_t::replace)}};
  if (figures.ci_low_ms) row.emplace_back("median_ci_low_ms", *figures.ci_low_ms);
  if (figures.ci_high_ms) row.emplace_back("median_ci_high_ms", *figures.ci_high_ms);
  return InsertRow(db, "result_processes", row);
}

StatusOr<ProcessStep> KeptProcesses(Database& db, int64_t job_id) {
  ProcessStep step;
  ASSIGN_OR_RETURN(
      auto all,
      db.Prepare("SELECT detail FROM result_processes WHERE job_id = ?1 ORDER BY process"));
  all.Bind(1, job_id);
  while (true) {
    ASSIGN_OR_RETURN(bool row, all.Step());
    if (!row) break;
    step.results.push_back(json::parse(all.Text(0), nullptr, false));
    step.figures.push_back(FiguresOfResult(step.results.back()));
  }
  return step;
}

StatusOr<ProcessStep> ProcessResults::Record(int64_t job_id, int attempt, int64_t host_id,
                                             const std::string& agent, const WorkerResult& result,
                                             const json& sent) {
  ProcessStep step;
  if (!result.ok || !result.ranks.empty()) return step;
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(
      auto find, db_->Prepare("SELECT j.state, j.attempts, j.kind, j.spec, "
                              "EXISTS (SELECT 1 FROM results r WHERE r.job_id = j.job_id), "
                              "EXISTS (SELECT 1 FROM result_processes p WHERE p.job_id = j.job_id "
                              "AND p.attempt = ?2), "
                              // Repeated at all: decided in SQL, so that the
                              // result of a job of one process costs no parse.
                              "coalesce(json_extract(j.spec, '$.processes'), 1) > 1 OR "
                              "json_type(j.spec, '$.precision') IN ('real', 'integer') "
                              "FROM jobs j WHERE j.job_id = ?1"));
  find.Bind(1, job_id).Bind(2, static_cast<int64_t>(attempt));
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found || find.Text(2) != "benchmark" || find.Int(4) != 0 || find.Int(6) == 0) return step;
  const std::string state = find.Text(0);
  const bool open = state == "running" || state == "queued";
  const bool current = find.Int(1) == attempt;
  const bool kept_before = find.Int(5) != 0;
  JobSpecError error;
  const std::optional<JobSpec> job =
      ParseJobConfig(json::parse(find.Text(3), nullptr, false), &error);
  if (!job || (job->processes == 1 && !job->precision)) return step;
  // What the fence and admission refuse is ResultWriter::Write's to record or refuse.
  if (!kept_before && (!open || !current)) return step;
  if (!AdmitResult(StoredJob{job_id, false, job}, result).ok()) return step;
  ASSIGN_OR_RETURN(auto count_stmt,
                   db_->Prepare("SELECT count(*) FROM result_processes WHERE job_id = ?1"));
  count_stmt.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool counted, count_stmt.Step());
  const int64_t kept = counted ? count_stmt.Int(0) : 0;
  if (!kept_before) RETURN_IF_ERROR(KeepProcess(*db_, job_id, kept, attempt, host_id, sent));
  {
    ASSIGN_OR_RETURN(ProcessStep kept_processes, KeptProcesses(*db_, job_id));
    step.results = std::move(kept_processes.results);
    step.figures = std::move(kept_processes.figures);
  }
  RepeatRequest request;
  request.precision = job->precision;
  // With a precision, `processes` (when the job names more than one) is its cap.
  request.processes =
      job->precision && job->processes == 1 ? kPrecisionMaxProcesses : job->processes;
  request.min_time_s = job->timing.min_time_s;
  request.max_time_s = job->timing.max_time_s;
  const ProcessPlan plan = PlanProcesses(request, step.figures);
  step.decision = plan.decision;
  if (plan.done) {
    step.kind = ProcessStep::Kind::kComplete;
  } else if (kept_before) {
    step.kind = ProcessStep::Kind::kDuplicate;
    return step;  // nothing written: the transaction rolls back
  } else {
    std::string timing;
    if (plan.sample_s) {
      timing = json{{"warmup_s", job->timing.warmup_s},
                    {"min_time_s", *plan.sample_s},
                    {"max_time_s", *plan.sample_s},
                    {"target_ci", job->timing.target_ci}}
                   .dump();
    }
    RETURN_IF_ERROR(
        jobs_->QueueNextProcess(job_id, agent, static_cast<int64_t>(step.results.size()), timing));
    step.kind = ProcessStep::Kind::kQueuedAgain;
  }
  RETURN_IF_ERROR(tx.Commit());
  return step;
}

json CombineProcesses(const ProcessStep& step) {
  const AcrossProcesses across = Summarize(step.figures);
  json combined = step.results.at(across.representative);
  json& stats = combined["stats"];
  const double own_median = stats.value("median_ms", across.mean_ms);
  json processes = {
      {"count", across.count},
      {"representative", across.representative},
      {"method",
       "random effects on the log scale: the geometric mean of the process medians, "
       "exp(mean log +- t(K-1) x sd of the logs x sqrt(2/K)), the 95% interval of a repeat run "
       "of as many processes"},
      {"sd_between_ms", across.sd_between_ms},
      {"within_median_ms", own_median}};
  if (across.sd_within_ms) processes["sd_within_ms"] = *across.sd_within_ms;
  if (stats.contains("median_ci_low_ms")) processes["within_ci_low_ms"] = stats["median_ci_low_ms"];
  if (stats.contains("median_ci_high_ms"))
    processes["within_ci_high_ms"] = stats["median_ci_high_ms"];
  json medians = json::array();
  std::vector<double> values;
  for (const ProcessFigures& p : step.figures) {
    medians.push_back(p.median_ms);
    values.push_back(p.median_ms);
  }
  processes["medians_ms"] = std::move(medians);
  if (const GeometricSummary logs = SummarizeGeometric(values); logs.count >= 2) {
    processes["log_se"] = logs.sd_log / std::sqrt(static_cast<double>(logs.count));
    processes["t975"] = StudentT975(logs.count - 1);
  }
  stats["median_ms"] = across.mean_ms;
  if (across.ci_low_ms && across.ci_high_ms) {
    stats["median_ci_low_ms"] = *across.ci_low_ms;
    stats["median_ci_high_ms"] = *across.ci_high_ms;
    stats["median_ci_relative"] = across.relative_half_width();
  }
  // The figures read at the median, read at the mean of the medians.
  if (own_median > 0 && across.mean_ms > 0) {
    const double scale = own_median / across.mean_ms;
    for (const char* key : {"throughput_per_s", "gflops"}) {
      if (combined.contains(key) && combined[key].is_number())
        combined[key] = combined[key].get<double>() * scale;
    }
  }
  // The host's pace as the median is: the geometric mean over the processes (those that
  // measured it).
  std::vector<double> paces;
  for (const json& result : step.results) {
    const json pace = result.is_object() ? result.value("host_pace", json()) : json();
    if (pace.is_object() && pace.value("ms", json()).is_number()) paces.push_back(pace["ms"]);
  }
  const GeometricSummary pace = SummarizeGeometric(paces);
  if (pace.count > 0 && combined.value("host_pace", json()).is_object()) {
    combined["host_pace"]["ms"] = pace.mean;
    combined["host_pace"]["processes"] = pace.count;
  }
  combined["processes"] = std::move(processes);
  if (!step.decision.is_null()) combined["precision"] = step.decision;
  return combined;
}

}  // namespace benchfleet
