#include "coordinator/store.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "common/clock.h"
#include "common/job_spec.h"
#include "common/log.h"
#include "common/result_fields.h"
#include "coordinator/sample_blob.h"
#include "coordinator/schema.h"

namespace benchfleet {
namespace {

// A writer waits this long for a lock held by another process (a user's sqlite3 shell
// in a write transaction) before the operation fails and is retried later.
constexpr int kBusyTimeoutMs = 500;

// The results row: one statement for every result, its text built once (per result it
// cost as much as a tenth of storing one under load). Every column is named; one a
// result has no value for is left unbound, NULL, as an INSERT naming fewer would.
enum ResultColumn : int {  // parameter positions, from 1
  kResultJobId = 1, kResultSweepId, kResultAttempt, kResultHostId, kResultOk, kResultDetail,
  kResultReceivedAt, kResultError,
  // The job's configuration, the coordinator's own (from the job it handed out).
  kResultDevice, kResultModel, kResultMode, kResultDtype, kResultBatchSize, kResultThreads,
  kResultInteropThreads, kResultOnednn, kResultModelArgs,
  kResultPeakGflops, kResultFractionOfPeak,
  kResultFingerprint, kResultSeries, kResultSeriesKey,  // docs/regressions.md
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
    for (const ResultField& field : ResultFields()) out.push_back(field.column.empty() ? 0 : next++);
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

StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  ASSIGN_OR_RETURN(auto db, Database::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  sqlite3_busy_timeout(db->handle(), kBusyTimeoutMs);
  // Every statement the store runs is compiled once (the dispatcher and results run the
  // same few thousands of times a second).
  db->CacheStatements();
  // WAL lets readers (the CLI's queries, a user's sqlite3 shell) run beside the writer;
  // synchronous=FULL makes every commit durable before we acknowledge it to a peer.
  // auto_vacuum takes effect only in a new, empty database (an older one is switched by
  // UseIncrementalVacuum below): pruned samples' space then goes back in steps.
  // Every write is a savepoint of the loop's round (group commit): their journals kept
  // in memory, not in temporary files, halve the CPU a job costs; a 16 MB page cache
  // keeps a round's pages from spilling to the log before its commit.
  RETURN_IF_ERROR(
      db->Exec("PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
               "PRAGMA cache_size=-16384; PRAGMA temp_store=MEMORY;"));
  // Converting a store from before the baseline packs its old per-sample rows with it
  // (schemas/legacy_upgrade.sql).
  RETURN_IF_ERROR(RegisterSampleFunctions(db->handle()));
  std::unique_ptr<Store> store(new Store(std::move(db), path));
  // Foreign keys are enforced once the schema is current: a conversion or a migration
  // that rebuilds a table others refer to drops the old one first, which enforcement
  // would refuse (SQLite's procedure for changing a table's layout asks for it off).
  RETURN_IF_ERROR(store->Migrate());
  RETURN_IF_ERROR(store->db_->Exec("PRAGMA foreign_keys=ON"));
  RETURN_IF_ERROR(store->ApplyFieldTables());
  store->UseIncrementalVacuum();
  ASSIGN_OR_RETURN(store->checkpointer_, WalCheckpointer::Start(path, store->db_->handle()));
  return store;
}

void Store::UseIncrementalVacuum() {
  {
    auto mode = db_->Prepare("PRAGMA auto_vacuum");  // finished before the VACUUM
    if (!mode.ok() || !mode->Step().ok() || mode->Int(0) == 2) return;
  }
  // A store made before auto_vacuum was set (its old per-sample table, packed into
  // result_samples and dropped, left most of it free): one full VACUUM, outside WAL mode
  // where the switch can happen, while no other connection of ours is open. A user's
  // reader holding the file makes it wait for another start; prunes then vacuum in full.
  LOG_INFO("vacuuming " << path_ << " once, so that pruned space goes back in steps");
  Status left_wal = db_->Exec("PRAGMA journal_mode=DELETE");
  Status vacuumed = left_wal.ok() ? db_->Exec("PRAGMA auto_vacuum=INCREMENTAL; VACUUM") : left_wal;
  Status back = db_->Exec("PRAGMA journal_mode=WAL");
  if (!vacuumed.ok() || !back.ok()) {
    LOG_WARN("left " << path_ << " without incremental vacuum for now: "
                     << (vacuumed.ok() ? back : vacuumed).message());
  }
  // Back in WAL mode the log and its index are opened by the next read. That read is
  // the writer's, here, before any other connection exists: otherwise the first reads
  // of the checkpointer thread and of a user's client race to build the index, and the
  // loser gets SQLITE_BUSY at once unless it has a busy handler (a plain sqlite3 shell
  // does not).
  Status indexed = db_->Exec("SELECT count(*) FROM sqlite_master");
  if (!indexed.ok()) LOG_WARN("cannot read " << path_ << " after the vacuum: " << indexed.message());
}

int Store::SchemaVersion() {
  auto stmt = db_->Prepare("PRAGMA user_version");
  if (!stmt.ok() || !stmt->Step().ok()) return -1;
  return static_cast<int>(stmt->Int(0));
}

Status Store::Migrate() { return MigrateSchema(*db_, path_); }

Status Store::ApplyFieldTables() {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  RETURN_IF_ERROR(AddDeclaredColumns(*db_, /*log=*/true));
  RETURN_IF_ERROR(RecreateViews(*db_));
  return tx.Commit();
}

StatusOr<int64_t> Store::UpsertHost(const std::string& name, const std::string& machine_id,
                                    const json& tags, const json& capabilities,
                                    const HostFingerprint& fingerprint) {
  std::string now = UtcNowIso8601();
  ASSIGN_OR_RETURN(
      auto stmt,
      db_->Prepare(
          "INSERT INTO hosts(name, machine_id, tags, capabilities, first_seen, last_seen, "
          "fingerprint, fingerprint_parts) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7) "
          "ON CONFLICT(name) DO UPDATE SET machine_id = excluded.machine_id, tags = excluded.tags, "
          "capabilities = excluded.capabilities, last_seen = excluded.last_seen, "
          "fingerprint = excluded.fingerprint, fingerprint_parts = excluded.fingerprint_parts "
          "RETURNING host_id"));
  stmt.Bind(1, name)
      .Bind(2, machine_id)
      .Bind(3, tags.dump())
      .Bind(4, capabilities.dump())
      .Bind(5, now);
  if (fingerprint.sha256.empty()) {
    stmt.BindNull(6).BindNull(7);
  } else {
    stmt.Bind(6, fingerprint.sha256).Bind(7, fingerprint.parts.dump());
  }
  // Every write goes through a Transaction, so it joins the loop's group commit.
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal("host upsert returned no row");
  int64_t host_id = stmt.Int(0);
  RETURN_IF_ERROR(stmt.Run());
  RETURN_IF_ERROR(tx.Commit());
  host_fingerprints_[host_id] = fingerprint.sha256;
  return host_id;
}

StatusOr<std::pair<std::string, double>> Store::JobSpecText(int64_t job_id) {
  ASSIGN_OR_RETURN(auto find, db_->Prepare("SELECT spec, timeout_s FROM jobs WHERE job_id = ?1"));
  find.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, find.Step());
  if (!row) return NotFound("no job " + std::to_string(job_id));
  return std::make_pair(find.Text(0), find.Real(1));
}

StatusOr<int64_t> Store::RequirementId(const std::string& kind, const std::string& pinned_host,
                                       const json& select, const std::string& device) {
  const std::string select_text = select.is_object() ? select.dump() : "{}";
  ASSIGN_OR_RETURN(auto insert,
                   db_->Prepare("INSERT INTO requirements(kind, pinned_host, select_json, device) "
                                "VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING"));
  RETURN_IF_ERROR(insert.Bind(1, kind).Bind(2, pinned_host).Bind(3, select_text).Bind(4, device).Run());
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

StatusOr<std::optional<StoredSweep>> Store::FindSubmission(const std::string& submission_id) {
  if (submission_id.empty()) return std::optional<StoredSweep>();
  // A sweep whose jobs are still being stored counts the jobs it will have.
  ASSIGN_OR_RETURN(auto find, db_->Prepare(
                                  "SELECT s.sweep_id, CASE WHEN s.next_combination IS NULL THEN "
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
    for (const auto& [device, hosts] : PinnedFromText(find.Text(2))) agents.insert(hosts.begin(), hosts.end());
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

StatusOr<StoredSweep> Store::AcceptSweep(const Sweep& sweep, const PinnedAgents& pinned,
                                         const std::string& submission_id) {
  StoredSweep stored;
  stored.jobs = static_cast<int64_t>(sweep.combination_count);
  std::set<std::string> agents;
  if (sweep.checked.checked == sweep.combination_count) {
    // Checked whole: the combinations kept (not excluded or skipped), per device.
    stored.jobs = 0;
    for (const auto& [device, kept] : sweep.checked.kept) {
      if (pinned.empty()) {
        stored.jobs += static_cast<int64_t>(kept);
        continue;
      }
      auto hosts = pinned.find(device);
      if (hosts == pinned.end()) continue;
      stored.jobs += static_cast<int64_t>(kept * hosts->second.size());
      agents.insert(hosts->second.begin(), hosts->second.end());
    }
  } else if (!pinned.empty()) {
    // Each value of the device axis appears in the same share of the combinations.
    const std::vector<std::string> devices = sweep.Devices();
    int64_t per_round_of_devices = 0;
    for (const std::string& device : devices) {
      auto hosts = pinned.find(device);
      if (hosts == pinned.end()) continue;
      per_round_of_devices += static_cast<int64_t>(hosts->second.size());
      agents.insert(hosts->second.begin(), hosts->second.end());
    }
    stored.jobs = static_cast<int64_t>(sweep.combination_count / devices.size()) * per_round_of_devices;
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

StatusOr<bool> Store::StoreJobs(int64_t sweep_id, const Sweep& sweep, const PinnedAgents& pinned,
                                size_t first, size_t count,
                                const std::function<void()>& every_hundred_jobs) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  const size_t end = std::min(sweep.combination_count, first + std::min(count, sweep.combination_count));
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
                   "requirement_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  const std::string now = UtcNowIso8601();
  const double timeout_s = JobTimeoutSeconds(sweep);
  std::map<std::pair<std::string, std::string>, int64_t> requirements;  // (host, device)
  int64_t jobs = 0;
  auto add = [&](const Combination& combination, const std::string& host) -> Status {
    auto key = std::make_pair(host, combination.device);
    if (!requirements.count(key)) {
      ASSIGN_OR_RETURN(requirements[key],
                       RequirementId("benchmark", host, sweep.select, combination.device));
    }
    insert_job.Bind(1, sweep_id);
    if (!host.empty()) {
      insert_job.Bind(2, host);
    } else {
      insert_job.BindNull(2);
    }
    insert_job.Bind(3, combination.spec).Bind(4, timeout_s).Bind(5, now).Bind(6, requirements[key]);
    RETURN_IF_ERROR(insert_job.Run());
    insert_job.Reset();
    if (every_hundred_jobs && ++jobs % 100 == 0) every_hundred_jobs();
    return Status::Ok();
  };
  RETURN_IF_ERROR(sweep.ForEachCombination(first, end - first, [&](const Combination& combination) -> Status {
    if (pinned.empty()) return add(combination, "");
    auto hosts = pinned.find(combination.device);
    if (hosts == pinned.end()) return Status::Ok();
    for (const std::string& host : hosts->second) RETURN_IF_ERROR(add(combination, host));
    return Status::Ok();
  }));
  // A last slice with no job (its device has no agent) may end a sweep already run.
  if (end >= sweep.combination_count) RETURN_IF_ERROR(FinishSweepIfComplete(sweep_id));
  RETURN_IF_ERROR(tx.Commit());
  return true;
}

StatusOr<StoredSweep> Store::CreateSweep(const Sweep& sweep, const PinnedAgents& pinned,
                                         const std::string& submission_id,
                                         const std::function<void()>& every_hundred_jobs) {
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  // A resend of a submission (the client timed out while we were busy) is answered
  // with the sweep the first one stored.
  ASSIGN_OR_RETURN(std::optional<StoredSweep> existing, FindSubmission(submission_id));
  if (existing) return *existing;  // nothing written; the transaction rolls back
  ASSIGN_OR_RETURN(StoredSweep stored, AcceptSweep(sweep, pinned, submission_id));
  ASSIGN_OR_RETURN(bool whole, StoreJobs(stored.sweep_id, sweep, pinned, 0, sweep.combination_count,
                                          every_hundred_jobs));
  if (!whole) return Internal("the sweep just stored did not take its jobs");
  RETURN_IF_ERROR(tx.Commit());
  return stored;
}

StatusOr<std::vector<UnstoredSweep>> Store::UnstoredSweeps() {
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

StatusOr<int64_t> Store::CreateCalibration(const std::vector<std::string>& agents,
                                           double timeout_s) {
  std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());
  json spec = {{"name", "calibration"}, {"kind", "calibration"}, {"agents", agents}};
  RETURN_IF_ERROR(Insert("sweeps", {{"name", "calibration"}, {"spec", spec.dump()}, {"created_at", now}}));
  int64_t sweep_id = db_->LastInsertRowid();
  for (const std::string& agent : agents) {
    ASSIGN_OR_RETURN(int64_t requirement, RequirementId("calibration", agent, json::object(), ""));
    RETURN_IF_ERROR(Insert("jobs", {{"sweep_id", sweep_id},
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

StatusOr<std::vector<JobRequirement>> Store::Requirements() {
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

StatusOr<std::vector<QueuedJob>> Store::OldestQueued(int64_t requirement_id, int limit) {
  ASSIGN_OR_RETURN(auto stmt,
                   db_->Prepare("SELECT job_id, sweep_id, spec, timeout_s, attempts, kind "
                                "FROM jobs WHERE state = 'queued' AND requirement_id = ?1 "
                                "ORDER BY job_id LIMIT ?2"));
  stmt.Bind(1, requirement_id).Bind(2, limit);
  std::vector<QueuedJob> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    QueuedJob job;
    job.job_id = stmt.Int(0);
    job.sweep_id = stmt.Int(1);
    job.requirement_id = requirement_id;
    job.spec = stmt.Text(2);
    job.timeout_s = stmt.Real(3);
    job.attempts = static_cast<int>(stmt.Int(4));
    job.kind = stmt.Text(5);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

StatusOr<std::vector<std::pair<int64_t, int64_t>>> Store::QueuedPerRequirement(
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

StatusOr<int> Store::MarkRunning(int64_t job_id, int64_t host_id) {
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

StatusOr<bool> Store::UndoHandOut(int64_t job_id, int attempt) {
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

namespace {

// The first echoed configuration field that differs from the job's, as an error naming
// it; empty when the echo agrees (absent fields agree).
std::string EchoMismatch(const ResultEcho& echo, const JobSpec& job) {
  auto text = [](const char* name, const std::optional<std::string>& got, const std::string& want) {
    return got && *got != want ? std::string("result.") + name + ": \"" + got->substr(0, 64) +
                                     "\" is not the job's \"" + want + "\""
                               : std::string();
  };
  auto number = [](const char* name, const std::optional<int64_t>& got, int64_t want) {
    return got && *got != want ? std::string("result.") + name + ": " + std::to_string(*got) +
                                     " is not the job's " + std::to_string(want)
                               : std::string();
  };
  for (const std::string& mismatch :
       {text("model", echo.model, job.model), text("mode", echo.mode, job.mode),
        text("dtype", echo.dtype, job.dtype), text("device", echo.device, job.device),
        number("batch_size", echo.batch_size, job.batch_size),
        number("threads", echo.threads, job.threads),
        number("interop_threads", echo.interop_threads, job.interop_threads)}) {
    if (!mismatch.empty()) return mismatch;
  }
  return "";
}

}  // namespace

StatusOr<ResultOutcome> Store::StoreResult(int64_t job_id, int attempt, int64_t host_id,
                                           const std::string& host_name,
                                           const WorkerResult& result, std::string* rejection,
                                           std::optional<JudgedResult>* judged) {
  std::string now = UtcNowIso8601();
  Transaction tx(*db_);
  RETURN_IF_ERROR(tx.Begin());

  ASSIGN_OR_RETURN(auto find, db_->Prepare(
                                  "SELECT j.state, j.attempts, j.sweep_id, r.attempt, j.kind, j.spec, "
                                  "j.confirms_job_id "
                                  "FROM jobs j LEFT JOIN results r ON r.job_id = j.job_id "
                                  "WHERE j.job_id = ?1"));
  find.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool found, find.Step());
  std::string stale_reason;
  int64_t sweep_id = 0;
  std::string kind = "benchmark";
  json spec = json::object();
  std::optional<JobSpec> job;
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
    // The result must be one this job can have: of its kind, and of its configuration.
    const bool calibration = kind == "calibration";
    if (result.ok && result.calibration_kind != calibration) {
      *rejection = calibration ? "result.kind: job " + std::to_string(job_id) +
                                     " is a calibration; its result must be one"
                               : "result.kind: job " + std::to_string(job_id) +
                                     " is a benchmark, not a calibration";
      return ResultOutcome::kRejected;
    }
    if (!calibration) {
      JobSpecError error;
      job = ParseJobConfig(spec, &error);
      if (!job) return Internal("stored job " + std::to_string(job_id) + " does not parse: " + error.message);
      std::string mismatch = EchoMismatch(result.echo, *job);
      if (!mismatch.empty()) {
        *rejection = mismatch;
        return ResultOutcome::kRejected;
      }
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
    ASSIGN_OR_RETURN(auto stale,
                     db_->Prepare("INSERT INTO stale_results(job_id, attempt, host, reason, detail, "
                                  "received_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                                  "ON CONFLICT(job_id, attempt, host) DO NOTHING"));
    RETURN_IF_ERROR(stale.Bind(1, job_id).Bind(2, attempt).Bind(3, host_name).Bind(4, stale_reason)
                        .Bind(5, detail_text).Bind(6, now).Run());
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
    ASSIGN_OR_RETURN(std::string fingerprint, FingerprintOfHost(host_id));
    if (!fingerprint.empty()) {
      series = SeriesOf(fingerprint, spec);
      row.Bind(kResultFingerprint, fingerprint).Bind(kResultSeries, series).Bind(kResultSeriesKey, SeriesKeyOf(series));
    }
  }
  const json& gflops = ResultValue(result, "gflops");
  if (ok && job && gflops.is_number()) {
    ASSIGN_OR_RETURN(json peak, PeakFor(host_id, job->device, job->dtype, job->threads));
    if (peak.is_number() && peak.get<double>() > 0) {
      row.BindJson(kResultPeakGflops, peak);
      row.Bind(kResultFractionOfPeak, gflops.get<double>() / peak.get<double>());
    }
  }
  // A gang that ran on this agent reports all its ranks in one result (a failed one, the
  // ranks that got as far as ending).
  // A gang's result has its ranks: all of them when it succeeded (a lone rank's result,
  // say after a coordinator restart, cannot stand for the gang).
  // Replicas report each copy as a gang reports each rank (they never have ranks too).
  const int64_t world = job ? std::max(job->replicas, JobWorldSize(*job)) : 1;
  const bool gang = job && !job->distributed && world > 1;
  const int64_t ranks = static_cast<int64_t>(result.ranks.size());
  if ((ranks > 0 && (!gang || ranks > world)) || (gang && ok && ranks != world)) {
    *rejection = "result.ranks: " + std::to_string(result.ranks.size()) + " ranks for job " +
                 std::to_string(job_id) + " of " + std::to_string(world);
    return ResultOutcome::kRejected;
  }
  RETURN_IF_ERROR(row.Run());
  if (!result.ranks.empty()) {
    ASSIGN_OR_RETURN(auto rank_row, db_->Prepare(RankRowSql()));
    for (const WorkerResult::Rank& rank : result.ranks) {
      rank_row.Reset();
      rank_row.Bind(1, job_id).Bind(2, rank.host_id != 0 ? rank.host_id : host_id)
          .Bind(3, rank.detail.dump(-1, ' ', false, json::error_handler_t::replace));
      int slot = 4;
      for (size_t i = 0; i < RankFields().size() && i < rank.values.size(); ++i) {
        if (!RankFields()[i].column.empty()) rank_row.BindJson(slot++, rank.values[i]);
      }
      RETURN_IF_ERROR(rank_row.Run());
    }
  }

  if (ok && !result.op_profile.empty()) {
    ASSIGN_OR_RETURN(auto op_row, db_->Prepare("INSERT INTO op_profile(job_id, op, calls, self_us, total_us, "
                                               "input_shapes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    for (const OpProfileRow& op : result.op_profile) {  // unique ops: checked at the edge
      op_row.Reset();
      RETURN_IF_ERROR(op_row.Bind(1, job_id).Bind(2, op.op).Bind(3, op.calls).Bind(4, op.self_us)
                          .Bind(5, op.total_us).Bind(6, op.input_shapes).Run());
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
  if (ok && kind == "calibration") RETURN_IF_ERROR(StoreCalibration(job_id, host_id, result, now));

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
    RETURN_IF_ERROR(FinishSweepIfComplete(sweep_id));
  }
  RETURN_IF_ERROR(tx.Commit());
  if (judged != nullptr && job && kind == "benchmark") {
    JudgedResult r;
    r.job_id = job_id;
    r.host_id = host_id;
    r.host = host_name;
    r.model = job->model;
    r.series = std::move(series);
    if (const json& median = ResultValue(result, "median_ms"); median.is_number()) r.median_ms = median.get<double>();
    for (const auto& [name, out] : {std::make_pair("median_ci_low_ms", &r.median_ci_low_ms),
                                     std::make_pair("median_ci_high_ms", &r.median_ci_high_ms)}) {
      if (const json& value = ResultValue(result, name); value.is_number()) *out = value.get<double>();
    }
    r.ok = ok;
    r.unsteady = ResultValue(result, "unsteady") == true;
    r.confirms_job_id = confirms_job_id;
    r.sweep_id = sweep_id;
    *judged = std::move(r);
  }
  return ResultOutcome::kStored;
}

StatusOr<std::string> Store::FingerprintOfHost(int64_t host_id) {
  if (auto it = host_fingerprints_.find(host_id); it != host_fingerprints_.end()) return it->second;
  ASSIGN_OR_RETURN(auto host, db_->Prepare("SELECT fingerprint FROM hosts WHERE host_id = ?1"));
  host.Bind(1, host_id);
  ASSIGN_OR_RETURN(bool found, host.Step());
  if (!found) return std::string();  // not remembered: the host may be written later
  std::string fingerprint = host.IsNull(0) ? std::string() : host.Text(0);
  host_fingerprints_[host_id] = fingerprint;
  return fingerprint;
}

Status Store::CommitGroup() {
  std::set<int64_t> sweeps = std::move(sweeps_to_finish_);
  sweeps_to_finish_.clear();
  Status finished = Status::Ok();
  for (int64_t sweep_id : sweeps) {
    Transaction tx(*db_);
    finished = tx.Begin();
    if (finished.ok()) finished = FinishSweepIfComplete(sweep_id);
    if (finished.ok()) finished = tx.Commit();
    if (!finished.ok()) break;
  }
  if (finished.ok()) finished = db_->CommitGroup();
  if (!finished.ok()) {
    // A sweep whose last result is kept must end with it: the whole group is undone,
    // so its results are not acked and come again.
    if (sqlite3_get_autocommit(db_->handle()) == 0) (void)db_->Exec("ROLLBACK");
    (void)db_->CommitGroup();
    host_fingerprints_.clear();
    return finished;
  }
  return finished;
}

StatusOr<json> Store::PeakFor(int64_t host_id, const std::string& device,
                              const std::string& dtype, int64_t threads) {
  const int64_t gpus_needed = GpusNeeded(device);
  const char* gpu_peak = nullptr;
  if (gpus_needed > 0) {
    gpu_peak = GpuPeakField(dtype);
    if (gpu_peak == nullptr) return json(nullptr);  // no int8 GEMM peak
  } else if (dtype != "fp32" && dtype != "bf16") {
    return json(nullptr);  // no int8 GEMM peak; tf32 is CUDA's alone
  }
  const bool bf16 = dtype == "bf16";
  ASSIGN_OR_RETURN(
      auto latest,
      db_->Prepare(std::string("SELECT ") +
                   (bf16 ? "c.gemm_bf16_gflops_all, c.gemm_threads_all, c.gemm_bf16_gflops_1, "
                         : "c.gemm_gflops_all, c.gemm_threads_all, c.gemm_gflops_1, ") +
                   "c.gpus FROM calibrations c JOIN hosts h ON h.host_id = c.host_id "
                   "WHERE h.machine_id = (SELECT machine_id FROM hosts WHERE host_id = ?1) "
                   "ORDER BY c.calibration_id DESC LIMIT 1"));
  latest.Bind(1, host_id);
  ASSIGN_OR_RETURN(bool row, latest.Step());
  if (!row) return json(nullptr);
  if (gpu_peak != nullptr) {
    // Stored from a checked calibration: an array of objects whose GEMM peaks are
    // numbers >= 0 or absent (a calibration older than the figure lacks it).
    json gpus = json::parse(latest.Text(3), nullptr, false);
    const size_t index = static_cast<size_t>(gpus_needed - 1);
    if (!gpus.is_array() || index >= gpus.size() || !gpus[index].is_object()) return json(nullptr);
    json peak = gpus[index].value(gpu_peak, json(nullptr));
    return peak.is_number() ? peak : json(nullptr);
  }
  if (latest.IsNull(0)) return json(nullptr);
  // The peak for T threads: T single-CPU peaks, but never more than all CPUs together.
  double all = latest.Real(0);
  int64_t all_threads = latest.Int(1);
  if (latest.IsNull(2) || threads >= all_threads) return json(all);
  return json(std::min(all, latest.Real(2) * static_cast<double>(threads)));
}

StatusOr<std::optional<double>> Store::CalibrationAge(const std::string& machine_id) {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare(
                                  "SELECT (julianday('now') - julianday(c.measured_at)) * 86400 "
                                  "FROM calibrations c JOIN hosts h ON h.host_id = c.host_id "
                                  "WHERE h.machine_id = ?1 ORDER BY c.calibration_id DESC LIMIT 1"));
  stmt.Bind(1, machine_id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row || stmt.IsNull(0)) return std::optional<double>();
  return std::optional<double>(stmt.Real(0));
}

StatusOr<bool> Store::CalibrationPending(const std::string& machine_id) {
  // INDEXED BY: without ANALYZE statistics SQLite takes jobs_by_state as good and walks
  // every queued job (a 1,000,000-job queue stalled the loop for minutes); the index of
  // calibration jobs alone is named, so a plan without it cannot even be prepared.
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare(
                                  "SELECT 1 FROM jobs j INDEXED BY calibration_jobs_by_state "
                                  "JOIN hosts h ON h.name = j.pinned_host "
                                  "WHERE j.kind = 'calibration' AND j.state IN ('queued', 'running') "
                                  "AND h.machine_id = ?1 LIMIT 1"));
  stmt.Bind(1, machine_id);
  return stmt.Step();
}

Status Store::StoreCalibration(int64_t job_id, int64_t host_id, const WorkerResult& result,
                               const std::string& now) {
  Columns columns = {{"host_id", host_id}, {"job_id", job_id}, {"measured_at", now}};
  const auto& fields = CalibrationFields();
  for (size_t i = 0; i < fields.size() && i < result.calibration_values.size(); ++i) {
    if (!fields[i].column.empty()) columns.emplace_back(fields[i].column, result.calibration_values[i]);
  }
  json gpus = json::array();
  if (const json* listed = FindPath(result.calibration, "gpus")) gpus = *listed;
  columns.emplace_back("gpus", gpus.dump(-1, ' ', false, json::error_handler_t::replace));
  columns.emplace_back("detail",
                       result.calibration.dump(-1, ' ', false, json::error_handler_t::replace));
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
                   "AND state = 'running' AND next_combination IS NULL AND NOT EXISTS (SELECT 1 FROM "
                   "job_counts WHERE "
                   "sweep_id = ?1 AND state IN ('queued', 'running') AND n > 0)"));
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
  // Jobs not stored yet never will be.
  ASSIGN_OR_RETURN(auto sweep, db_->Prepare("UPDATE sweeps SET state = 'cancelled', finished_at = "
                                            "?2, next_combination = NULL WHERE sweep_id = ?1 AND "
                                            "state = 'running'"));
  RETURN_IF_ERROR(sweep.Bind(1, sweep_id).Bind(2, now).Run());
  RETURN_IF_ERROR(tx.Commit());
  return cancelled;
}

StatusOr<std::string> Store::ReceivedAtCutoff(double seconds_ago) {
  // Formatted as every stored time is (UtcIso8601), so the cutoff compares as text.
  // Up to 10,000 years back: beyond that there is no time to format.
  if (!std::isfinite(seconds_ago) || std::fabs(seconds_ago) > 3.2e11) {
    return InvalidArgument("no time " + std::to_string(seconds_ago) + " s ago");
  }
  return UtcIso8601(UnixMicrosNow() - static_cast<int64_t>(std::llround(seconds_ago * 1e6)));
}

StatusOr<int64_t> Store::LastSampledJobId() {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT COALESCE(max(job_id), 0) FROM result_samples"));
  RETURN_IF_ERROR(stmt.Step().status());
  return stmt.Int(0);
}

StatusOr<int> Store::DropSamples(const std::string& cutoff, int64_t after, int64_t last) {
  ASSIGN_OR_RETURN(auto drop,
                   db_->Prepare("DELETE FROM result_samples WHERE job_id > ?1 AND job_id <= ?2 AND "
                                "job_id IN (SELECT job_id FROM results WHERE job_id > ?1 AND "
                                "job_id <= ?2 AND received_at < ?3)"));
  RETURN_IF_ERROR(drop.Bind(1, after).Bind(2, last).Bind(3, cutoff).Run());
  return db_->Changes();
}

StatusOr<int64_t> Store::ReclaimFreePages(int pages) {
  auto pragma = [&](const std::string& sql) -> StatusOr<int64_t> {
    ASSIGN_OR_RETURN(auto stmt, db_->Prepare(sql));
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    return row ? stmt.Int(0) : 0;
  };
  ASSIGN_OR_RETURN(int64_t auto_vacuum, pragma("PRAGMA auto_vacuum"));
  if (auto_vacuum != 2) {
    // The store could not be switched when it was opened (see UseIncrementalVacuum): a
    // full VACUUM gives the space back, with the loop waiting for it.
    LOG_WARN("vacuuming " << path_ << " in full: it has no incremental vacuum");
    RETURN_IF_ERROR(db_->Exec("VACUUM"));
    return 0;
  }
  RETURN_IF_ERROR(db_->Exec("PRAGMA incremental_vacuum(" + std::to_string(pages) + ")"));
  ASSIGN_OR_RETURN(int64_t free_pages, pragma("PRAGMA freelist_count"));
  // In WAL mode the file shrinks when the log is copied back; a passive checkpoint
  // waits for no reader.
  if (free_pages == 0) RETURN_IF_ERROR(db_->Exec("PRAGMA wal_checkpoint(PASSIVE)"));
  return free_pages;
}

StatusOr<int64_t> Store::SizeBytes() {
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT page_count * page_size FROM "
                                           "pragma_page_count(), pragma_page_size()"));
  RETURN_IF_ERROR(stmt.Step().status());
  return stmt.Int(0);
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

StatusOr<std::unordered_map<int64_t, json>> Store::RunningJobConfigs() {
  // One json_extract of several paths per job (each path alone parses the spec again).
  static const std::vector<std::string> kKeys = {"model", "mode", "dtype", "batch_size", "threads", "device"};
  std::string paths;
  for (const std::string& key : kKeys) paths += ", '$." + key + "'";
  ASSIGN_OR_RETURN(auto stmt, db_->Prepare("SELECT job_id, sweep_id, kind, started_at, json_extract(spec" + paths +
                                           ") FROM jobs WHERE state = 'running'"));
  std::unordered_map<int64_t, json> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    // Members set one by one: a status reply builds one of these per busy agent, and
    // an initializer list builds each member as a two-element array first.
    json job = json::object();
    job["sweep_id"] = stmt.Int(1);
    job["kind"] = stmt.ColumnJson(2);
    job["started_at"] = stmt.ColumnJson(3);
    json values = json::parse(stmt.IsNull(4) ? "[]" : stmt.Text(4), nullptr, false);
    for (size_t i = 0; i < kKeys.size(); ++i) {
      job[kKeys[i]] = values.is_array() && i < values.size() ? std::move(values[i]) : json(nullptr);
    }
    if (job["device"].is_null()) job["device"] = "cpu";
    jobs.emplace(stmt.Int(0), std::move(job));
  }
  return jobs;
}

StatusOr<json> Store::SweepStatus(std::optional<int64_t> sweep_id, int limit) {
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
  sql += "ORDER BY sweep_id DESC LIMIT ?2) s LEFT JOIN job_counts c ON c.sweep_id = s.sweep_id "
         "GROUP BY s.sweep_id ORDER BY s.sweep_id DESC";
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
                      // total counts the jobs not stored yet (`storing`) of a large sweep
                      {"jobs",
                       {{"total", stmt.Int(5) + stmt.Int(11)},
                        {"storing", stmt.Int(11)},
                        {"queued", stmt.Int(6)},
                        {"running", stmt.Int(7)},
                        {"done", stmt.Int(8)},
                        {"failed", stmt.Int(9)},
                        {"cancelled", stmt.Int(10)}}},
                      {"labels", json::parse(stmt.Text(12), nullptr, false)}});
  }
  if (sweep_id && sweeps.empty()) return NotFound("no sweep with id " + std::to_string(*sweep_id));
  return sweeps;
}

}  // namespace benchfleet
