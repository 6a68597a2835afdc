// Copies of one job run together on one agent (the job's `replica` object, schemas/
// worker.md, Replicas): independent workers, each on its own CPUs, that meet at files in
// a directory they share, so that every copy times while all of them run. No c10d: the
// copies exchange nothing but these marks.
#ifndef BENCHFLEET_WORKER_PARALLEL_REPLICAS_H_
#define BENCHFLEET_WORKER_PARALLEL_REPLICAS_H_

#include <functional>
#include <string>

#include "common/job_spec.h"

namespace benchfleet::worker {

// A copy waits at most this long for the others (their model builds differ little; a
// copy that never comes has failed, and the agent stops the rest).
inline constexpr double kReplicaWaitS = 600;

// Marks this copy as having reached `stage` ("ready": built and about to time; "done":
// finished timing).
void MarkReplica(const ReplicaSpec& replica, const std::string& stage);

// True once every copy has marked `stage`.
bool AllReplicasAt(const ReplicaSpec& replica, const std::string& stage);

// Calls `meanwhile` (or sleeps 1 ms when it is empty) until every copy has marked
// `stage`. Returns an empty string, or why it gave up after kReplicaWaitS.
std::string WaitForReplicas(const ReplicaSpec& replica, const std::string& stage,
                            const std::function<void()>& meanwhile = nullptr);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_PARALLEL_REPLICAS_H_
