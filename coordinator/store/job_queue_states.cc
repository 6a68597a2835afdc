// JobQueue (job_queue.h): a job's states after it was stored — handed out, taken back,
// requeued or failed, finished — and what the loop reads of them (the queue by
// requirement, the running jobs, the sweeps' progress).
#include <algorithm>

#include "common/clock.h"
#include "common/job_spec.h"
#include "coordinator/store/job_queue.h"

namespace benchfleet {
namespace {

// The columns a QueuedJob is read from, and the reading.
constexpr const char* kQueuedJobColumns =
    "job_id, sweep_id, requirement_id, spec, timeout_s, attempts, kind, world_size, spread, "
    "local_processes, replicated, local_cpus, torch, torch_min, technique, "
    "coalesce(queue_order, job_id), process_timing, versus";

QueuedJob ReadQueuedJob(Statement& row) {
  QueuedJob job;
  job.job_id = row.Int(0);
  job.sweep_id = row.Int(1);
  job.requirement_id = row.Int(2);
  job.spec = row.Text(3);
  job.timeout_s = row.Real(4);
  job.attempts = static_cast<int>(row.Int(5));
  job.kind = row.Text(6);
  job.needs.world_size = row.Int(7);
  job.needs.spread = row.Int(8) != 0;
  job.needs.local_processes = row.Int(9);
  job.needs.replicated = row.Int(10) != 0;
  job.needs.local_cpus = row.Int(11);
  job.needs.worker.torch = row.Text(12);
  job.queue_order = row.Int(15);
  if (!row.IsNull(16)) job.process_timing = row.Text(16);
  job.needs.worker.torch_min = row.Text(13);
  job.needs.worker.technique = row.Text(14);
  if (!row.IsNull(17)) job.versus = row.Text(17);
  return job;
}

}  // namespace

StatusOr<QueuedJob> JobQueue::FindJob(int64_t job_id) {
  ASSIGN_OR_RETURN(auto find, db_->Prepare(std::string("SELECT ") + kQueuedJobColumns +
                                           " FROM jobs WHERE job_id = ?1"));
  find.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, find.Step());
  if (!row) return NotFound("no job " + std::to_string(job_id));
  return ReadQueuedJob(find);
}

StatusOr<std::vector<JobRequirement>> JobQueue::Requirements() {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT requirement_id, kind, pinned_host, select_json, "
                                           "device FROM requirements ORDER BY requirement_id"));
  std::vector<JobRequirement> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    JobRequirement requirement;
    requirement.requirement_id = stmt.Int(0);
    requirement.kind = stmt.Text(1);
    requirement.pinned_host = stmt.Text(2);
    requirement.select = json::parse(stmt.Text(3), nullptr, false);
    if (!requirement.select.is_object()) requirement.select = json::object();
    requirement.device = stmt.Text(4);
    out.push_back(std::move(requirement));
  }
  return out;
}

StatusOr<std::vector<QueuedJob>> JobQueue::OldestQueued(int64_t requirement_id, int limit) {
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare(std::string("SELECT ") + kQueuedJobColumns +
                                " FROM jobs WHERE state = 'queued' AND requirement_id = ?1 "
                                "AND versus_a_job_id IS NULL "
                                "ORDER BY coalesce(queue_order, job_id) LIMIT ?2"));
  stmt.Bind(1, requirement_id).Bind(2, limit);
  std::vector<QueuedJob> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    jobs.push_back(ReadQueuedJob(stmt));
  }
  return jobs;
}

StatusOr<std::vector<std::pair<int64_t, int64_t>>> JobQueue::QueuedPerRequirement(
    std::optional<int64_t> sweep_id) {
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare(sweep_id ? "SELECT requirement_id, SUM(n) FROM job_counts WHERE "
                                           "sweep_id = ?1 AND state = 'queued' AND n > 0 "
                                           "GROUP BY requirement_id"
                                         : "SELECT requirement_id, SUM(n) FROM job_counts WHERE "
                                           "state = 'queued' AND n > 0 GROUP BY requirement_id"));
  if (sweep_id) stmt.Bind(1, *sweep_id);
  std::vector<std::pair<int64_t, int64_t>> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    out.emplace_back(stmt.Int(0), stmt.Int(1));
  }
  return out;
}

StatusOr<int> JobQueue::MarkRunning(int64_t job_id, int64_t host_id) {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare("UPDATE jobs SET state = 'running', attempts = attempts + 1, host_id = ?2, "
                   "started_at = ?3 WHERE job_id = ?1 AND state = 'queued' RETURNING attempts"));
  stmt.Bind(1, job_id).Bind(2, host_id).Bind(3, UtcNowIso8601());
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return FailedPrecondition("job " + std::to_string(job_id) + " is no longer queued");
  int attempt = static_cast<int>(stmt.Int(0));
  RETURN_IF_ERROR(stmt.Run());  // finish the statement before its transaction ends
  RETURN_IF_ERROR(tx.Commit());
  return attempt;
}

StatusOr<bool> JobQueue::UndoHandOut(int64_t job_id, int attempt) {
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare("UPDATE jobs SET state = 'queued', attempts = attempts - 1, "
                                "started_at = NULL WHERE job_id = ?1 AND attempts = ?2 AND "
                                "state = 'running'"));
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(stmt.Bind(1, job_id).Bind(2, attempt).Run());
  const bool undone = db_->Changes() == 1;
  RETURN_IF_ERROR(tx.Commit());
  return undone;
}

StatusOr<bool> JobQueue::RequeueOrFail(int64_t job_id, int attempt, int max_attempts,
                                       const std::string& reason) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(
      auto find,
      db_->Prepare("SELECT attempts, sweep_id, (SELECT count(*) FROM result_processes p WHERE "
                   "p.job_id = jobs.job_id) FROM jobs WHERE job_id = ?1 AND state = 'running'"));
  find.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, find.Step());
  if (!row || find.Int(0) != attempt) return false;  // already finished or handed out again
  int64_t sweep_id = find.Int(1);
  // The hand-outs that brought a process of a repeated job (schemas/sweep.md,
  // Processes) were not lost: only the others count towards max_attempts.
  const int64_t lost = attempt - find.Int(2);
  bool requeue = lost < max_attempts;
  ASSIGN_OR_RETURN(
      auto update,
      db_->Prepare(requeue ? "UPDATE jobs SET state = 'queued', error = ?2 WHERE job_id = ?1"
                           : "UPDATE jobs SET state = 'failed', error = ?2, finished_at = ?3 WHERE "
                             "job_id = ?1"));
  std::string message =
      requeue ? reason : reason + "; gave up after " + std::to_string(lost) + " attempts";
  update.Bind(1, job_id).Bind(2, message);
  if (!requeue) update.Bind(3, UtcNowIso8601());
  RETURN_IF_ERROR(update.Run());
  if (!requeue) RETURN_IF_ERROR(FinishSweepIfComplete(sweep_id));
  RETURN_IF_ERROR(tx.Commit());
  return requeue;
}

Status JobQueue::FinishSweepIfComplete(int64_t sweep_id) {
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare(
          "UPDATE sweeps SET state = 'done', finished_at = ?2 WHERE sweep_id = ?1 "
          "AND state = 'running' AND next_combination IS NULL AND NOT EXISTS (SELECT 1 FROM "
          "job_counts WHERE "
          "sweep_id = ?1 AND state IN ('queued', 'running') AND n > 0)"));
  return stmt.Bind(1, sweep_id).Bind(2, UtcNowIso8601()).Run();
}

StatusOr<int> JobQueue::CancelSweep(int64_t sweep_id) {
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
  // Jobs not stored yet never will be.
  ASSIGN_OR_RETURN(auto sweep, db_->Prepare("UPDATE sweeps SET state = 'cancelled', finished_at = "
                                            "?2, next_combination = NULL WHERE sweep_id = ?1 AND "
                                            "state = 'running'"));
  RETURN_IF_ERROR(sweep.Bind(1, sweep_id).Bind(2, now).Run());
  RETURN_IF_ERROR(tx.Commit());
  return cancelled;
}

StatusOr<std::vector<RunningJob>> JobQueue::RunningJobs() {
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

StatusOr<std::unordered_map<int64_t, RunningJobSummary>> JobQueue::RunningJobConfigs() {
  // One json_extract of several paths per job (each path alone parses the spec again);
  // a value of the wrong type reads as absent (a checked spec has none).
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare("SELECT job_id, sweep_id, kind, COALESCE(started_at, ''), json_extract("
                   "spec, '$.model', '$.mode', '$.dtype', '$.batch_size', '$.threads', "
                   "'$.device') FROM jobs WHERE state = 'running'"));
  std::unordered_map<int64_t, RunningJobSummary> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    RunningJobSummary job;
    job.sweep_id = stmt.Int(1);
    job.kind = stmt.Text(2);
    job.started_at = stmt.Text(3);
    const json values = json::parse(stmt.IsNull(4) ? "[]" : stmt.Text(4), nullptr, false);
    auto text = [&](size_t i) {
      return values.is_array() && i < values.size() && values[i].is_string()
                 ? std::optional<std::string>(values[i].get<std::string>())
                 : std::nullopt;
    };
    auto integer = [&](size_t i) {
      return values.is_array() && i < values.size() && values[i].is_number_integer()
                 ? std::optional<int64_t>(values[i].get<int64_t>())
                 : std::nullopt;
    };
    job.model = text(0);
    job.mode = text(1);
    job.dtype = text(2);
    job.batch_size = integer(3);
    job.threads = integer(4);
    job.device = text(5).value_or("cpu");
    jobs.emplace(stmt.Int(0), std::move(job));
  }
  return jobs;
}

StatusOr<std::vector<SweepOverview>> JobQueue::SweepStatus(std::optional<int64_t> sweep_id,
                                                           int limit) {
  // From the counts the triggers keep (job_counts, schemas/migrations/001_baseline.sql),
  // not by counting jobs: a few rows per sweep however many jobs it has.
  std::string sql =
      "SELECT s.sweep_id, s.name, s.state, s.created_at, s.finished_at, "
      "COALESCE(SUM(c.n), 0), COALESCE(SUM(c.n) FILTER (WHERE c.state = 'queued'), 0), "
      "COALESCE(SUM(c.n) FILTER (WHERE c.state = 'running'), 0), "
      "COALESCE(SUM(c.n) FILTER (WHERE c.state = 'done'), 0), "
      "COALESCE(SUM(c.n) FILTER (WHERE c.state = 'failed'), 0), "
      "COALESCE(SUM(c.n) FILTER (WHERE c.state = 'cancelled'), 0), "
      "CASE WHEN s.next_combination IS NULL THEN 0 "
      "ELSE MAX(s.jobs_planned - COALESCE(SUM(c.n), 0), 0) END, s.labels "
      // Only the columns shown: a large sweep's spec (a 100,000-value axis is 600 KB of
      // overflow pages) copied into the subquery's rows cost a status reply milliseconds
      // per sweep, read back from disk under load.
      "FROM (SELECT sweep_id, name, state, created_at, finished_at, next_combination, "
      "jobs_planned, labels FROM sweeps ";
  sql += sweep_id ? "WHERE sweep_id = ?1 " : "";
  sql +=
      "ORDER BY sweep_id DESC LIMIT ?2) s LEFT JOIN job_counts c ON c.sweep_id = s.sweep_id "
      "GROUP BY s.sweep_id ORDER BY s.sweep_id DESC";
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare(sql));
  if (sweep_id) stmt.Bind(1, *sweep_id);
  stmt.Bind(2, limit);
  std::vector<SweepOverview> sweeps;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    SweepOverview sweep;
    sweep.sweep_id = stmt.Int(0);
    sweep.name = stmt.Text(1);
    sweep.state = stmt.Text(2);
    sweep.created_at = stmt.Text(3);
    if (!stmt.IsNull(4)) sweep.finished_at = stmt.Text(4);
    // total counts the jobs not stored yet (`storing`) of a large sweep
    sweep.jobs.total = stmt.Int(5) + stmt.Int(11);
    sweep.jobs.storing = stmt.Int(11);
    sweep.jobs.queued = stmt.Int(6);
    sweep.jobs.running = stmt.Int(7);
    sweep.jobs.done = stmt.Int(8);
    sweep.jobs.failed = stmt.Int(9);
    sweep.jobs.cancelled = stmt.Int(10);
    // Labels were checked (strings) when the sweep was stored.
    const json labels = json::parse(stmt.Text(12), nullptr, false);
    if (labels.is_object()) {
      for (const auto& [key, value] : labels.items()) {
        if (value.is_string()) sweep.labels.emplace(key, value.get<std::string>());
      }
    }
    sweeps.push_back(std::move(sweep));
  }
  if (sweep_id && sweeps.empty()) return NotFound("no sweep with id " + std::to_string(*sweep_id));
  return sweeps;
}

}  // namespace benchfleet
