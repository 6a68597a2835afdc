// ResultAcceptor: an agent's `result`, from its envelope to its `ack`. The result is
// parsed at the edge (ParseWorkerResult against result_fields.json and the job handed
// out), stored (or found a duplicate, stale, or never storable: rejected with the field
// at fault, and the attempt lost), then judged for regressions and counted for its
// sweep's ETA. A spread gang's ranks each send their own: they are gathered here and,
// once all are in or one failed, stored as the job's one result, the ranks acked and
// the others stopped.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/worker_result.h"
#include "coordinator/fleet/dispatcher.h"
#include "coordinator/loop/context.h"
#include "coordinator/results/regression_judge.h"
#include "coordinator/results/sweep_progress.h"

namespace benchfleet {

// What an agent is told of its result (`ack.outcome`): a stale result's resend is stale.
ResultAck::Outcome AckOutcome(ResultOutcome outcome);

class ResultAcceptor {
 public:
  ResultAcceptor(const CoordinatorContext& context, Dispatcher& dispatcher, RegressionJudge& judge,
                 SweepProgress& progress)
      : ctx_(context), dispatcher_(dispatcher), judge_(judge), progress_(progress) {}

  // An agent's `result` message.
  void Accept(Agent& agent, const Message& message);
  // A stopped gang's ranks heard from so far are forgotten.
  void ForgetGang(int64_t job_id) { gang_results_.erase(job_id); }

 private:
  // A result that can never be stored: error and ack "rejected" (so the agent drops it
  // from its spool), and the attempt lost.
  void Reject(Agent& agent, const JobAttempt& job, const std::string& reason);
  // The lease of `job` ends, if it is still that attempt's.
  void ReleaseLease(const JobAttempt& job, std::string_view reason);
  // A rank's result of a spread gang: gathered, and once all are in (or one failed) put
  // together into the job's result (CombineRanks) and stored. False when `job` is no
  // such gang's. `sent`: the result as the agent sent it, `result` as parsed.
  bool AcceptGangRank(Agent& agent, const JobAttempt& job, const WorkerResult& result,
                      const json& sent);
  // Side A's result of a pair (`versus`): kept as a pair (PairResults), side A queued
  // again until the pairs stop, then both sides' results written, side B's first.
  void AcceptPair(Agent& agent, const JobAttempt& job, WorkerResult result, const json& sent);
  // What follows writing a job's one result, whoever sent it (an agent, or a spread
  // gang's ranks put together): the counters, then, for a result stored, its sweep's
  // progress and the regression judge. `agent` names where it ran, for the log.
  void Written(const JobAttempt& job, const std::string& agent, ResultOutcome outcome,
               const WorkerResult& result, const std::optional<JudgedResult>& judged);

  const CoordinatorContext& ctx_;
  Dispatcher& dispatcher_;
  RegressionJudge& judge_;
  SweepProgress& progress_;
  // The results of the ranks of spread gangs heard from so far, by job id. In memory:
  // the agents keep theirs spooled until the job's result is stored, and resend them.
  struct GangResults {
    int attempt = 0;
    struct Rank {
      int64_t host_id = 0;  // of its agent
      json sent;            // the rank's result as sent, its rank the one it was given
    };
    std::map<int64_t, Rank> ranks;
  };
  std::map<int64_t, GangResults> gang_results_;
};

}  // namespace benchfleet
