// The store's jobs and sweeps (coordinator/store/store.h): sweeps as they are accepted and
// their jobs stored slice by slice, the queue the dispatcher hands jobs out of, the
// fence of each hand-out (attempts), and the sweep counts `status` shows.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/job_needs.h"
#include "common/status.h"
#include "common/status_reply.h"
#include "common/sweep.h"
#include "coordinator/core/matching.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

using nlohmann::json;

struct QueuedJob {
  int64_t job_id;
  std::string kind;  // "benchmark" or "calibration"
  int64_t sweep_id;
  int64_t requirement_id;
  std::string spec;  // JSON text, parsed only for the job handed out (of the few read)
  double timeout_s;
  int attempts;
  JobNeeds needs;              // as computed when it was stored (never from `spec` again)
  int64_t queue_order = 0;     // the dispatcher takes the lowest (004_processes.sql)
  std::string process_timing;  // JSON: the later processes' timing (precision); "" none
  std::string versus;          // side A of a pair: its pairing (007_versus.sql); "" none
};

struct RunningJob {
  int64_t job_id;
  int attempt;
  std::string host;
  double timeout_s;
};

// Placement "each": the agents, sorted, that a sweep's jobs of each device go to.
using PinnedAgents = std::map<std::string, std::vector<std::string>>;

// A sweep as stored: new, or the one an earlier submit with the same submission id
// stored (existing = true).
struct StoredSweep {
  int64_t sweep_id = 0;
  int64_t jobs = 0;                 // once all are stored
  std::vector<std::string> agents;  // pinned agents, sorted
  bool existing = false;
};

// A sweep accepted whose jobs are not all stored yet (StoreJobs goes on with it).
struct UnstoredSweep {
  int64_t sweep_id = 0;
  json spec;  // the sweep as submitted (Sweep::source)
  PinnedAgents pinned;
  size_t next_combination = 0;
};

// The reruns of a job that confirm or refute a regression candidate (QueueReruns).
struct QueuedReruns {
  int64_t sweep_id = 0;  // the job's sweep, running on until they are done
  std::vector<int64_t> job_ids;
};

class JobQueue {
 public:
  explicit JobQueue(Database& db) : db_(&db) {}

  // The sweep an earlier submit with this submission id stored, if any.
  StatusOr<std::optional<StoredSweep>> FindSubmission(const std::string& submission_id);

  // Stores a sweep's row, none of its jobs yet: StoreJobs adds them, combination by
  // combination. With `pinned` empty each combination is one unpinned job, otherwise
  // one job per agent listed for the combination's device (none when its device is
  // not listed). Returns the sweep id and how many jobs it will have.
  StatusOr<StoredSweep> AcceptSweep(const Sweep& sweep, const PinnedAgents& pinned,
                                    const std::string& submission_id = "");
  // Stores the jobs of combinations [first, first + count) of an accepted sweep, in
  // order, and moves its next_combination on (NULL once the last is stored). Returns
  // false, storing nothing, when the sweep no longer waits for combination `first`
  // (it was cancelled).
  StatusOr<bool> StoreJobs(int64_t sweep_id, const Sweep& sweep, const PinnedAgents& pinned,
                           size_t first, size_t count);
  // Accepted sweeps whose jobs are not all stored, oldest first (after a restart).
  StatusOr<std::vector<UnstoredSweep>> UnstoredSweeps();
  // Cancels the sweep's queued jobs and those not stored yet; returns how many queued
  // jobs were cancelled. NotFound for an unknown sweep.
  StatusOr<int> CancelSweep(int64_t sweep_id);
  // Marks the sweep done once no job of it is queued or running and all are stored.
  Status FinishSweepIfComplete(int64_t sweep_id);

  // A sweep of one calibration job per agent in `agents` (pinned to it). Calibrations
  // are dispatched before queued benchmarks.
  StatusOr<int64_t> CreateCalibration(const std::vector<std::string>& agents, double timeout_s);

  // Queues `count` runs of job `job_id` on `host`, on the job's device, in its sweep,
  // each confirming it (confirms_job_id); a sweep already done runs again until they
  // are. NotFound for an unknown job.
  StatusOr<QueuedReruns> QueueReruns(int64_t job_id, const std::string& host, int count);

  // Queues job `job_id` again for its next process (schemas/sweep.md, Processes): on
  // agent `host` (the one that ran its first), behind every job's first process, in an
  // order of its own among the jobs of round `round` (>= 1); `timing` (JSON, or "")
  // the timing that process runs with. Part of the caller's transaction.
  Status QueueNextProcess(int64_t job_id, const std::string& host, int64_t round,
                          const std::string& timing);

  // Every requirement jobs were stored with.
  StatusOr<std::vector<JobRequirement>> Requirements();
  // A job's spec (JSON text) and timeout, for the offers to a gang's other ranks.
  StatusOr<QueuedJob> FindJob(int64_t job_id);
  // The oldest queued jobs of one requirement (at most `limit`), oldest first.
  StatusOr<std::vector<QueuedJob>> OldestQueued(int64_t requirement_id, int limit);
  // Queued jobs per requirement (optionally of one sweep): {requirement_id, count}.
  StatusOr<std::vector<std::pair<int64_t, int64_t>>> QueuedPerRequirement(
      std::optional<int64_t> sweep_id);
  // Hands job out: state running, attempts + 1. Fails if it was no longer queued.
  // Returns the new attempt number.
  StatusOr<int> MarkRunning(int64_t job_id, int64_t host_id);
  // Takes back a hand-out that never reached its agent (the send failed, the agent
  // refused it): the job is queued again and the attempt is not counted. Returns false
  // when (job_id, attempt) no longer owns the job.
  StatusOr<bool> UndoHandOut(int64_t job_id, int attempt);
  // Puts a running job back in the queue after its attempt was lost (agent silent, lease
  // expired). When `max_attempts` hand-outs were used the job fails with `reason`.
  // Returns true when the job was requeued, false when it failed.
  StatusOr<bool> RequeueOrFail(int64_t job_id, int attempt, int max_attempts,
                               const std::string& reason);

  // Jobs in state running (for recovery after a restart).
  StatusOr<std::vector<RunningJob>> RunningJobs();
  // Each running job by its job_id, what `status` shows beside its agent.
  StatusOr<std::unordered_map<int64_t, RunningJobSummary>> RunningJobConfigs();
  // One sweep's progress, or the most recent `limit` sweeps', newest first (without
  // eta_s, which the client API estimates); a sweep id that names no sweep is NotFound.
  StatusOr<std::vector<SweepOverview>> SweepStatus(std::optional<int64_t> sweep_id, int limit);

 private:
  StatusOr<int64_t> RequirementId(const std::string& kind, const std::string& pinned_host,
                                  const json& select, const std::string& device);

  Database* db_;
};

}  // namespace benchfleet
