// The coordinator's store: the only writable connection to results.db (SQLite, WAL).
// Every method that changes state commits before it returns OK, so a caller may
// acknowledge to a peer as soon as the call succeeded — and must not when it failed.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/sweep.h"
#include "coordinator/sqlite.h"

namespace benchfleet {

using nlohmann::json;

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

// The numbered migrations in schemas/migrations, compiled into the binary.
const std::vector<Migration>& Migrations();

struct QueuedJob {
  int64_t job_id;
  std::string kind;  // "benchmark" or "calibration"
  int64_t sweep_id;
  std::optional<std::string> pinned_host;
  json spec;
  json select;  // the sweep's select
  double timeout_s;
  int attempts;
};

struct RunningJob {
  int64_t job_id;
  int attempt;
  std::string host;
  double timeout_s;
};

enum class ResultOutcome { kStored, kDuplicate, kStale };
const char* ResultOutcomeName(ResultOutcome outcome);

struct Rows {
  std::vector<std::string> columns;
  std::vector<json> rows;  // each an array
  bool truncated = false;
};

class Store {
 public:
  // Opens (creating if needed) the database at `path`, sets WAL and full fsync, and
  // applies the migrations not yet applied.
  static StatusOr<std::unique_ptr<Store>> Open(const std::string& path);

  int SchemaVersion();

  // Inserts or refreshes the host named `name`; returns its host_id.
  StatusOr<int64_t> UpsertHost(const std::string& name, const std::string& machine_id,
                               const json& tags, const json& capabilities);

  // Stores a sweep and its jobs in one transaction. `pinned_hosts` empty: one job per
  // combination with no pinned host; otherwise one job per combination and host.
  StatusOr<int64_t> CreateSweep(const Sweep& sweep, const std::vector<std::string>& pinned_hosts,
                                int64_t* jobs_created);

  // A sweep of one calibration job per agent in `agents` (pinned to it). Calibrations
  // are dispatched before queued benchmarks.
  StatusOr<int64_t> CreateCalibration(const std::vector<std::string>& agents, double timeout_s);

  // Queued jobs a given agent could take, oldest first: pinned to it, or unpinned.
  StatusOr<std::vector<QueuedJob>> QueuedJobsFor(const std::string& agent_name, int limit);

  // Hands job out: state running, attempts + 1. Fails if it was no longer queued.
  // Returns the new attempt number.
  StatusOr<int> MarkRunning(int64_t job_id, int64_t host_id);

  // Puts a running job back in the queue after its attempt was lost (agent silent, job
  // refused). When `max_attempts` hand-outs were used the job fails with `reason`.
  // Returns true when the job was requeued, false when it failed.
  StatusOr<bool> RequeueOrFail(int64_t job_id, int attempt, int max_attempts,
                               const std::string& reason);

  // Accepts the result of (job_id, attempt) as the job's only result if that attempt
  // still owns the job; otherwise records it as stale.
  StatusOr<ResultOutcome> StoreResult(int64_t job_id, int attempt, int64_t host_id,
                                      const std::string& host_name, const json& result);

  StatusOr<int> CancelSweep(int64_t sweep_id);

  // Jobs in state running (for recovery after a restart).
  StatusOr<std::vector<RunningJob>> RunningJobs();

  // {sweep_id, name, state, created_at, finished_at, jobs:{total, queued, ...}} for one
  // sweep or the most recent `limit`.
  StatusOr<json> SweepStatus(std::optional<int64_t> sweep_id, int limit);

  // Runs one user statement on a read-only connection; at most `max_rows` rows.
  StatusOr<Rows> Query(const std::string& sql, int max_rows);

  // Rows of result_summary, optionally for one sweep.
  StatusOr<Rows> ResultSummary(std::optional<int64_t> sweep_id, int max_rows);

 private:
  Store(std::unique_ptr<Database> db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}
  Status Migrate();
  using Columns = std::vector<std::pair<std::string, json>>;
  Status FinishSweepIfComplete(int64_t sweep_id);
  // The results columns taken from a worker's result (schemas/worker.md).
  StatusOr<Columns> ResultColumns(const std::string& kind, const json& spec, int64_t host_id,
                                  const json& result, bool ok);
  // The calibrated peak GFLOP/s a result is compared with, or null without a calibration.
  StatusOr<json> PeakFor(int64_t host_id, const json& result);
  Status StoreCalibration(int64_t job_id, int64_t host_id, const json& result,
                          const std::string& now);
  Status Insert(const std::string& table, const Columns& columns);
  StatusOr<Rows> RunRows(Database& db, const std::string& sql, const json& params, int max_rows);

  std::unique_ptr<Database> db_;
  std::unique_ptr<Database> reader_;  // opened lazily, read-only, for user queries
  std::string path_;
};

}  // namespace benchfleet
