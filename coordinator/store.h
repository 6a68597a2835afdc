// The coordinator's store: the only writable connection to results.db (SQLite, WAL).
// Every method that changes state commits before it returns OK, so a caller may
// acknowledge to a peer as soon as the call succeeded — and must not when it failed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/messages.h"
#include "common/status.h"
#include "common/sweep.h"
#include "common/worker_result.h"
#include "coordinator/checkpointer.h"
#include "coordinator/fingerprint.h"
#include "coordinator/matching.h"
#include "coordinator/sqlite.h"

namespace benchfleet {

using nlohmann::json;

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

// The numbered migrations in schemas/migrations (version 1 the baseline), compiled into
// the binary; coordinator/schema.h applies them.
const std::vector<Migration>& Migrations();

struct QueuedJob {
  int64_t job_id;
  std::string kind;  // "benchmark" or "calibration"
  int64_t sweep_id;
  int64_t requirement_id;
  std::string spec;  // JSON text, parsed only for the job handed out (of the few read)
  double timeout_s;
  int attempts;
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

// A schedule as stored (schemas/migrations/001_baseline.sql, docs/schedules.md).
struct StoredSchedule {
  int64_t schedule_id = 0;
  std::string name;
  std::string cron;
  std::string tz = "UTC";
  json sweep;                              // the sweep file, submitted at each slot
  bool overlap_queue = false;              // else skip
  std::optional<double> start_deadline_s;  // none: one period
  std::string created_at;
  std::string handled_until;               // the latest slot handled (UTC ISO 8601)
};

// What became of one slot of a schedule (schedule_firings.outcome).
enum class FiringOutcome { kStarted, kRunNow, kMissed, kSkipped, kFailed };
const char* FiringOutcomeName(FiringOutcome outcome);

// A stored result as regression detection sees it (coordinator/regression_judge.h).
struct JudgedResult {
  int64_t job_id = 0;
  int64_t host_id = 0;
  std::string host;
  std::string model;
  std::string series;                    // empty: none (a host without fingerprint)
  std::optional<double> median_ms;
  // The median's 95% confidence interval (stats.median_ci_*_ms), when it had one.
  std::optional<double> median_ci_low_ms, median_ci_high_ms;
  bool ok = false;
  bool unsteady = false;  // its statistics may mix two regimes: never judged
  std::optional<int64_t> confirms_job_id;  // a rerun confirming that job's candidate
  int64_t sweep_id = 0;
};
struct BaselinePoint {
  int64_t job_id = 0;
  double median_ms = 0;
  std::string received_at;
};
// A regression candidate as detected (the regressions table).
struct RegressionCandidate {
  int64_t job_id = 0;
  std::string series;
  int64_t host_id = 0;
  bool slower = true;
  double median_ms = 0;
  double baseline_median_ms = 0;
  double baseline_mad_ms = 0;
  int64_t baseline_n = 0;
  std::string baseline_from, baseline_to;
  double change = 0;
  std::optional<double> z;
  // The judged result's median interval, which widens the noise z is measured in.
  std::optional<double> median_ci_low_ms, median_ci_high_ms;
};
struct Rerun {
  int64_t job_id = 0;
  std::string state;  // the job's
  std::optional<double> median_ms;  // an ok result's
};

// kStaleAgain: a resend of a result already recorded as stale; nothing is written and
// the agent is told "stale" again, as it was the first time.
enum class ResultOutcome { kStored, kDuplicate, kStale, kStaleAgain, kRejected };
const char* ResultOutcomeName(ResultOutcome outcome);

class Store {
 public:
  // Opens (creating if needed) the database at `path`, sets WAL and full fsync, applies
  // the migrations not yet applied (converting a store from before the baseline first),
  // adds the columns of result fields declared since (schemas/result_fields.json) and
  // makes every view of schemas/views.sql again over them (schemas/README.md).
  static StatusOr<std::unique_ptr<Store>> Open(const std::string& path);

  int SchemaVersion();

  // Group commit (Database::OpenGroup): every write between the two joins one
  // transaction, made durable by one sync at CommitGroup. The coordinator's loop opens
  // one group per round and sends what depends on its writes only after the commit.
  // Within a group a result's sweep is judged finished once, at CommitGroup, however
  // many of its results the group holds.
  void OpenGroup() {
    sweeps_to_finish_.clear();
    db_->OpenGroup();
  }
  Status CommitGroup();

  // Inserts or refreshes the host named `name`; returns its host_id.
  // `fingerprint` (coordinator/fingerprint.h) is stored beside it; empty: NULL.
  StatusOr<int64_t> UpsertHost(const std::string& name, const std::string& machine_id,
                               const json& tags, const json& capabilities,
                               const HostFingerprint& fingerprint = {});

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
  // `every_hundred_jobs`, when set, is called as the jobs go in (the coordinator keeps
  // its heartbeats going through a long store); it must not write to the store.
  StatusOr<bool> StoreJobs(int64_t sweep_id, const Sweep& sweep, const PinnedAgents& pinned,
                           size_t first, size_t count,
                           const std::function<void()>& every_hundred_jobs = nullptr);
  // AcceptSweep and every job at once, in one transaction (or the sweep an earlier
  // submit with the same non-empty `submission_id` stored).
  StatusOr<StoredSweep> CreateSweep(const Sweep& sweep, const PinnedAgents& pinned,
                                    const std::string& submission_id = "",
                                    const std::function<void()>& every_hundred_jobs = nullptr);
  // Accepted sweeps whose jobs are not all stored, oldest first (after a restart).
  StatusOr<std::vector<UnstoredSweep>> UnstoredSweeps();

  // A sweep of one calibration job per agent in `agents` (pinned to it). Calibrations
  // are dispatched before queued benchmarks.
  StatusOr<int64_t> CreateCalibration(const std::vector<std::string>& agents, double timeout_s);

  // Every requirement jobs were stored with.
  StatusOr<std::vector<JobRequirement>> Requirements();
  // A job's spec (JSON text) and timeout, for the offers to a gang's other ranks.
  StatusOr<std::pair<std::string, double>> JobSpecText(int64_t job_id);
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

  // Accepts the result of (job_id, attempt) as the job's only result if that attempt
  // still owns the job; otherwise records it as stale. A result that can never be stored
  // (the wrong kind for its job, a configuration other than the job's) is kRejected,
  // with the reason naming the field in *rejection; nothing is written then. The
  // configuration columns come from the stored job, never from the result. A stored
  // benchmark's result, as regression detection needs it, goes to *judged when given
  // (it is not read back from the row just written).
  StatusOr<ResultOutcome> StoreResult(int64_t job_id, int attempt, int64_t host_id,
                                      const std::string& host_name, const WorkerResult& result,
                                      std::string* rejection,
                                      std::optional<JudgedResult>* judged = nullptr);

  StatusOr<int> CancelSweep(int64_t sweep_id);

  // Each running job by its job_id: {sweep_id, kind, started_at, model, mode, dtype,
  // batch_size, threads, device}, what `status` shows beside its agent.
  StatusOr<std::unordered_map<int64_t, json>> RunningJobConfigs();

  // Regression detection (coordinator/regression_store.cc, docs/regressions.md).
  // The sweep file's "regression" object, or null (read apart from the sweep, whose
  // matrix may hold 100,000 values).
  StatusOr<json> SweepRegressionPolicy(int64_t sweep_id);
  // The last `window` good results of the series before job `before_job_id` (ok, not
  // unsteady, after the latest baseline reset covering `host` and `model`, and from the
  // series' latest confirmed change on: that candidate and its reruns start the new
  // level; no other confirming rerun), newest first.
  StatusOr<std::vector<BaselinePoint>> SeriesBaseline(const std::string& series, int64_t before_job_id,
                                                      int window, const std::string& host,
                                                      const std::string& model);
  // Records the candidate and queues `reruns` runs of its job on its host, in its
  // sweep (which runs on until they are done). Returns the reruns' job ids.
  StatusOr<std::vector<int64_t>> AddRegressionCandidate(const RegressionCandidate& candidate,
                                                        const std::string& host, int reruns);
  StatusOr<std::optional<RegressionCandidate>> CandidateOf(int64_t job_id);
  // Whether the series has a candidate whose reruns are still undecided.
  StatusOr<bool> SeriesHasOpenCandidate(const std::string& series);
  StatusOr<std::vector<Rerun>> RerunsOf(int64_t job_id);
  Status DecideRegression(int64_t job_id, bool confirmed, std::optional<double> rerun_median_ms,
                          const std::string& reason);
  StatusOr<json> AddBaselineReset(const std::string& host, const std::string& model, const std::string& note);

  // Host prices (host_prices, docs/results.md Cost). An agent's price is recorded when
  // it differs from the last one that agent sent, so a re-registration does not undo a
  // price set since with SetHostPrice.
  Status RecordAgentPrice(int64_t host_id, const HostPrice& price);
  // From now on; NotFound for a host that never registered. Returns {host, per_hour,
  // currency, set_at}.
  StatusOr<json> SetHostPrice(const std::string& host, const HostPrice& price);

  // Schedules (coordinator/schedule_store.cc). AddSchedule fails with
  // FailedPrecondition when a live schedule has the name already.
  StatusOr<StoredSchedule> AddSchedule(StoredSchedule schedule);
  StatusOr<std::vector<StoredSchedule>> LiveSchedules();
  // The live schedule of that name; NotFound when there is none.
  StatusOr<StoredSchedule> FindSchedule(const std::string& name);
  // Marks it removed (it fires no more; its history stays); NotFound when none.
  StatusOr<StoredSchedule> RemoveSchedule(const std::string& name);
  // Records a slot's outcome once: a second record of the same slot changes nothing
  // (a firing decided again after a restart). Returns whether it was new.
  StatusOr<bool> RecordFiring(int64_t schedule_id, const std::string& slot, FiringOutcome outcome,
                              const std::string& reason);
  // Every slot up to `slot` is handled; never moves back.
  Status SetHandledUntil(int64_t schedule_id, const std::string& slot);
  // The sweep of a firing carries its schedule and slot (one sweep per slot).
  Status TagScheduledSweep(int64_t sweep_id, int64_t schedule_id, const std::string& slot);
  // The latest sweep of the schedule still running, if any.
  StatusOr<std::optional<int64_t>> RunningSweepOfSchedule(int64_t schedule_id);

  // Seconds since the latest calibration of any host on `machine_id`, or nullopt when
  // the machine was never calibrated.
  StatusOr<std::optional<double>> CalibrationAge(const std::string& machine_id);
  // True when a calibration of an agent on `machine_id` is queued or running.
  StatusOr<bool> CalibrationPending(const std::string& machine_id);

  // Jobs in state running (for recovery after a restart).
  StatusOr<std::vector<RunningJob>> RunningJobs();

  // {sweep_id, name, state, created_at, finished_at, jobs:{total, queued, ...}} for one
  // sweep or the most recent `limit`.
  StatusOr<json> SweepStatus(std::optional<int64_t> sweep_id, int limit);

  // Retention (benchfleet prune, coordinator/pruner.h). The time `seconds_ago` before now,
  // formatted as results.received_at is.
  StatusOr<std::string> ReceivedAtCutoff(double seconds_ago);
  // The highest job id with raw samples (0: none).
  StatusOr<int64_t> LastSampledJobId();
  // Drops the raw samples (result_samples rows) of results received before `cutoff` among
  // job ids in (after, last]; the results and their summaries stay. Returns how many
  // results lost their samples.
  StatusOr<int> DropSamples(const std::string& cutoff, int64_t after, int64_t last);
  // Gives up to `pages` free pages back to the file system (incremental vacuum); returns
  // how many free pages remain. A store still without incremental vacuum (it could not
  // be switched when opened) is vacuumed in full instead (it then returns 0).
  StatusOr<int64_t> ReclaimFreePages(int pages);
  // The database's size: pages in use and free, times the page size.
  StatusOr<int64_t> SizeBytes();

  const std::string& path() const { return path_; }

 private:
  Store(std::unique_ptr<Database> db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}
  Status Migrate();
  // Switches an older store to auto_vacuum=INCREMENTAL (best effort, logged).
  void UseIncrementalVacuum();
  // Adds a column for every declared field a table lacks; makes every view again.
  Status ApplyFieldTables();
  using Columns = std::vector<std::pair<std::string, json>>;
  Status FinishSweepIfComplete(int64_t sweep_id);
  StatusOr<int64_t> RequirementId(const std::string& kind, const std::string& pinned_host,
                                  const json& select, const std::string& device);
  // The calibrated peak GFLOP/s a result of `dtype` on `device` with `threads` is
  // compared with: the latest calibration of the host's machine (agents of one machine
  // share it), for the dtype's own GEMM. Null without one (int8 has none).
  StatusOr<json> PeakFor(int64_t host_id, const std::string& device, const std::string& dtype,
                         int64_t threads);
  Status StoreCalibration(int64_t job_id, int64_t host_id, const WorkerResult& result,
                          const std::string& now);
  Status Insert(const std::string& table, const Columns& columns);

  std::unique_ptr<Database> db_;
  std::string path_;
  // Sweeps of the results stored in the open group (FinishSweepIfComplete at its commit).
  std::set<int64_t> sweeps_to_finish_;
  // Each host's fingerprint (hosts.fingerprint; empty: none), read once, not once per
  // result. Forgotten with a group that is not kept: it may have registered the host.
  StatusOr<std::string> FingerprintOfHost(int64_t host_id);
  std::unordered_map<int64_t, std::string> host_fingerprints_;
  // Copies the log back into the database off this thread (coordinator/checkpointer.h).
  // Last, so that it stops before the connection it hooks closes.
  std::unique_ptr<WalCheckpointer> checkpointer_;
};

}  // namespace benchfleet
