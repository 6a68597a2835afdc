// WorkerRunner: runs one job in its own benchfleet-worker process. Thread counts and CPU
// affinity are fixed before exec, so they hold from the worker's first instruction; the
// process's peak memory comes from wait4's rusage; a job past its timeout is killed.
// Every ending — success, a worker's own error, a crash, a timeout — becomes a result.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace benchfleet {

struct WorkerJob {
  int64_t job_id = 0;
  int attempt = 0;
  double timeout_s = 0;
  nlohmann::json spec;  // see schemas/worker.md
};

struct RunnerOptions {
  std::string worker_path;  // benchfleet-worker
  std::string work_dir;     // one sub-directory per job: job.json, result.json, worker.log
  std::vector<int> cpus;    // CPUs jobs may use; a job with T threads gets the first T
};

class WorkerRunner {
 public:
  explicit WorkerRunner(RunnerOptions options) : options_(std::move(options)) {}
  ~WorkerRunner();

  // Starts the worker for `job`. Fails (and nothing runs) if one is already running or
  // the process cannot be started.
  Status Start(const WorkerJob& job);
  bool busy() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const WorkerJob& job() const { return job_; }

  // Non-blocking: the finished job's result once the worker has ended (killing it first
  // if it ran past its timeout); nullopt while it runs.
  std::optional<nlohmann::json> Poll();

  // Kills a running worker (agent shutdown); no result is produced.
  void Kill();

  // The environment and CPU set a job with `threads` threads is started with.
  std::vector<std::string> WorkerEnvironment(int threads) const;
  std::vector<int> CpusFor(int threads) const;

 private:
  nlohmann::json Finish(int wait_status, double max_rss_kb);

  RunnerOptions options_;
  WorkerJob job_;
  pid_t pid_ = -1;
  std::string job_dir_;
  MonoTime started_;
  bool timed_out_ = false;
};

// True for a host calibration job ({"kind": "calibration"}): the worker runs with
// --calibrate on every CPU of the agent instead of a benchmark.
bool IsCalibration(const WorkerJob& job);

// A failed result for `job` with `reason`, carrying the job's identifying fields so the
// failure is visible next to the successful rows of the same sweep.
nlohmann::json FailedResult(const WorkerJob& job, const std::string& reason);

}  // namespace benchfleet
