// The store's side of regression detection: a result's series and baseline window, the
// candidates and their confirming reruns (schemas/migrations/001_baseline.sql).
#include "coordinator/store/regression_store.h"

#include "common/clock.h"
#include "common/ratio_interval.h"
#include "coordinator/core/fingerprint.h"

namespace benchfleet {

StatusOr<json> RegressionStore::SweepRegressionPolicy(int64_t sweep_id) {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT json_extract(spec, '$.regression') FROM sweeps "
                                           "WHERE sweep_id = ?1"));
  stmt.Bind(1, sweep_id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row || stmt.IsNull(0)) return json(nullptr);
  return json::parse(stmt.Text(0), nullptr, false);
}

StatusOr<std::vector<BaselinePoint>> RegressionStore::SeriesBaseline(const std::string& series,
                                                                     int64_t before_job_id,
                                                                     int window,
                                                                     const std::string& host,
                                                                     const std::string& model) {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare(
          "WITH step AS (SELECT coalesce(max(g.job_id), 0) AS job_id FROM regressions g "
          "  WHERE g.series = ?1 AND g.state = 'confirmed' AND g.job_id < ?2) "
          "SELECT r.job_id, r.median_ms, r.received_at, r.sweep_id FROM results r JOIN jobs j ON "
          "j.job_id = r.job_id, step "
          "WHERE r.series_key = ?6 AND r.series = ?1 AND r.job_id < ?2 AND r.ok = 1 AND "
          "coalesce(r.unsteady, 0) = 0 "
          "AND r.median_ms IS NOT NULL AND r.job_id >= step.job_id "
          "AND (j.confirms_job_id IS NULL OR j.confirms_job_id = step.job_id) "
          "AND NOT EXISTS (SELECT 1 FROM regressions h WHERE h.job_id = r.job_id AND h.state = "
          "'host') "
          "AND r.received_at > coalesce((SELECT max(b.at) FROM baseline_resets b "
          "  WHERE (b.host IS NULL OR b.host = ?4) AND (b.model IS NULL OR b.model = ?5)), '') "
          "ORDER BY r.job_id DESC LIMIT ?3"));
  stmt.Bind(1, series)
      .Bind(2, before_job_id)
      .Bind(3, static_cast<int64_t>(window))
      .Bind(4, host)
      .Bind(5, model);
  if (const std::optional<int64_t> key = SeriesKeyOf(series)) {
    stmt.Bind(6, *key);
  } else {
    stmt.BindNull(6);  // a malformed series has no baseline
  }
  std::vector<BaselinePoint> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    out.push_back({stmt.Int(0), stmt.Real(1), stmt.Text(2), stmt.IsNull(3) ? 0 : stmt.Int(3)});
  }
  return out;
}

namespace {

json Optional(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

// A regressions row: the candidate's figures, then the columns of its state.
ColumnValues RegressionRow(const RegressionCandidate& c, ColumnValues rest) {
  std::optional<double> pace_change;
  if (c.host_pace_ms && c.baseline_host_pace_ms && *c.baseline_host_pace_ms > 0) {
    pace_change = *c.host_pace_ms / *c.baseline_host_pace_ms - 1;
  }
  ColumnValues row = {
      {"job_id", c.job_id},
      {"series", c.series},
      {"host_id", c.host_id},
      {"direction", c.slower ? "slower" : "faster"},
      {"median_ms", c.median_ms},
      {"baseline_median_ms", c.baseline_median_ms},
      {"baseline_mad_ms", c.baseline_mad_ms},
      {"baseline_n", c.baseline_n},
      {"baseline_from", c.baseline_from},
      {"baseline_to", c.baseline_to},
      {"change", c.change},
      {"z", c.z ? json(*c.z) : json(nullptr)},
      {"median_ci_low_ms", c.median_ci_low_ms ? json(*c.median_ci_low_ms) : json(nullptr)},
      {"median_ci_high_ms", c.median_ci_high_ms ? json(*c.median_ci_high_ms) : json(nullptr)},
      {"host_pace_ms", Optional(c.host_pace_ms)},
      {"baseline_host_pace_ms", Optional(c.baseline_host_pace_ms)},
      {"host_pace_change", Optional(pace_change)},
      {"baseline_host_paces", c.baseline_host_paces_ms.empty()
                                  ? json(nullptr)
                                  : json(json(c.baseline_host_paces_ms).dump())},
      {"detectable_change", Optional(c.detectable_change)}};
  for (auto& column : rest) row.push_back(std::move(column));
  return row;
}

}  // namespace

StatusOr<std::vector<int64_t>> RegressionStore::AddRegressionCandidate(const RegressionCandidate& c,
                                                                       const std::string& host,
                                                                       int reruns) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(QueuedReruns queued, jobs_->QueueReruns(c.job_id, host, reruns));
  const std::vector<int64_t>& ids = queued.job_ids;
  RETURN_IF_ERROR(InsertRow(*db_, "regressions",
                            RegressionRow(c, {{"sweep_id", queued.sweep_id},
                                              {"reruns", json(ids).dump()},
                                              {"detected_at", UtcNowIso8601()}})));
  RETURN_IF_ERROR(tx.Commit());
  return ids;
}

StatusOr<std::optional<RegressionCandidate>> RegressionStore::CandidateOf(int64_t job_id) {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT series, host_id, direction, median_ms, "
                                           "baseline_median_ms, baseline_mad_ms, baseline_n, "
                                           "baseline_from, baseline_to, change, z, host_pace_ms, "
                                           "baseline_host_pace_ms, baseline_host_paces, "
                                           "detectable_change FROM regressions "
                                           "WHERE job_id = ?1 AND state = 'candidate'"));
  stmt.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<RegressionCandidate>();
  RegressionCandidate c;
  c.job_id = job_id;
  c.series = stmt.Text(0);
  c.host_id = stmt.Int(1);
  c.slower = stmt.Text(2) == "slower";
  c.median_ms = stmt.Real(3);
  c.baseline_median_ms = stmt.Real(4);
  c.baseline_mad_ms = stmt.Real(5);
  c.baseline_n = stmt.Int(6);
  c.baseline_from = stmt.Text(7);
  c.baseline_to = stmt.Text(8);
  c.change = stmt.Real(9);
  if (!stmt.IsNull(10)) c.z = stmt.Real(10);
  if (!stmt.IsNull(11)) c.host_pace_ms = stmt.Real(11);
  if (!stmt.IsNull(12)) c.baseline_host_pace_ms = stmt.Real(12);
  if (!stmt.IsNull(13)) {
    const json paces = json::parse(stmt.Text(13), nullptr, false);
    if (paces.is_array()) {
      for (const json& pace : paces) {
        if (pace.is_number()) c.baseline_host_paces_ms.push_back(pace.get<double>());
      }
    }
  }
  if (!stmt.IsNull(14)) c.detectable_change = stmt.Real(14);
  return std::optional<RegressionCandidate>(std::move(c));
}

StatusOr<bool> RegressionStore::SeriesHasOpenCandidate(const std::string& series) {
  ASSIGN_OR_RETURN(
      auto stmt, db_->Prepare("SELECT 1 FROM regressions WHERE series = ?1 AND state = 'candidate' "
                              "LIMIT 1"));
  stmt.Bind(1, series);
  return stmt.Step();
}

StatusOr<std::vector<Rerun>> RegressionStore::RerunsOf(int64_t job_id) {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare("SELECT j.job_id, j.state, CASE WHEN r.ok = 1 THEN r.median_ms END FROM jobs j "
                   "LEFT JOIN results r ON r.job_id = j.job_id WHERE j.confirms_job_id = ?1 ORDER "
                   "BY j.job_id"));
  stmt.Bind(1, job_id);
  std::vector<Rerun> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    Rerun r;
    r.job_id = stmt.Int(0);
    r.state = stmt.Text(1);
    if (!stmt.IsNull(2)) r.median_ms = stmt.Real(2);
    out.push_back(std::move(r));
  }
  return out;
}

double NightPace::mean_ms() const { return SummarizeGeometric(paces_ms).mean; }

StatusOr<NightPace> RegressionStore::NightHostPace(int64_t job_id) {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare(
          "SELECT r.host_pace_ms FROM results r JOIN jobs c ON c.job_id = ?1 "
          "WHERE r.sweep_id = c.sweep_id AND r.host_id = c.host_id AND r.host_pace_ms > 0"));
  stmt.Bind(1, job_id);
  NightPace night;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    night.paces_ms.push_back(stmt.Real(0));
  }
  return night;
}

StatusOr<NightPace> RegressionStore::HostPaceOfSweeps(int64_t host_id,
                                                      const std::vector<int64_t>& sweep_ids) {
  NightPace pace;
  if (sweep_ids.empty()) return pace;
  // One statement for any list (the prepared-statement cache keeps each text it sees).
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare("SELECT host_pace_ms FROM results "
                                "WHERE host_id = ?1 AND host_pace_ms > 0 AND sweep_id IN "
                                "(SELECT value FROM json_each(?2))"));
  stmt.Bind(1, host_id).Bind(2, json(sweep_ids).dump());
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    pace.paces_ms.push_back(stmt.Real(0));
  }
  return pace;
}

Status RegressionStore::DecideRegression(int64_t job_id, const std::string& state,
                                         std::optional<double> rerun_median_ms,
                                         const std::string& reason,
                                         std::optional<double> night_pace_ms) {
  Transaction tx(*db_);  // every write joins the loop round's group commit
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare(
          "UPDATE regressions SET state = ?2, rerun_median_ms = ?3, decided_at = ?4, reason = ?5, "
          "host_pace_ms = coalesce(?6, host_pace_ms), "
          "host_pace_change = CASE WHEN coalesce(?6, host_pace_ms) > 0 AND baseline_host_pace_ms > "
          "0 "
          "  THEN coalesce(?6, host_pace_ms) / baseline_host_pace_ms - 1 END "
          "WHERE job_id = ?1 AND state = 'candidate'"));
  stmt.Bind(1, job_id).Bind(2, state).Bind(4, UtcNowIso8601()).Bind(5, reason);
  if (rerun_median_ms) {
    stmt.Bind(3, *rerun_median_ms);
  } else {
    stmt.BindNull(3);
  }
  if (night_pace_ms) {
    stmt.Bind(6, *night_pace_ms);
  } else {
    stmt.BindNull(6);
  }
  RETURN_IF_ERROR(stmt.Run());
  return tx.Commit();
}

StatusOr<json> RegressionStore::AddBaselineReset(const std::string& host, const std::string& model,
                                                 const std::string& note) {
  const std::string now = UtcNowIso8601();
  Transaction tx(*db_);  // every write joins the loop round's group commit
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(InsertRow(*db_, "baseline_resets",
                            {{"host", host.empty() ? json(nullptr) : json(host)},
                             {"model", model.empty() ? json(nullptr) : json(model)},
                             {"at", now},
                             {"note", note.empty() ? json(nullptr) : json(note)}}));
  const int64_t reset_id = db_->LastInsertRowid();
  RETURN_IF_ERROR(tx.Commit());
  return json{{"reset_id", reset_id},
              {"host", host.empty() ? json(nullptr) : json(host)},
              {"model", model.empty() ? json(nullptr) : json(model)},
              {"at", now}};
}

}  // namespace benchfleet
