// The pairs of a paired comparison (schemas/sweep.md, Versus; 007_versus.sql): each
// hand-out of side A runs one pair and brings both sides' results back. Each side's
// result is kept as its job's next process (result_processes), the pair as a row of
// result_pairs, and side A is queued again on the same agent until the pairs stop
// (coordinator/core/pair_stats.h); then both sides' results are made from their processes
// (CombineProcesses) and the answer is written to versus_results. The writing of the two
// results is ResultWriter's, as for any job.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/agent_messages.h"
#include "common/status.h"
#include "common/worker_result.h"
#include "coordinator/store/job_queue.h"
#include "sqlite/sqlite.h"

namespace benchfleet {

struct PairStep {
  enum class Kind {
    kNotRecorded,  // no open pair of this attempt (stale, or no side A): ResultWriter's
    kQueuedAgain,  // kept; side A waits for its next pair
    kComplete,     // kept; a_result and b_result are the two jobs' results now
    kDuplicate,    // a resend of a pair already kept, the pairs not done
    kFailed,       // a side failed: side A's job fails with `error` (its side B with it)
  };
  Kind kind = Kind::kNotRecorded;
  int64_t b_job_id = 0;
  nlohmann::json a_result, b_result;  // kComplete: each side across its pairs
  std::string error;                  // kFailed
};

class PairResults {
 public:
  PairResults(Database& db, JobQueue& jobs) : db_(&db), jobs_(&jobs) {}

  // What side A's next hand-out (a QueuedJob with `versus`) offers: side B's job, the
  // pairing, which side goes first, and the pair's number. Which side goes first is
  // random, balanced in blocks of two pairs: each block once each way, its order drawn
  // from a hash of the job and the block.
  StatusOr<PairOffer> NextPair(const QueuedJob& a);

  // Keeps the pair that (a_job_id, attempt) brought, run by `agent` on host `host_id`:
  // `result` as parsed (its versus set), `sent` as the agent sent it. Commits before it
  // returns (or joins the open group).
  StatusOr<PairStep> Record(int64_t a_job_id, int attempt, int64_t host_id,
                            const std::string& agent, const WorkerResult& result,
                            const nlohmann::json& sent);

  // Makes side B's job ready to take its result from side A's hand-out `attempt` on
  // `host_id` (ResultWriter's fence): side B is never handed out by itself.
  Status ArmSideB(int64_t b_job_id, int attempt, int64_t host_id);

 private:
  // Side B of side A `a_job_id`: the job whose versus_a_job_id names it.
  StatusOr<int64_t> SideBOf(int64_t a_job_id);
  Database* db_;
  JobQueue* jobs_;
};

// Whether side A goes first in pair `pair` of job `job_id` (PairResults::NextPair).
bool SideAFirst(int64_t job_id, int64_t pair);

}  // namespace benchfleet
