// The processes of a repeated job (schemas/sweep.md, Processes): each one's result kept
// in result_processes as it comes back, the job queued again for the next on the same
// agent until its processes (or its precision) are done, then the job's one result made
// from them (docs/results.md, Processes). The writing of that result is ResultWriter's,
// as for any job.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/worker_result.h"
#include "coordinator/core/process_stats.h"
#include "coordinator/store/job_queue.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

struct ProcessStep {
  enum class Kind {
    kNotRepeated,  // a job of one process, a failed process, or a result the fence or
                   // admission will refuse: ResultWriter::Write takes it as any result
    kQueuedAgain,  // kept; the job waits for its next process
    kComplete,     // kept (or kept before); `results` make the job's result now
    kDuplicate,    // a resend of a process already kept, the job not complete
  };
  Kind kind = Kind::kNotRepeated;
  std::vector<nlohmann::json> results;  // kComplete: each process's result, in order
  std::vector<ProcessFigures> figures;
  nlohmann::json decision;  // with precision: the last choice (ProcessPlan::decision)
};

class ProcessResults {
 public:
  ProcessResults(Database& db, JobQueue& jobs) : db_(&db), jobs_(&jobs) {}

  // Keeps the successful result `sent` of (job_id, attempt), run by agent `agent` on
  // host `host_id`, as the job's next process, and queues the job again when more are
  // needed. Commits before it returns (or joins the open group).
  StatusOr<ProcessStep> Record(int64_t job_id, int attempt, int64_t host_id,
                               const std::string& agent, const WorkerResult& result,
                               const nlohmann::json& sent);

 private:
  Database* db_;
  JobQueue* jobs_;
};

// One process's figures, from its worker's result.
ProcessFigures FiguresOfResult(const nlohmann::json& result);
// Keeps `sent` (a successful worker result) as process `process` of job `job_id`, brought
// by hand-out `attempt` from host `host_id` (a row of result_processes).
Status KeepProcess(Database& db, int64_t job_id, int64_t process, int attempt, int64_t host_id,
                   const nlohmann::json& sent);
// Every kept process of job `job_id`, in order: their results and figures.
StatusOr<ProcessStep> KeptProcesses(Database& db, int64_t job_id);

// The job's one result from its processes': the process nearest their mean, with
// stats.median_ms the mean, stats.median_ci_* the interval across processes, the
// figures read at the median (throughput_per_s, gflops) at that mean, and `processes`
// (and `precision`) saying how it was made. Its own interval becomes
// processes.within_ci_*.
nlohmann::json CombineProcesses(const ProcessStep& step);

}  // namespace benchfleet
