// WorkerRunner: runs one job in its own benchfleet-worker process, or a job of several
// ranks as a gang of them (one per rank, disjoint CPU sets, rank 0's c10d store on a
// free loopback port). Thread counts and CPU affinity are fixed before exec, so they
// hold from the worker's first instruction; each process's peak memory comes from
// wait4's rusage; a job past its timeout is killed. When one rank of a gang fails the
// others are killed at once: a gang runs whole or not at all. Every ending — success, a
// worker's own error, a crash, a timeout, a rank lost — becomes one result.
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/thread_placement.h"
#include "common/clock.h"
#include "common/job_needs.h"
#include "common/rank_results.h"
#include "common/status.h"
#include "common/subprocess.h"

namespace benchfleet {

struct PairJob;

struct WorkerJob {
  int64_t job_id = 0;
  int attempt = 0;
  double timeout_s = 0;
  nlohmann::json spec;  // see schemas/worker.md
  JobNeeds needs;       // from the offer: how many processes to start, copies or ranks
  // The worker that runs it (the agent's pick among its workers); empty: the runner's.
  std::string worker_path;
  // The CPUs a job of one process runs on, chosen by its caller (a side of a pair); empty:
  // the runner places it by its thread_placement.
  std::vector<int> cpus;
  // Side A of a pair (agent/pair_runner.h): side B's job and how the two run; null: none.
  std::shared_ptr<PairJob> pair;
};

// What side A's offer says of its pair: side B's job (its worker chosen) and the pairing.
struct PairJob {
  WorkerJob b;
  std::string pairing;  // interleaved, duet, in_process
  std::string first;    // a or b
};

struct RunnerOptions {
  std::string worker_path;  // benchfleet-worker
  std::string work_dir;     // one sub-directory per job: job.json, result.json, worker.log
  std::vector<int> cpus;    // CPUs jobs may use; a job with T threads gets the first T
  // Where workers keep the files they compile for the technique axis (TorchScript
  // files, AOTInductor packages), by content, across jobs: the workers'
  // BENCHFLEET_PACKAGE_CACHE (schemas/worker.md, Technique). Empty: none is set.
  std::string package_cache;
};

class WorkerRunner {
 public:
  explicit WorkerRunner(RunnerOptions options)
      : options_(std::move(options)), topology_(ReadCpuTopology(options_.cpus)) {}
  ~WorkerRunner();

  // Starts the worker for `job` (its ranks, for a job of several the sweep runs on one
  // agent, or its replicas: LocalRanks). Fails (and nothing runs) if one is already running, the
  // ranks do not fit the agent's CPUs, or a process cannot be started.
  Status Start(const WorkerJob& job);
  bool busy() const { return !processes_.empty(); }
  // The worker's pid (rank 0's for a gang); -1 when idle.
  pid_t pid() const { return busy() ? processes_.front().pid : -1; }
  // Every worker process of the running job, rank order.
  std::vector<pid_t> pids() const;
  const WorkerJob& job() const { return job_; }

  // Non-blocking: the finished job's result once the worker has ended (killing it first
  // if it ran past its timeout); nullopt while it runs.
  std::optional<nlohmann::json> Poll();

  // Kills a running worker (agent shutdown); no result is produced.
  void Kill();
  // Kills a running worker whose result is no longer wanted (the other side of its pair
  // failed): Poll then gives its failure with `reason`.
  void Stop(const std::string& reason);

  // The environment and CPU set a job with `threads` threads and the OpenMP wait
  // policy `omp_wait_policy` (KnownOmpWaitPolicies) is started with; rank r of a local
  // gang takes the r-th slice of `threads` CPUs.
  std::vector<std::string> WorkerEnvironment(int threads, const std::string& omp_wait_policy) const;
  std::vector<int> CpusFor(int threads, int rank = 0) const;
  // Where the worker of a job of one process goes, by its thread_placement
  // (agent/thread_placement.h), or why this agent cannot give it. A gang's ranks and
  // replicas take CpusFor's slices; a calibration every CPU.
  StatusOr<ThreadPlacement> PlacementFor(const WorkerJob& job) const;
  // The topology of the CPUs jobs run on, read from sysfs at start.
  const CpuTopology& topology() const { return topology_; }

 private:
  // One worker process: a job's, or one rank's of a gang.
  struct Process {
    int rank = 0;
    pid_t pid = -1;  // kept for the logs once it is reaped
    Subprocess child;
    std::string dir;  // job.json, result.json, worker.log
    bool ended = false;
    int wait_status = 0;
    double max_rss_kb = 0;
    double wall_s = 0;
    bool stopped = false;  // killed because another rank failed
  };
  Status StartProcess(const nlohmann::json& worker_job, int threads, int rank,
                      const std::string& dir, const std::vector<int>& cpus);
  // The result of one ended process.
  nlohmann::json Finish(const Process& process);
  // The result of an ended gang: rank 0's with every rank's in `ranks`, or the failure
  // of the rank that failed first.
  nlohmann::json FinishGang(std::vector<nlohmann::json> rank_results);
  void KillAll();

  RunnerOptions options_;
  CpuTopology topology_;  // of options_.cpus
  WorkerJob job_;
  std::vector<Process> processes_;
  std::string job_dir_;
  MonoTime started_;
  bool timed_out_ = false;
  int first_failed_rank_ = -1;  // the rank whose ending stopped the gang
  std::string stop_reason_;     // Stop's
};

// A TCP port free on `host` (an IPv4 address of this machine) now, for rank 0's c10d
// store. Another process could take it before rank 0 binds it; the rendezvous then fails
// naming the address, and the job fails with that reason.
StatusOr<int> FreePort(const std::string& host);

// The processes of `job` this agent starts itself (its offer's needs.local_processes):
// the ranks of a gang the sweep runs on one agent, its replicas, else 1 (one process, or
// one rank of a spread gang).
int LocalRanks(const WorkerJob& job);

// True for a job of several `replicas`: independent copies on this agent, each its own
// worker on its own slice of `threads` CPUs, started together (schemas/worker.md).
bool IsReplicated(const WorkerJob& job);

// True for a host calibration job ({"kind": "calibration"}): the worker runs with
// --calibrate on every CPU of the agent instead of a benchmark.
bool IsCalibration(const WorkerJob& job);

// A failed result for `job` with `reason`, carrying the job's identifying fields so the
// failure is visible next to the successful rows of the same sweep.
nlohmann::json FailedResult(const WorkerJob& job, const std::string& reason);

}  // namespace benchfleet
