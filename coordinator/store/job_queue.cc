// JobQueue (job_queue.h): a sweep and its jobs stored, reruns and later processes queued;
// job_queue_states.cc has what happens to a job after that.
#include "coordinator/store/job_queue.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "common/clock.h"
#include "common/job_spec.h"

namespace benchfleet {

namespace {

// The columns JobNeeds is stored in, bound from `needs` at `first`, `first` + 1, ...
void BindNeeds(Statement& stmt, int first, const JobNeeds& needs) {
  stmt.Bind(first, needs.world_size)
      .Bind(first + 1, static_cast<int64_t>(needs.spread))
      .Bind(first + 2, needs.local_processes)
      .Bind(first + 3, static_cast<int64_t>(needs.replicated))
      .Bind(first + 4, needs.local_cpus)
      .Bind(first + 5, needs.worker.torch)
      .Bind(first + 6, needs.worker.torch_min)
      .Bind(first + 7, needs.worker.technique);
}

}  // namespace

StatusOr<int64_t> JobQueue::RequirementId(const std::string& kind, const std::string& pinned_host,
                                          const json& select, const std::string& device) {
  const std::string select_text = select.is_object() ? select.dump() : "{}";
  ASSIGN_OR_RETURN(auto insert,
                   db_->Prepare("INSERT INTO requirements(kind, pinned_host, select_json, device) "
                                "VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING"));
  RETURN_IF_ERROR(
      insert.Bind(1, kind).Bind(2, pinned_host).Bind(3, select_text).Bind(4, device).Run());
  ASSIGN_OR_RETURN(auto find,
                   db_->Prepare("SELECT requirement_id FROM requirements WHERE kind = ?1 AND "
                                "pinned_host = ?2 AND select_json = ?3 AND device = ?4"));
  find.Bind(1, kind).Bind(2, pinned_host).Bind(3, select_text).Bind(4, device);
  ASSIGN_OR_RETURN(bool row, find.Step());
  if (!row) return Internal("requirement not stored");
  return find.Int(0);
}

namespace {

// sweeps.pinned as written by AcceptSweep: {"device": ["agent", ...], ...}.
PinnedAgents PinnedFromText(const std::string& text) {
  PinnedAgents pinned;
  const json parsed = json::parse(text, nullptr, false);
  if (!parsed.is_object()) return pinned;
  for (const auto& [device, hosts] : parsed.items()) {
    auto& agents = pinned[device];
    if (!hosts.is_array()) continue;
    for (const json& host : hosts) {
      if (host.is_string()) agents.push_back(host.get<std::string>());
    }
  }
  return pinned;
}

}  // namespace

StatusOr<std::optional<StoredSweep>> JobQueue::FindSubmission(const std::string& submission_id) {
  if (submission_id.empty()) return std::optional<StoredSweep>();
  // A sweep whose jobs are still being stored counts the jobs it will have.
  ASSIGN_OR_RETURN(auto find,
                   db_->Prepare("SELECT s.sweep_id, CASE WHEN s.next_combination IS NULL THEN "
                                "(SELECT COUNT(*) FROM jobs j WHERE j.sweep_id = s.sweep_id) "
                                "ELSE s.jobs_planned END, s.pinned FROM sweeps s "
                                "WHERE s.submission_id = ?1"));
  find.Bind(1, submission_id);
  ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return std::optional<StoredSweep>();
  StoredSweep stored;
  stored.sweep_id = find.Int(0);
  stored.jobs = find.Int(1);
  stored.existing = true;
  if (!find.IsNull(2)) {
    std::set<std::string> agents;
    for (const auto& [device, hosts] : PinnedFromText(find.Text(2)))
      agents.insert(hosts.begin(), hosts.end());
    stored.agents.assign(agents.begin(), agents.end());
    return std::optional<StoredSweep>(std::move(stored));
  }
  // Sweeps stored whole, before pinned was kept: their jobs say where they go.
  ASSIGN_OR_RETURN(auto hosts, db_->Prepare("SELECT DISTINCT pinned_host FROM jobs WHERE "
                                            "sweep_id = ?1 AND pinned_host IS NOT NULL "
                                            "ORDER BY pinned_host"));
  hosts.Bind(1, stored.sweep_id);
  while (true) {
    ASSIGN_OR_RETURN(bool row, hosts.Step());
    if (!row) break;
    stored.agents.push_back(hosts.Text(0));
  }
  return std::optional<StoredSweep>(std::move(stored));
}

StatusOr<StoredSweep> JobQueue::AcceptSweep(const Sweep& sweep, const PinnedAgents& pinned,
                                            const std::string& submission_id) {
  StoredSweep stored;
  stored.jobs = static_cast<int64_t>(sweep.combination_count * sweep.JobsPerCombination());
  std::set<std::string> agents;
  if (sweep.checked.checked == sweep.combination_count) {
    // Checked whole: the combinations kept (not excluded or skipped), per placement.
    stored.jobs = 0;
    for (const auto& [placement, kept] : sweep.checked.kept) {
      if (pinned.empty()) {
        stored.jobs += static_cast<int64_t>(kept);
        continue;
      }
      auto hosts = pinned.find(placement);
      if (hosts == pinned.end()) continue;
      stored.jobs += static_cast<int64_t>(kept * hosts->second.size());
      agents.insert(hosts->second.begin(), hosts->second.end());
    }
  } else if (!pinned.empty()) {
    // Not checked yet: count the jobs of each combination as it would be stored.
    stored.jobs = 0;
    RETURN_IF_ERROR(sweep.ForEachCombination([&](const Combination& combination) {
      auto hosts = pinned.find(combination.placement);
      if (hosts == pinned.end()) return Status::Ok();
      stored.jobs += static_cast<int64_t>(hosts->second.size());
      agents.insert(hosts->second.begin(), hosts->second.end());
      return Status::Ok();
    }));
  }
  stored.agents.assign(agents.begin(), agents.end());
  ASSIGN_OR_RETURN(auto insert_sweep,
                   db_->Prepare("INSERT INTO sweeps(name, spec, created_at, submission_id, "
                                "jobs_planned, next_combination, pinned) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  insert_sweep.Bind(1, sweep.name).Bind(2, sweep.source.dump()).Bind(3, UtcNowIso8601());
  if (submission_id.empty()) {
    insert_sweep.BindNull(4);
  } else {
    insert_sweep.Bind(4, submission_id);
  }
  insert_sweep.Bind(5, stored.jobs).Bind(6, int64_t{0});
  if (pinned.empty()) {
    insert_sweep.BindNull(7);
  } else {
    insert_sweep.Bind(7, json(pinned).dump());
  }
  RETURN_IF_ERROR(insert_sweep.Run());
  stored.sweep_id = db_->LastInsertRowid();
  return stored;
}

StatusOr<bool> JobQueue::StoreJobs(int64_t sweep_id, const Sweep& sweep, const PinnedAgents& pinned,
                                   size_t first, size_t count) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  const size_t end =
      std::min(sweep.combination_count, first + std::min(count, sweep.combination_count));
  // Claims the slice first: a cancelled sweep (next_combination NULL) gets no more jobs,
  // and a slice is never stored twice.
  ASSIGN_OR_RETURN(auto claim, db_->Prepare("UPDATE sweeps SET next_combination = ?3 WHERE "
                                            "sweep_id = ?1 AND next_combination = ?2 AND "
                                            "state = 'running'"));
  claim.Bind(1, sweep_id).Bind(2, static_cast<int64_t>(first));
  if (end >= sweep.combination_count) {
    claim.BindNull(3);
  } else {
    claim.Bind(3, static_cast<int64_t>(end));
  }
  RETURN_IF_ERROR(claim.Run());
  if (db_->Changes() == 0) return false;

  ASSIGN_OR_RETURN(
      auto insert_job,
      db_->Prepare("INSERT INTO jobs(sweep_id, pinned_host, spec, timeout_s, created_at, "
                   "requirement_id, world_size, spread, local_processes, replicated, local_cpus, "
                   "torch, torch_min, technique) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"));
  const std::string now = UtcNowIso8601();
  const double timeout_s = JobTimeoutSeconds(sweep);
  // (host, placement, thread placement)
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> requirements;
  auto add = [&](const Combination& combination, const std::string& host) -> Status {
    // A job free to go to any matching agent goes only to one whose CPUs can place its
    // threads as asked (matching.h); one pinned to an agent runs there, or fails there
    // with the reason.
    json placed = json::object();
    if (host.empty() && combination.spec.find("\"thread_placement\"") != std::string::npos) {
      placed = SelectWithThreadPlacement(placed, combination.Spec());
    }
    auto key = std::make_tuple(host, combination.placement, placed.empty() ? "" : placed.dump());
    if (!requirements.count(key)) {
      json select = SelectWithWorker(sweep.select, combination.needs.worker);
      select.update(placed);
      // A pair runs both sides on one agent: it must have a worker for each (and, for a
      // duet, the CPUs of both).
      if (!combination.versus.is_null()) {
        select = SelectWithVersus(select,
                                  combination.versus_b_needs.worker == combination.needs.worker
                                      ? WorkerNeeds{}
                                      : combination.versus_b_needs.worker,
                                  combination.versus_cpus);
      }
      ASSIGN_OR_RETURN(requirements[key],
                       RequirementId("benchmark", host, select, combination.device));
    }
    insert_job.Bind(1, sweep_id);
    if (!host.empty()) {
      insert_job.Bind(2, host);
    } else {
      insert_job.BindNull(2);
    }
    insert_job.Bind(3, combination.spec).Bind(4, timeout_s).Bind(5, now).Bind(6, requirements[key]);
    BindNeeds(insert_job, 7, combination.needs);
    RETURN_IF_ERROR(insert_job.Run());
    insert_job.Reset();
    if (combination.versus.is_null()) return Status::Ok();
    // Side B, stored after side A and never handed out by itself (007_versus.sql).
    const int64_t a_id = db_->LastInsertRowid();
    insert_job.Bind(1, sweep_id);
    if (!host.empty()) {
      insert_job.Bind(2, host);
    } else {
      insert_job.BindNull(2);
    }
    insert_job.Bind(3, combination.versus_b_spec)
        .Bind(4, timeout_s)
        .Bind(5, now)
        .Bind(6, requirements[key]);
    BindNeeds(insert_job, 7, combination.versus_b_needs);
    RETURN_IF_ERROR(insert_job.Run());
    insert_job.Reset();
    const int64_t b_id = db_->LastInsertRowid();
    ASSIGN_OR_RETURN(auto link,
                     db_->Prepare("UPDATE jobs SET versus = CASE WHEN job_id = ?1 THEN ?3 END, "
                                  "versus_a_job_id = CASE WHEN job_id = ?2 THEN ?1 END "
                                  "WHERE job_id IN (?1, ?2)"));
    return link.Bind(1, a_id).Bind(2, b_id).Bind(3, combination.versus.dump()).Run();
  };
  RETURN_IF_ERROR(
      sweep.ForEachCombination(first, end - first, [&](const Combination& combination) -> Status {
        if (pinned.empty()) return add(combination, "");
        auto hosts = pinned.find(combination.placement);
        if (hosts == pinned.end()) return Status::Ok();
        for (const std::string& host : hosts->second) RETURN_IF_ERROR(add(combination, host));
        return Status::Ok();
      }));
  // A last slice with no job (its device has no agent) may end a sweep already run.
  if (end >= sweep.combination_count) RETURN_IF_ERROR(FinishSweepIfComplete(sweep_id));
  RETURN_IF_ERROR(tx.Commit());
  return true;
}

StatusOr<std::vector<UnstoredSweep>> JobQueue::UnstoredSweeps() {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT sweep_id, spec, pinned, next_combination FROM "
                                           "sweeps WHERE next_combination IS NOT NULL AND "
                                           "state = 'running' ORDER BY sweep_id"));
  std::vector<UnstoredSweep> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    UnstoredSweep sweep;
    sweep.sweep_id = stmt.Int(0);
    sweep.spec = json::parse(stmt.Text(1), nullptr, false);
    if (!stmt.IsNull(2)) sweep.pinned = PinnedFromText(stmt.Text(2));
    sweep.next_combination = static_cast<size_t>(std::max<int64_t>(0, stmt.Int(3)));
    out.push_back(std::move(sweep));
  }
  return out;
}

StatusOr<int64_t> JobQueue::CreateCalibration(const std::vector<std::string>& agents,
                                              double timeout_s) {
  std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  json spec = {{"name", "calibration"}, {"kind", "calibration"}, {"agents", agents}};
  RETURN_IF_ERROR(InsertRow(*db_, "sweeps",
                            {{"name", "calibration"}, {"spec", spec.dump()}, {"created_at", now}}));
  int64_t sweep_id = db_->LastInsertRowid();
  for (const std::string& agent : agents) {
    ASSIGN_OR_RETURN(int64_t requirement, RequirementId("calibration", agent, json::object(), ""));
    RETURN_IF_ERROR(InsertRow(*db_, "jobs",
                              {{"sweep_id", sweep_id},
                               {"pinned_host", agent},
                               {"kind", "calibration"},
                               {"spec", json({{"kind", "calibration"}}).dump()},
                               {"timeout_s", timeout_s},
                               {"created_at", now},
                               {"requirement_id", requirement}}));
  }
  RETURN_IF_ERROR(tx.Commit());
  return sweep_id;
}

StatusOr<QueuedReruns> JobQueue::QueueReruns(int64_t job_id, const std::string& host, int count) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  // The reruns go where the job went, on the same device.
  ASSIGN_OR_RETURN(QueuedJob job, FindJob(job_id));
  ASSIGN_OR_RETURN(
      auto device,
      db_->Prepare("SELECT device, select_json FROM requirements WHERE requirement_id = ?1"));
  device.Bind(1, job.requirement_id);
  ASSIGN_OR_RETURN(bool found, device.Step());
  if (!found) return NotFound("no requirement of job " + std::to_string(job_id));
  QueuedReruns queued;
  queued.sweep_id = job.sweep_id;
  // On the same worker of that host: the job's own needs of it. A gang spread over
  // agents has its rank 0 there and its other ranks on agents its sweep's select
  // matches (Dispatcher::CanBePartner): the rerun keeps that select.
  json select = json::object();
  if (job.needs.spread) {
    select = json::parse(device.Text(1), nullptr, false);
    if (!select.is_object()) select = json::object();
  }
  ASSIGN_OR_RETURN(
      int64_t requirement,
      RequirementId("benchmark", host, SelectWithWorker(select, job.needs.worker), device.Text(0)));
  const std::string now = UtcNowIso8601();
  for (int i = 0; i < count; ++i) {
    RETURN_IF_ERROR(InsertRow(*db_, "jobs",
                              {{"sweep_id", queued.sweep_id},
                               {"pinned_host", host},
                               {"spec", job.spec},
                               {"timeout_s", job.timeout_s},
                               {"created_at", now},
                               {"requirement_id", requirement},
                               {"confirms_job_id", job_id},
                               {"world_size", job.needs.world_size},
                               {"spread", static_cast<int64_t>(job.needs.spread)},
                               {"local_processes", job.needs.local_processes},
                               {"replicated", static_cast<int64_t>(job.needs.replicated)},
                               {"local_cpus", job.needs.local_cpus},
                               {"torch", job.needs.worker.torch},
                               {"torch_min", job.needs.worker.torch_min},
                               {"technique", job.needs.worker.technique}}));
    queued.job_ids.push_back(db_->LastInsertRowid());
  }
  // Its sweep runs on until the reruns are done.
  ASSIGN_OR_RETURN(auto reopen,
                   db_->Prepare("UPDATE sweeps SET state = 'running', finished_at = NULL "
                                "WHERE sweep_id = ?1 AND state = 'done'"));
  RETURN_IF_ERROR(reopen.Bind(1, queued.sweep_id).Run());
  RETURN_IF_ERROR(tx.Commit());
  return queued;
}

Status JobQueue::QueueNextProcess(int64_t job_id, const std::string& host, int64_t round,
                                  const std::string& timing) {
  ASSIGN_OR_RETURN(QueuedJob job, FindJob(job_id));
  ASSIGN_OR_RETURN(auto device,
                   db_->Prepare("SELECT device FROM requirements WHERE requirement_id = ?1"));
  device.Bind(1, job.requirement_id);
  ASSIGN_OR_RETURN(bool found, device.Step());
  if (!found) return NotFound("no requirement of job " + std::to_string(job_id));
  // On the agent that ran the first, with the job's own needs of its worker.
  ASSIGN_OR_RETURN(
      int64_t requirement,
      RequirementId("benchmark", host, SelectWithWorker(json::object(), job.needs.worker),
                    device.Text(0)));
  // Round r queues behind every first process (job ids stay below 2^40); within the
  // round, by a hash of the job and the round: each round in another order.
  uint64_t mixed = static_cast<uint64_t>(job_id) * 0x9E3779B97F4A7C15ull +
                   static_cast<uint64_t>(round) * 0xBF58476D1CE4E5B9ull;
  mixed ^= mixed >> 31;
  mixed *= 0x94D049BB133111EBull;
  mixed ^= mixed >> 29;
  const int64_t order = (round << 40) | static_cast<int64_t>(mixed & 0xFFFFFFFFull);
  ASSIGN_OR_RETURN(
      auto update,
      db_->Prepare("UPDATE jobs SET state = 'queued', requirement_id = ?2, pinned_host = ?3, "
                   "queue_order = ?4, process_timing = ?5, error = NULL WHERE job_id = ?1"));
  update.Bind(1, job_id).Bind(2, requirement).Bind(3, host).Bind(4, order);
  if (timing.empty()) {
    update.BindNull(5);
  } else {
    update.Bind(5, timing);
  }
  return update.Run();
}

}  // namespace benchfleet
