// Gangs spread over agents (placement "spread", docs/scheduling.md, Gangs): a job of N
// ranks is handed out whole to N idle agents at once, rank 0's agent starts c10d's store
// and reports it (`rendezvous`), the others then get their offers naming it, and the
// ranks' results are put together into the job's one result. Anything that ends the
// attempt early stops every rank (`stop`).
#include <algorithm>

#include "common/job_spec.h"
#include "common/result_fields.h"
#include "common/log.h"
#include "common/messages.h"
#include "common/sweep.h"
#include "coordinator/coordinator.h"

namespace benchfleet {








bool Coordinator::AcceptGangRank(Agent& agent, const JobAttempt& job, const WorkerResult& result) {
  Lease* found = registry_.FindLease(job.job_id);
  if (found == nullptr || found->ranks.empty() || found->attempt != job.attempt) return false;
  const std::vector<std::string> holders = AgentRegistry::Holders(*found);
  const auto at = std::find(holders.begin(), holders.end(), agent.description.name);
  if (at == holders.end()) return false;
  const Lease lease = *found;
  // The rank is the one this agent was given, whatever the result says.
  const int64_t rank = at - holders.begin();
  const int64_t world_size = static_cast<int64_t>(holders.size());
  // A rank's failure written by its agent (a crash, a timeout) may not echo its rank.
  json detail = result.detail;
  if (FindPath(detail, "distributed.rank") == nullptr) {
    if (!detail.contains("distributed")) detail["distributed"] = json::object();
    detail["distributed"]["rank"] = rank;
  }
  auto entry = ParseRankEntry(detail, "result");
  if (!entry.ok()) {
    RejectResult(agent, job, entry.status().message());
    return true;
  }
  if (entry->rank != rank) {
    RejectResult(agent, job, "result.distributed.rank: " + std::to_string(entry->rank) +
                                 " is not the rank " + std::to_string(rank) + " this agent was given");
    return true;
  }
  entry->host_id = agent.host_id;
  GangResults& gang = gang_results_[job.job_id];
  if (gang.attempt != job.attempt) gang = GangResults{job.attempt, {}};
  gang.ranks[rank] = GangResults::Rank{std::move(*entry), result};
  LOG_INFO("job " << job.job_id << " rank " << rank << " of " << world_size << " on "
                  << agent.description.name << ": " << (result.ok ? "done" : result.error));
  const bool failed = !result.ok;
  if (!failed && static_cast<int64_t>(gang.ranks.size()) < world_size) return true;  // acked once all are in

  // The job's one result: rank 0's, with every rank's; or the failure of the rank that
  // failed, with the ranks heard from so far.
  WorkerResult combined;
  if (failed) {
    combined.ok = false;
    combined.error = "rank " + std::to_string(rank) + " of " + std::to_string(world_size) +
                     " on agent " + agent.description.name + ": " + result.error +
                     "; the gang was stopped";
    combined.values.assign(ResultFields().size(), json());
    combined.detail = {{"ok", false}, {"error", combined.error}};
  } else {
    combined = gang.ranks.at(0).result;
  }
  combined.ranks.clear();
  for (auto& [r, item] : gang.ranks) combined.ranks.push_back(item.entry);
  Agent* rank0 = registry_.FindByName(lease.agent);
  const int64_t host_id = failed ? agent.host_id : (rank0 ? rank0->host_id : agent.host_id);
  std::string rejection;
  auto outcome = store_->StoreResult(job.job_id, job.attempt, host_id, lease.agent, combined, &rejection);
  if (!outcome.ok()) {
    ++counters_.store_errors;  // no ack: the ranks' agents send their results again
    LOG_ERROR("cannot store the result of gang job " << job.job_id << ": " << outcome.status().message());
    return true;
  }
  if (*outcome == ResultOutcome::kRejected) {
    gang_results_.erase(job.job_id);
    registry_.RemoveLease(job.job_id);
    dispatcher_->StopGang(lease, rejection);
    RejectResult(agent, job, rejection);
    dispatcher_->LoseAttempt(lease, "its result was rejected: " + rejection);
    return true;
  }
  if (*outcome == ResultOutcome::kStored) {
    ++counters_.results_stored;
    if (failed) {
      ++counters_.failed_jobs;
      LOG_WARN("job " << job.job_id << " failed: " << combined.error);
    }
  }
  // Every rank heard from is acknowledged; the others are stopped.
  std::vector<std::string> acked;
  for (const auto& [r, item] : gang.ranks) acked.push_back(holders[static_cast<size_t>(r)]);
  gang_results_.erase(job.job_id);
  registry_.RemoveLease(job.job_id);
  for (const std::string& name : holders) {
    Agent* holder = registry_.FindByName(name);
    if (holder == nullptr) continue;
    holder->refusal_backoff_ms = 0;
    if (std::find(acked.begin(), acked.end(), name) != acked.end()) {
      ReplyToAgent(holder->routing_id, ToMessage(ResultAck{job, AckOutcome(*outcome), ""}));
    } else {
      (void)Send(Side::kAgents, holder->routing_id,
                 ToMessage(StopOrder{job, combined.error.substr(0, 1000)}));
    }
  }
  dispatcher_->Dispatch();
  return true;
}

}  // namespace benchfleet
