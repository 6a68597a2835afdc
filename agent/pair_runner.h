// PairRunner: side A's hand-out of a pair (schemas/sweep.md, Versus; schemas/protocol.md,
// job.versus) run as the offer says, on the CPUs the agent placed side A on:
//   interleaved  the two sides as fresh worker processes one after the other, in the
//                order given, on the same CPUs;
//   duet         both at once, each its own worker on its own slice of `threads` CPUs
//                (the side that goes first takes the first slice), timing together (the
//                replicas' barrier: schemas/worker.md, Duet);
//   in_process   one worker that builds both models and alternates their blocks
//                (schemas/worker.md, Versus).
// The host's pace is read around each side's worker (before it starts and after it ends,
// agent/host_pace.h) and goes with that side's result. The pair's one result is side A's
// with `versus`: how it ran and side B's whole result. A side that failed fails the pair.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "agent/host_pace.h"
#include "agent/runner.h"
#include "common/agent_messages.h"

namespace benchfleet {

class PairRunner {
 public:
  explicit PairRunner(const RunnerOptions& options)
      : first_(options), second_(options), options_(options) {}

  // Starts the pair: side A's job `a` and side B's `b` (each with its worker chosen), as
  // `pair` says, on `cpus` (side A's placement). Fails, running nothing, when a side's
  // worker cannot start or a duet does not fit those CPUs and the agent's.
  Status Start(const WorkerJob& a, const WorkerJob& b, const PairOffer& pair,
               const std::vector<int>& cpus);
  bool busy() const { return stage_ != Stage::kIdle; }
  // Side A's job: what the pair's result is filed under.
  const WorkerJob& job() const { return a_; }
  std::vector<pid_t> pids() const;
  // Non-blocking: the pair's result once both sides ended; nullopt while it runs.
  std::optional<nlohmann::json> Poll();
  // Kills every worker of the pair; no result.
  void Kill();

 private:
  enum class Stage { kIdle, kFirst, kSecond, kTogether };
  // Starts `job` on `runner` on `cpus`, its pace read first.
  Status StartSide(WorkerRunner& runner, WorkerJob job, const std::vector<int>& cpus,
                   std::optional<HostPace>* pace);
  // A side's result with the pace around it.
  static nlohmann::json Paced(nlohmann::json result, std::optional<HostPace>* pace);
  nlohmann::json Compose(nlohmann::json a, nlohmann::json b) const;

  WorkerRunner first_, second_;
  RunnerOptions options_;
  Stage stage_ = Stage::kIdle;
  WorkerJob a_, b_;
  PairOffer pair_;
  std::vector<int> cpus_;
  bool a_first_ = true;
  std::optional<HostPace> first_pace_, second_pace_;
  std::optional<nlohmann::json> first_result_, second_result_;
};

}  // namespace benchfleet
