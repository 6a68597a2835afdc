// The store's results (coordinator/store/store.h): writes a delivered result as its job's only
// result, or records it as stale when its attempt no longer owns the job. Whether the
// result can be the job's at all is AdmitResult's (coordinator/store/result_admission.h); the
// writer only writes: the row, its ranks, profile and samples, a calibration, the job's
// end and its sweep's.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "common/status.h"
#include "common/worker_result.h"
#include "coordinator/store/host_store.h"
#include "coordinator/store/job_queue.h"
#include "coordinator/store/regression_store.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

// kStaleAgain: a resend of a result already recorded as stale; nothing is written and
// the agent is told "stale" again, as it was the first time.
enum class ResultOutcome { kStored, kDuplicate, kStale, kStaleAgain, kRejected };
const char* ResultOutcomeName(ResultOutcome outcome);

class ResultWriter {
 public:
  ResultWriter(Database& db, JobQueue& jobs, HostStore& hosts)
      : db_(&db), jobs_(&jobs), hosts_(&hosts) {}

  // Accepts the result of (job_id, attempt) as the job's only result if that attempt
  // still owns the job; otherwise records it as stale. A result AdmitResult refuses is
  // kRejected, with its reason (naming the field) in *rejection; nothing is written
  // then. The configuration columns come from the stored job, never from the result. A
  // stored benchmark's result, as regression detection needs it, goes to *judged when
  // given (it is not read back from the row just written).
  StatusOr<ResultOutcome> Write(int64_t job_id, int attempt, int64_t host_id,
                                const std::string& host_name, const WorkerResult& result,
                                std::string* rejection,
                                std::optional<JudgedResult>* judged = nullptr);

  // Group commit (Store::OpenGroup): within a group a result's sweep is judged finished
  // once, at the group's end, however many of its results the group holds.
  void OpenGroup() { sweeps_to_finish_.clear(); }
  Status FinishGroupSweeps();

 private:
  Status WriteCalibration(int64_t job_id, int64_t host_id, const WorkerResult& result,
                          const std::string& now);

  Database* db_;
  JobQueue* jobs_;
  HostStore* hosts_;
  std::set<int64_t> sweeps_to_finish_;  // of the results written in the open group
};

}  // namespace benchfleet
