#include "coordinator/store/pair_results.h"

#include <cmath>

#include "common/clock.h"
#include "common/job_spec.h"
#include "common/result_fields.h"
#include "common/sweep_versus.h"
#include "coordinator/core/pair_stats.h"
#include "coordinator/store/process_results.h"
#include "coordinator/store/result_admission.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr const char* kPairMethod =
    "paired: exp(mean of the pairs' log(B/A)) with a 95% Student t interval on those logs";

double PaceOf(const json& result) {
  const json* pace = FindPath(result, "host_pace.ms");
  return pace && pace->is_number() ? pace->get<double>() : 0;
}

// The stored job's checked spec, for admitting its side's result.
StatusOr<StoredJob> StoredSide(Database& db, int64_t job_id) {
  ASSIGN_OR_RETURN(auto find, db.Prepare("SELECT spec FROM jobs WHERE job_id = ?1"));
  find.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return NotFound("no job " + std::to_string(job_id));
  JobSpecError error;
  std::optional<JobSpec> spec = ParseJobConfig(json::parse(find.Text(0), nullptr, false), &error);
  if (!spec)
    return Internal("stored job " + std::to_string(job_id) + " does not parse: " + error.message);
  return StoredJob{job_id, false, std::move(spec)};
}

// The pairs kept so far: their log ratios, in order.
StatusOr<std::vector<double>> LogRatios(Database& db, int64_t a_job_id) {
  ASSIGN_OR_RETURN(auto stmt,
                   db.Prepare("SELECT ratio FROM result_pairs WHERE job_id = ?1 ORDER BY pair"));
  stmt.Bind(1, a_job_id);
  std::vector<double> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    out.push_back(std::log(stmt.Real(0)));
  }
  return out;
}

PairRequest RequestOf(const json& versus) {
  PairRequest request;
  request.precision = versus.value("precision", kVersusDefaultPrecision);
  request.max_pairs = versus.value("max_pairs", kVersusDefaultMaxPairs);
  request.min_change = versus.value("min_change", kVersusDefaultMinChange);
  return request;
}

json NumberOrNull(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The answer of a pair of jobs: versus_results' row.
Status WriteAnswer(Database& db, int64_t a_job_id, int64_t b_job_id, int64_t sweep_id,
                   int64_t host_id, const json& versus, int64_t pairs, const PairPlan* plan,
                   const std::string& failure) {
  const PairRequest request = RequestOf(versus);
  ColumnValues row = {{"job_id", a_job_id},
                      {"b_job_id", b_job_id},
                      {"sweep_id", sweep_id},
                      {"host_id", host_id},
                      {"axis", versus.value("axis", std::string())},
                      {"a_value", versus.value("a_value", json()).dump()},
                      {"b_value", versus.value("b_value", json()).dump()},
                      {"pairing", versus.value("pairing", std::string())},
                      {"pairs", pairs},
                      {"min_change", request.min_change},
                      {"precision_target", request.precision},
                      {"method", kPairMethod},
                      {"decided_at", UtcNowIso8601()}};
  if (plan == nullptr) {
    row.emplace_back("change", "failed");
    row.emplace_back("stopped", "failed");
    row.emplace_back("why", failure);
  } else {
    const RatioEstimate& e = plan->estimate;
    row.emplace_back("ratio", e.ratio);
    if (e.valid()) {
      row.emplace_back("ratio_ci_low", e.low);
      row.emplace_back("ratio_ci_high", e.high);
      row.emplace_back("p", e.p);
    }
    row.emplace_back("change", ChangeName(plan->verdict.change));
    row.emplace_back("precision_reached", NumberOrNull(plan->reached));
    row.emplace_back("detectable", NumberOrNull(plan->verdict.detectable));
    row.emplace_back("stopped", plan->stopped);
    row.emplace_back("why", plan->why);
  }
  return InsertRow(db, "versus_results", row);
}

}  // namespace

bool SideAFirst(int64_t job_id, int64_t pair) {
  // Balanced in blocks of two: the block's first pair draws, its second takes the other.
  uint64_t mixed = static_cast<uint64_t>(job_id) * 0x9E3779B97F4A7C15ull +
                   static_cast<uint64_t>(pair / 2) * 0xBF58476D1CE4E5B9ull;
  mixed ^= mixed >> 31;
  mixed *= 0x94D049BB133111EBull;
  mixed ^= mixed >> 29;
  return ((mixed & 1) != 0) != (pair % 2 == 1);
}

StatusOr<int64_t> PairResults::SideBOf(int64_t a_job_id) {
  ASSIGN_OR_RETURN(auto find, db_->Prepare("SELECT job_id FROM jobs WHERE versus_a_job_id = ?1"));
  find.Bind(1, a_job_id);
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return NotFound("job " + std::to_string(a_job_id) + " has no side B");
  return find.Int(0);
}

StatusOr<PairOffer> PairResults::NextPair(const QueuedJob& a) {
  const json versus = json::parse(a.versus, nullptr, false);
  if (!versus.is_object())
    return Internal("job " + std::to_string(a.job_id) + " has a malformed versus: " + a.versus);
  PairOffer offer;
  ASSIGN_OR_RETURN(offer.b_job_id, SideBOf(a.job_id));
  ASSIGN_OR_RETURN(QueuedJob b, jobs_->FindJob(offer.b_job_id));
  offer.b_spec = json::parse(b.spec, nullptr, false);
  offer.b_needs = b.needs;
  offer.pairing = versus.value("pairing", std::string("interleaved"));
  ASSIGN_OR_RETURN(auto count, db_->Prepare("SELECT count(*) FROM result_pairs WHERE job_id = ?1"));
  count.Bind(1, a.job_id);
  ASSIGN_OR_RETURN(bool row, count.Step());
  offer.pair = row ? count.Int(0) : 0;
  offer.first = SideAFirst(a.job_id, offer.pair) ? "a" : "b";
  return offer;
}

Status PairResults::ArmSideB(int64_t b_job_id, int attempt, int64_t host_id) {
  ASSIGN_OR_RETURN(auto arm, db_->Prepare("UPDATE jobs SET attempts = ?2, host_id = ?3, "
                                          "started_at = coalesce(started_at, ?4) "
                                          "WHERE job_id = ?1 AND state = 'queued'"));
  return arm.Bind(1, b_job_id)
      .Bind(2, static_cast<int64_t>(attempt))
      .Bind(3, host_id)
      .Bind(4, UtcNowIso8601())
      .Run();
}

StatusOr<PairStep> PairResults::Record(int64_t a_job_id, int attempt, int64_t host_id,
                                       const std::string& agent, const WorkerResult& result,
                                       const json& sent) {
  PairStep step;
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(auto find,
                   db_->Prepare("SELECT j.state, j.attempts, j.versus, j.sweep_id, "
                                "EXISTS (SELECT 1 FROM results r WHERE r.job_id = j.job_id), "
                                "EXISTS (SELECT 1 FROM result_pairs p WHERE p.job_id = j.job_id "
                                "AND p.attempt = ?2) FROM jobs j WHERE j.job_id = ?1"));
  find.Bind(1, a_job_id).Bind(2, static_cast<int64_t>(attempt));
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found || find.IsNull(2) || find.Int(4) != 0) return step;
  const std::string state = find.Text(0);
  const bool open = state == "running" || state == "queued";
  const bool current = find.Int(1) == attempt;
  const bool kept_before = find.Int(5) != 0;
  const json versus = json::parse(find.Text(2), nullptr, false);
  const int64_t sweep_id = find.Int(3);
  if (!versus.is_object()) return step;
  ASSIGN_OR_RETURN(step.b_job_id, SideBOf(a_job_id));
  // What the fence refuses (a stale hand-out) is ResultWriter::Write's to record.
  if (!kept_before && (!open || !current)) return step;
  const WorkerResult& b = *result.versus->b;
  if (!kept_before) {
    if (!result.ok || !b.ok) {
      step.kind = PairStep::Kind::kFailed;
      step.error = !result.ok
                       ? "side A failed: " + result.error
                       : "side B (job " + std::to_string(step.b_job_id) + ") failed: " + b.error;
      RETURN_IF_ERROR(WriteAnswer(*db_, a_job_id, step.b_job_id, sweep_id, host_id, versus, 0,
                                  nullptr, step.error));
      RETURN_IF_ERROR(tx.Commit());
      return step;
    }
    if (b.job_id && *b.job_id != step.b_job_id) {
      return InvalidArgument("result.versus.b.job_id: " + std::to_string(*b.job_id) +
                             " is not side B of job " + std::to_string(a_job_id) + " (job " +
                             std::to_string(step.b_job_id) + ")");
    }
    ASSIGN_OR_RETURN(const StoredJob stored_a, StoredSide(*db_, a_job_id));
    ASSIGN_OR_RETURN(const StoredJob stored_b, StoredSide(*db_, step.b_job_id));
    if (Status admitted = AdmitResult(stored_a, result); !admitted.ok()) return admitted;
    if (Status admitted = AdmitResult(stored_b, b); !admitted.ok()) {
      return InvalidArgument("result.versus.b: " + admitted.message());
    }
    ASSIGN_OR_RETURN(std::vector<double> before, LogRatios(*db_, a_job_id));
    const int64_t pair = static_cast<int64_t>(before.size());
    json sent_a = sent;
    sent_a.erase("versus");  // side B's own is kept with its job
    const json& sent_b = result.versus->b_sent;
    RETURN_IF_ERROR(KeepProcess(*db_, a_job_id, pair, attempt, host_id, sent_a));
    RETURN_IF_ERROR(KeepProcess(*db_, step.b_job_id, pair, attempt, host_id, sent_b));
    const double a_median = FiguresOfResult(sent_a).median_ms;
    const double b_median = FiguresOfResult(sent_b).median_ms;
    if (!(a_median > 0) || !(b_median > 0)) {
      return InvalidArgument("result.stats.median_ms: both sides of a pair need a median above 0");
    }
    ColumnValues row = {{"job_id", a_job_id},
                        {"pair", pair},
                        {"b_job_id", step.b_job_id},
                        {"attempt", static_cast<int64_t>(attempt)},
                        {"host_id", host_id},
                        {"pairing", result.versus->pairing},
                        {"first", result.versus->first},
                        {"a_median_ms", a_median},
                        {"b_median_ms", b_median},
                        {"ratio", b_median / a_median},
                        {"received_at", UtcNowIso8601()}};
    if (const double pace = PaceOf(sent_a); pace > 0) row.emplace_back("a_host_pace_ms", pace);
    if (const double pace = PaceOf(sent_b); pace > 0) row.emplace_back("b_host_pace_ms", pace);
    RETURN_IF_ERROR(InsertRow(*db_, "result_pairs", row));
  }
  ASSIGN_OR_RETURN(const std::vector<double> log_ratios, LogRatios(*db_, a_job_id));
  const PairPlan plan = PlanPairs(RequestOf(versus), log_ratios);
  if (!plan.done) {
    if (kept_before) {
      step.kind = PairStep::Kind::kDuplicate;
      return step;  // nothing written: the transaction rolls back
    }
    RETURN_IF_ERROR(
        jobs_->QueueNextProcess(a_job_id, agent, static_cast<int64_t>(log_ratios.size()), ""));
    step.kind = PairStep::Kind::kQueuedAgain;
    RETURN_IF_ERROR(tx.Commit());
    return step;
  }
  step.kind = PairStep::Kind::kComplete;
  if (!kept_before) {
    RETURN_IF_ERROR(WriteAnswer(*db_, a_job_id, step.b_job_id, sweep_id, host_id, versus,
                                static_cast<int64_t>(log_ratios.size()), &plan, ""));
  }
  ASSIGN_OR_RETURN(const ProcessStep side_a, KeptProcesses(*db_, a_job_id));
  ASSIGN_OR_RETURN(const ProcessStep side_b, KeptProcesses(*db_, step.b_job_id));
  step.a_result = CombineProcesses(side_a);
  step.b_result = CombineProcesses(side_b);
  RETURN_IF_ERROR(tx.Commit());
  return step;
}

}  // namespace benchfleet
