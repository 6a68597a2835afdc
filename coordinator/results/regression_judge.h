// RegressionJudge: regression detection (docs/regressions.md). Each stored result is
// judged against the last good results of its series; a candidate (beyond both the
// robust z-score and the relative-change test) is run again on the same host, and only
// reruns that reproduce it confirm it. An unconfirmed candidate is recorded as noise and
// never reported. A confirmed change starts the series' baseline anew
// (RegressionStore::SeriesBaseline), so a step is reported once, on the night it was first seen.
//
// Its writes (candidates, reruns, decisions) join the coordinator's open round; it keeps
// nothing in memory that a failed round would have to undo (the policy cache holds only
// what the store already says).
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "coordinator/store/regression_store.h"

namespace benchfleet {

class RegressionJudge {
 public:
  // `store_errors` is counted for each store call that fails.
  RegressionJudge(RegressionStore& store, int64_t& store_errors)
      : store_(store), store_errors_(store_errors) {}

  // A stored result: judged against its series, or, a rerun's, deciding its candidate
  // once every rerun is in.
  void Judge(const JudgedResult& result);
  // Whether reruns were queued since the last call (the caller has the dispatcher look
  // for them).
  bool TakeRerunsQueued() { return std::exchange(reruns_queued_, false); }

 private:
  void DecideIfRerunsDone(int64_t candidate_job_id, const RegressionPolicy& policy);
  // A sweep's regression policy (its sweep file's "regression"), remembered per sweep.
  RegressionPolicy PolicyOf(int64_t sweep_id);

  RegressionStore& store_;
  int64_t& store_errors_;
  bool reruns_queued_ = false;
  std::map<int64_t, RegressionPolicy> policies_;
};

}  // namespace benchfleet
