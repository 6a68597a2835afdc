#include "coordinator/store.h"

#include <chrono>

#include "common/clock.h"
#include "common/log.h"

namespace benchfleet {
namespace {

// A writer waits this long for a lock held by another process (a user's sqlite3 shell
// in a write transaction) before the operation fails and is retried later.
constexpr int kBusyTimeoutMs = 500;

// A user's query may run at most this long; the coordinator's loop waits for it.
constexpr auto kQueryTimeLimit = std::chrono::seconds(10);

int QueryProgress(void* deadline_ptr) {
  auto* deadline = static_cast<MonoTime*>(deadline_ptr);
  return MonoNow() > *deadline ? 1 : 0;  // non-zero interrupts the statement
}

// Value of a JSON field, or null when absent (so a missing statistic stores NULL).
json Field(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? json(nullptr) : *it;
}

}  // namespace

const char* ResultOutcomeName(ResultOutcome outcome) {
  switch (outcome) {
    case ResultOutcome::kStored:
      return "stored";
    case ResultOutcome::kDuplicate:
      return "duplicate";
    case ResultOutcome::kStale:
      return "stale";
  }
  return "?";
}

StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto db, Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  sqlite3_busy_timeout(db->handle(), kBusyTimeoutMs);
  // WAL lets readers (the CLI's queries, a user's sqlite3 shell) run beside the writer;
  // synchronous=FULL makes every commit durable before we acknowledge it to a peer.
  RETURN_IF_ERROR(
      db->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
               "PRAGMA foreign_keys=ON;"));
  std::unique_ptr<Store> store(new Store(std::move(db), path));
  RETURN_IF_ERROR(store->Migrate());
  return store;
}

int Store::SchemaVersion() {
  auto stmt = db_->Prepare("PRAGMA user_version");
  if (!stmt.ok() || !stmt->Step().ok()) return -1;
  return static_cast<int>(stmt->Int(0));
}

Status Store::Migrate() {
  int current = SchemaVersion();
  if (current < 0) return Unavailable("cannot read the schema version of " + path_);
  int latest = Migrations().empty() ? 0 : Migrations().back().version;
  if (current > latest) {
    return FailedPrecondition(path_ + " has schema version " + std::to_string(current) +
                              ", newer than this coordinator knows (" + std::to_string(latest) +
                              "); use a newer benchfleet-coordinator");
  }
  for (const Migration& m : Migrations()) {
    if (m.version <= current) continue;
    Transaction tx(*db_);
    RETURN_IF_ERROR(tx.Begin());
    Status applied = db_->Exec(m.sql);
    if (!applied.ok()) return Internal("migration " + m.name + " failed: " + applied.message());
    RETURN_IF_ERROR(db_->Exec("PRAGMA user_version = " + std::to_string(m.version)));
    RETURN_IF_ERROR(tx.Commit());
    LOG_INFO("applied migration " << m.name);
  }
  return Status::Ok();
}

StatusOr<int64_t> Store::UpsertHost(const std::string& name, const std::string& machine_id,
                                    const json& tags, const json& capabilities) {
  std::string now = UtcNowIso8601();
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare(
          "INSERT INTO hosts(name, machine_id, tags, capabilities, first_seen, last_seen) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?5) "
          "ON CONFLICT(name) DO UPDATE SET machine_id = excluded.machine_id, tags = excluded.tags, "
          "capabilities = excluded.capabilities, last_seen = excluded.last_seen "
          "RETURNING host_id"));
  stmt.Bind(1, name)
      .Bind(2, machine_id)
      .Bind(3, tags.dump())
      .Bind(4, capabilities.dump())
      .Bind(5, now);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal("host upsert returned no row");
  return stmt.Int(0);
}

StatusOr<int64_t> Store::CreateSweep(const Sweep& sweep,
                                     const std::vector<std::string>& pinned_hosts,
                                     int64_t* jobs_created) {
  std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(auto insert_sweep,
                   db_->Prepare("INSERT INTO sweeps(name, spec, created_at) VALUES (?1, ?2, ?3)"));
  RETURN_IF_ERROR(insert_sweep.Bind(1, sweep.name).Bind(2, sweep.source.dump()).Bind(3, now).Run());
  int64_t sweep_id = db_->LastInsertRowid();

  ASSIGN_OR_RETURN(
      auto insert_job,
      db_->Prepare("INSERT INTO jobs(sweep_id, pinned_host, spec, timeout_s, created_at) "
                   "VALUES (?1, ?2, ?3, ?4, ?5)"));
  double timeout_s = JobTimeoutSeconds(sweep);
  int64_t count = 0;
  auto add = [&](const json& spec, const std::string* host) -> Status {
    insert_job.Bind(1, sweep_id);
    if (host)
      insert_job.Bind(2, *host);
    else
      insert_job.BindNull(2);
    insert_job.Bind(3, spec.dump()).Bind(4, timeout_s).Bind(5, now);
    RETURN_IF_ERROR(insert_job.Run());
    insert_job.Reset();
    ++count;
    return Status::Ok();
  };
  for (const json& spec : sweep.combinations) {
    if (pinned_hosts.empty()) {
      RETURN_IF_ERROR(add(spec, nullptr));
    } else {
      for (const std::string& host : pinned_hosts) RETURN_IF_ERROR(add(spec, &host));
    }
  }
  RETURN_IF_ERROR(tx.Commit());
  if (jobs_created) *jobs_created = count;
  return sweep_id;
}

StatusOr<int64_t> Store::CreateCalibration(const std::vector<std::string>& agents,
                                           double timeout_s) {
  std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  json spec = {{"name", "calibration"}, {"kind", "calibration"}, {"agents", agents}};
  RETURN_IF_ERROR(Insert("sweeps", {{"name", "calibration"}, {"spec", spec.dump()}, {"created_at", now}}));
  int64_t sweep_id = db_->LastInsertRowid();
  for (const std::string& agent : agents) {
    RETURN_IF_ERROR(Insert("jobs", {{"sweep_id", sweep_id},
                                    {"pinned_host", agent},
                                    {"kind", "calibration"},
                                    {"spec", json({{"kind", "calibration"}}).dump()},
                                    {"timeout_s", timeout_s},
                                    {"created_at", now}}));
  }
  RETURN_IF_ERROR(tx.Commit());
  return sweep_id;
}

StatusOr<std::vector<QueuedJob>> Store::QueuedJobsFor(const std::string& agent_name, int limit) {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare(
          "SELECT j.job_id, j.sweep_id, j.pinned_host, j.spec, json_extract(s.spec, '$.select'), "
          "       j.timeout_s, j.attempts, j.kind "
          "FROM jobs j JOIN sweeps s ON s.sweep_id = j.sweep_id "
          "WHERE j.state = 'queued' AND (j.pinned_host = ?1 OR j.pinned_host IS NULL) "
          "ORDER BY j.kind = 'calibration' DESC, j.job_id LIMIT ?2"));
  stmt.Bind(1, agent_name).Bind(2, limit);
  std::vector<QueuedJob> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    QueuedJob job;
    job.job_id = stmt.Int(0);
    job.sweep_id = stmt.Int(1);
    if (!stmt.IsNull(2)) job.pinned_host = stmt.Text(2);
    job.spec = json::parse(stmt.Text(3), nullptr, false);
    job.select = stmt.IsNull(4) ? json::object() : json::parse(stmt.Text(4), nullptr, false);
    job.timeout_s = stmt.Real(5);
    job.attempts = static_cast<int>(stmt.Int(6));
    job.kind = stmt.Text(7);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

StatusOr<int> Store::MarkRunning(int64_t job_id, int64_t host_id) {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare("UPDATE jobs SET state = 'running', attempts = attempts + 1, host_id = ?2, "
                   "started_at = ?3 WHERE job_id = ?1 AND state = 'queued' RETURNING attempts"));
  stmt.Bind(1, job_id).Bind(2, host_id).Bind(3, UtcNowIso8601());
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return FailedPrecondition("job " + std::to_string(job_id) + " is no longer queued");
  int attempt = static_cast<int>(stmt.Int(0));
  RETURN_IF_ERROR(stmt.Run());  // finish the statement so the autocommit happens now
  return attempt;
}

StatusOr<bool> Store::RequeueOrFail(int64_t job_id, int attempt, int max_attempts,
                                    const std::string& reason) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(
      auto find,
      db_->Prepare("SELECT attempts, sweep_id FROM jobs WHERE job_id = ?1 AND state = 'running'"));
  find.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, find.Step());
  if (!row || find.Int(0) != attempt) return false;  // already finished or handed out again
  int64_t sweep_id = find.Int(1);
  bool requeue = attempt < max_attempts;
  ASSIGN_OR_RETURN(
      auto update,
      db_->Prepare(requeue ? "UPDATE jobs SET state = 'queued', error = ?2 WHERE job_id = ?1"
                           : "UPDATE jobs SET state = 'failed', error = ?2, finished_at = ?3 WHERE "
                             "job_id = ?1"));
  std::string message =
      requeue ? reason : reason + "; gave up after " + std::to_string(attempt) + " attempts";
  update.Bind(1, job_id).Bind(2, message);
  if (!requeue) update.Bind(3, UtcNowIso8601());
  RETURN_IF_ERROR(update.Run());
  if (!requeue) RETURN_IF_ERROR(FinishSweepIfComplete(sweep_id));
  RETURN_IF_ERROR(tx.Commit());
  return requeue;
}

StatusOr<ResultOutcome> Store::StoreResult(int64_t job_id, int attempt, int64_t host_id,
                                           const std::string& host_name, const json& result) {
  std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());

  ASSIGN_OR_RETURN(auto find, db_->Prepare(
                                  "SELECT j.state, j.attempts, j.sweep_id, r.attempt, j.kind, j.spec "
                                  "FROM jobs j LEFT JOIN results r ON r.job_id = j.job_id "
                                  "WHERE j.job_id = ?1"));
  find.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool found, find.Step());
  std::string stale_reason;
  int64_t sweep_id = 0;
  std::string kind = "benchmark";
  json spec = json::object();
  if (!found) {
    stale_reason = "no such job";
  } else {
    std::string state = find.Text(0);
    int current_attempt = static_cast<int>(find.Int(1));
    sweep_id = find.Int(2);
    kind = find.Text(4);
    spec = json::parse(find.Text(5), nullptr, false);
    if (!find.IsNull(3) && find.Int(3) == attempt) {
      return ResultOutcome::kDuplicate;  // the transaction rolls back: nothing to write
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

  json detail = result;
  json samples =
      detail.is_object() && detail.contains("samples_ms") ? detail["samples_ms"] : json();
  if (detail.is_object()) detail.erase("samples_ms");
  const std::string detail_text = detail.dump(-1, ' ', false, json::error_handler_t::replace);

  if (!stale_reason.empty()) {
    ASSIGN_OR_RETURN(auto stale,
                     db_->Prepare("INSERT INTO stale_results(job_id, attempt, host, reason, detail, "
                                  "received_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    RETURN_IF_ERROR(stale.Bind(1, job_id).Bind(2, attempt).Bind(3, host_name).Bind(4, stale_reason)
                        .Bind(5, detail_text).Bind(6, now).Run());
    RETURN_IF_ERROR(tx.Commit());
    return ResultOutcome::kStale;
  }

  const bool ok = result.value("ok", false) == true;
  ASSIGN_OR_RETURN(Columns columns, ResultColumns(kind, spec, host_id, result, ok));
  columns.emplace_back("job_id", job_id);
  columns.emplace_back("attempt", attempt);
  columns.emplace_back("host_id", host_id);
  columns.emplace_back("ok", ok ? 1 : 0);
  columns.emplace_back("detail", detail_text);
  columns.emplace_back("received_at", now);
  RETURN_IF_ERROR(Insert("results", columns));

  if (ok && samples.is_array()) {
    ASSIGN_OR_RETURN(auto sample,
                     db_->Prepare("INSERT INTO samples(job_id, idx, ms) VALUES (?1, ?2, ?3)"));
    for (size_t i = 0; i < samples.size(); ++i) {
      if (!samples[i].is_number()) continue;
      RETURN_IF_ERROR(sample.Bind(1, job_id).Bind(2, static_cast<int64_t>(i))
                          .Bind(3, samples[i].get<double>()).Run());
      sample.Reset();
    }
  }
  if (ok && kind == "calibration") RETURN_IF_ERROR(StoreCalibration(job_id, host_id, result, now));

  ASSIGN_OR_RETURN(auto finish, db_->Prepare("UPDATE jobs SET state = ?2, error = ?3, "
                                             "finished_at = ?4 WHERE job_id = ?1"));
  finish.Bind(1, job_id).Bind(2, ok ? "done" : "failed").Bind(4, now);
  if (ok) {
    finish.BindNull(3);
  } else {
    finish.BindJson(3, Field(result, "error"));
  }
  RETURN_IF_ERROR(finish.Run());
  RETURN_IF_ERROR(FinishSweepIfComplete(sweep_id));
  RETURN_IF_ERROR(tx.Commit());
  return ResultOutcome::kStored;
}

StatusOr<Store::Columns> Store::ResultColumns(const std::string& kind, const json& spec,
                                              int64_t host_id, const json& result, bool ok) {
  Columns columns;
  for (const char* key : {"device", "model", "mode", "dtype", "batch_size", "threads",
                          "interop_threads", "error", "peak_rss_mb", "worker_wall_s"}) {
    columns.emplace_back(key, Field(result, key));
  }
  if (kind != "benchmark" || !ok) return columns;

  const json stats = Field(result, "stats");
  for (const char* key : {"n", "median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms", "p90_ms",
                          "p99_ms", "q1_ms", "q3_ms", "iqr_ms", "noisy"}) {
    columns.emplace_back(key, Field(stats, key));
  }
  for (const char* key : {"throughput_per_s", "rss_before_model_mb", "param_bytes",
                          "effective_threads", "threads_mismatch", "flops_per_sample", "gflops",
                          "gpu_peak_mem_mb"}) {
    columns.emplace_back(key, Field(result, key));
  }
  const json accuracy = Field(result, "accuracy");
  for (const char* key : {"max_abs_err", "mean_abs_err", "rel_err", "top1_agreement"}) {
    columns.emplace_back(key, Field(accuracy, key));
  }
  columns.emplace_back("onednn", Field(Field(result, "runtime"), "onednn"));
  // The job's own model arguments, canonical (sorted keys), so that views can match
  // identical configurations across devices, dtypes and thread counts.
  columns.emplace_back("model_args", spec.is_object() ? json(spec.value("model_args", json::object()).dump())
                                                      : json(nullptr));

  json gflops = Field(result, "gflops");
  if (gflops.is_number()) {
    ASSIGN_OR_RETURN(json peak, PeakFor(host_id, result));
    if (peak.is_number() && peak.get<double>() > 0) {
      columns.emplace_back("peak_gflops", peak);
      columns.emplace_back("fraction_of_peak", gflops.get<double>() / peak.get<double>());
    }
  }
  return columns;
}

StatusOr<json> Store::PeakFor(int64_t host_id, const json& result) {
  ASSIGN_OR_RETURN(auto latest, db_->Prepare(
                                    "SELECT gemm_gflops_all, gemm_threads_all, gemm_gflops_1, gpus "
                                    "FROM calibrations WHERE host_id = ?1 "
                                    "ORDER BY calibration_id DESC LIMIT 1"));
  latest.Bind(1, host_id);
  ASSIGN_OR_RETURN(bool row, latest.Step());
  if (!row) return json(nullptr);
  const std::string device = result.value("device", std::string("cpu"));
  if (device.rfind("cuda", 0) == 0) {
    size_t index = device.size() > 5 ? std::stoul(device.substr(5)) : 0;
    json gpus = json::parse(latest.Text(3), nullptr, false);
    if (!gpus.is_array() || index >= gpus.size()) return json(nullptr);
    return gpus[index].value("sgemm_gflops", json(nullptr));
  }
  if (latest.IsNull(0)) return json(nullptr);
  // The peak for T threads: T single-CPU peaks, but never more than all CPUs together.
  double all = latest.Real(0);
  int64_t all_threads = latest.Int(1);
  int64_t threads = result.value("threads", int64_t{1});
  if (latest.IsNull(2) || threads >= all_threads) return json(all);
  return json(std::min(all, latest.Real(2) * static_cast<double>(threads)));
}

Status Store::StoreCalibration(int64_t job_id, int64_t host_id, const json& result,
                               const std::string& now) {
  const json calibration = Field(result, "calibration");
  const json cpu = Field(calibration, "cpu");
  Columns columns = {{"host_id", host_id}, {"job_id", job_id}, {"measured_at", now}};
  for (const char* key : {"gemm_gflops_all", "gemm_threads_all", "gemm_gflops_1",
                          "stream_triad_gbps_all", "stream_triad_gbps_1", "theoretical_gflops_all",
                          "theoretical_gflops_1"}) {
    columns.emplace_back(key, Field(cpu, key));
  }
  json gpus = Field(calibration, "gpus");
  columns.emplace_back("gpus", gpus.is_array() ? gpus.dump() : "[]");
  columns.emplace_back("detail", calibration.dump(-1, ' ', false, json::error_handler_t::replace));
  return Insert("calibrations", columns);
}

Status Store::Insert(const std::string& table, const Columns& columns) {
  std::string names, slots;
  for (size_t i = 0; i < columns.size(); ++i) {
    names += (i ? ", " : "") + columns[i].first;
    slots += (i ? ", ?" : "?") + std::to_string(i + 1);
  }
  ASSIGN_OR_RETURN(auto insert,
                   db_->Prepare("INSERT INTO " + table + "(" + names + ") VALUES (" + slots + ")"));
  for (size_t i = 0; i < columns.size(); ++i) insert.BindJson(static_cast<int>(i + 1), columns[i].second);
  return insert.Run();
}

Status Store::FinishSweepIfComplete(int64_t sweep_id) {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare("UPDATE sweeps SET state = 'done', finished_at = ?2 WHERE sweep_id = ?1 "
                   "AND state = 'running' AND NOT EXISTS (SELECT 1 FROM jobs WHERE sweep_id = ?1 "
                   "AND state IN ('queued', 'running'))"));
  return stmt.Bind(1, sweep_id).Bind(2, UtcNowIso8601()).Run();
}

StatusOr<int> Store::CancelSweep(int64_t sweep_id) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(auto exists, db_->Prepare("SELECT state FROM sweeps WHERE sweep_id = ?1"));
  exists.Bind(1, sweep_id);
  ASSIGN_OR_RETURN(bool found, exists.Step());
  if (!found) return NotFound("no sweep with id " + std::to_string(sweep_id));
  std::string now = UtcNowIso8601();
  ASSIGN_OR_RETURN(auto cancel, db_->Prepare("UPDATE jobs SET state = 'cancelled', finished_at = "
                                             "?2 WHERE sweep_id = ?1 AND state = 'queued'"));
  RETURN_IF_ERROR(cancel.Bind(1, sweep_id).Bind(2, now).Run());
  int cancelled = db_->Changes();
  ASSIGN_OR_RETURN(auto sweep, db_->Prepare("UPDATE sweeps SET state = 'cancelled', finished_at = "
                                            "?2 WHERE sweep_id = ?1 AND state = 'running'"));
  RETURN_IF_ERROR(sweep.Bind(1, sweep_id).Bind(2, now).Run());
  RETURN_IF_ERROR(tx.Commit());
  return cancelled;
}

StatusOr<std::vector<RunningJob>> Store::RunningJobs() {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare("SELECT j.job_id, j.attempts, COALESCE(h.name, ''), j.timeout_s FROM jobs j "
                   "LEFT JOIN hosts h ON h.host_id = j.host_id WHERE j.state = 'running' ORDER BY "
                   "j.job_id"));
  std::vector<RunningJob> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    jobs.push_back({stmt.Int(0), static_cast<int>(stmt.Int(1)), stmt.Text(2), stmt.Real(3)});
  }
  return jobs;
}

StatusOr<json> Store::SweepStatus(std::optional<int64_t> sweep_id, int limit) {
  std::string sql =
      "SELECT s.sweep_id, s.name, s.state, s.created_at, s.finished_at, COUNT(j.job_id), "
      "SUM(j.state = 'queued'), SUM(j.state = 'running'), SUM(j.state = 'done'), "
      "SUM(j.state = 'failed'), SUM(j.state = 'cancelled') "
      "FROM sweeps s LEFT JOIN jobs j ON j.sweep_id = s.sweep_id ";
  sql += sweep_id ? "WHERE s.sweep_id = ?1 " : "";
  sql += "GROUP BY s.sweep_id ORDER BY s.sweep_id DESC LIMIT ?2";
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare(sql));
  if (sweep_id) stmt.Bind(1, *sweep_id);
  stmt.Bind(2, limit);
  json sweeps = json::array();
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    sweeps.push_back({{"sweep_id", stmt.Int(0)},
                      {"name", stmt.Text(1)},
                      {"state", stmt.Text(2)},
                      {"created_at", stmt.Text(3)},
                      {"finished_at", stmt.ColumnJson(4)},
                      {"jobs",
                       {{"total", stmt.Int(5)},
                        {"queued", stmt.Int(6)},
                        {"running", stmt.Int(7)},
                        {"done", stmt.Int(8)},
                        {"failed", stmt.Int(9)},
                        {"cancelled", stmt.Int(10)}}}});
  }
  if (sweep_id && sweeps.empty()) return NotFound("no sweep with id " + std::to_string(*sweep_id));
  return sweeps;
}

StatusOr<Rows> Store::RunRows(Database& db, const std::string& sql, const json& params,
                              int max_rows) {
  ASSIGN_OR_RETURN(auto stmt, db.Prepare(sql));
  for (size_t i = 0; i < params.size(); ++i) stmt.BindJson(static_cast<int>(i + 1), params[i]);
  Rows rows;
  for (int c = 0; c < stmt.ColumnCount(); ++c) rows.columns.push_back(stmt.ColumnName(c));
  MonoTime deadline = MonoNow() + kQueryTimeLimit;
  sqlite3_progress_handler(db.handle(), 10000, QueryProgress, &deadline);
  while (true) {
    auto row = stmt.Step();
    if (!row.ok()) {
      sqlite3_progress_handler(db.handle(), 0, nullptr, nullptr);
      if (MonoNow() > deadline)
        return DeadlineExceeded("query ran longer than 10 s and was stopped");
      return InvalidArgument(row.status().message());
    }
    if (!*row) break;
    if (static_cast<int>(rows.rows.size()) >= max_rows) {
      rows.truncated = true;
      break;
    }
    json values = json::array();
    for (int c = 0; c < stmt.ColumnCount(); ++c) values.push_back(stmt.ColumnJson(c));
    rows.rows.push_back(std::move(values));
  }
  sqlite3_progress_handler(db.handle(), 0, nullptr, nullptr);
  return rows;
}

StatusOr<Rows> Store::Query(const std::string& sql, int max_rows) {
  if (!reader_) {
    ASSIGN_OR_RETURN(reader_, Database::Open(path_, SQLITE_OPEN_READONLY));
    sqlite3_busy_timeout(reader_->handle(), kBusyTimeoutMs);
  }
  {
    // Refuse writes with a clear message before SQLite's "attempt to write a readonly
    // database"; the read-only connection is the real guard.
    ASSIGN_OR_RETURN(auto probe, reader_->Prepare(sql));
    if (!probe.ReadOnly()) return InvalidArgument("only read-only statements are allowed in query");
  }
  return RunRows(*reader_, sql, json::array(), max_rows);
}

StatusOr<Rows> Store::ResultSummary(std::optional<int64_t> sweep_id, int max_rows) {
  std::string sql = "SELECT * FROM result_summary";
  json params = json::array();
  if (sweep_id) {
    sql += " WHERE sweep_id = ?1";
    params.push_back(*sweep_id);
  }
  sql += " ORDER BY sweep_id, host, model, mode, dtype, batch_size, threads, job_id";
  return RunRows(*db_, sql, params, max_rows);
}

}  // namespace benchfleet
