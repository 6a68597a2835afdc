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

int64_t Coordinator::SpreadRanks(const std::string& spec_text) {
  // Most jobs are not spread: a substring test keeps their specs unparsed.
  if (spec_text.find("\"" + std::string(kSpreadPlacement) + "\"") == std::string::npos) return 1;
  const json spec = json::parse(spec_text, nullptr, false);
  if (!spec.is_object() || spec.value(kSpreadPlacementKey, std::string()) != kSpreadPlacement) return 1;
  return JobWorldSize(spec);
}

int64_t Coordinator::LocalGangCpus(const std::string& spec_text) {
  if (spec_text.find("\"parallel\"") == std::string::npos &&
      spec_text.find("\"replicas\"") == std::string::npos) {
    return 0;  // most jobs: unparsed
  }
  const json spec = json::parse(spec_text, nullptr, false);
  if (!spec.is_object() || spec.contains("distributed")) return 0;
  // A spread gang puts each rank on its own agent; replicas always share one.
  if (spec.value(kSpreadPlacementKey, std::string()) == kSpreadPlacement && JobWorldSize(spec) > 1)
    return 0;
  const int64_t ranks = JobLocalProcesses(spec);  // a gang's ranks, or the replicas
  const json threads = spec.value("threads", json(1));
  if (ranks < 2 || !threads.is_number_integer()) return 0;
  return ranks * threads.get<int64_t>();
}

int64_t Coordinator::AgentsAbleToRun(const JobRequirement& requirement) {
  int64_t able = 0;
  for (Agent* agent : registry_.All()) {
    if (AgentCanRunRequirement(*agent, requirement)) ++able;
  }
  return able;
}

std::vector<Agent*> Coordinator::GangPartners(Agent& rank0, const JobRequirement& requirement,
                                              int64_t needed) {
  // Idle as Dispatch means it, and able to run the job. Agents of one machine may share
  // a gang: its ranks are one job.
  std::vector<Agent*> partners;
  const MonoTime now = Now();
  for (Agent* agent : registry_.All()) {
    if (agent == &rank0 || registry_.HasLease(agent->description.name) ||
        now < agent->offers_paused_until || !AgentCanRunRequirement(*agent, requirement)) {
      continue;
    }
    if (!options_.share_machines && agent->machine_id != rank0.machine_id &&
        registry_.MachineBusy(*agent)) {
      continue;
    }
    partners.push_back(agent);
  }
  if (static_cast<int64_t>(partners.size()) < needed) return {};
  std::sort(partners.begin(), partners.end(), [](const Agent* a, const Agent* b) {
    return a->description.name < b->description.name;
  });
  partners.resize(static_cast<size_t>(needed));
  return partners;
}

Coordinator::Offer Coordinator::OfferGang(Agent& rank0, const QueuedJob& job, int64_t world_size) {
  const JobRequirement& requirement = requirements_.at(job.requirement_id).requirement;
  std::vector<Agent*> partners = GangPartners(rank0, requirement, world_size - 1);
  // Not enough idle agents yet: this agent waits for them rather than taking later
  // jobs, so the gang is not starved by smaller jobs; it is a candidate again when a
  // lease ends or jobs are queued.
  if (partners.empty()) return Offer::kNothingToOffer;
  std::vector<std::string> ranks;
  std::string names = rank0.description.name;
  for (Agent* partner : partners) {
    ranks.push_back(partner->description.name);
    names += ", " + partner->description.name;
  }
  LOG_INFO("job " << job.job_id << ": a gang of " << world_size << " ranks on " << names);
  // Rank 0 first: the others need its store's address, which its agent reports.
  return HandOut(rank0, job, std::move(ranks), GangRole{0, world_size, ""});
}

void Coordinator::Rendezvous(Agent& agent, const Message& message) {
  auto report = RendezvousReport::FromJson(message.body);
  if (!report.ok()) return Refuse(Side::kAgents, agent.routing_id, report.status());
  Lease* found = registry_.FindLease(report->job.job_id);
  if (found == nullptr || found->attempt != report->job.attempt || found->ranks.empty() ||
      found->agent != agent.description.name) {
    LOG_WARN("rendezvous for job " << report->job.job_id << " attempt " << report->job.attempt
                                   << " from " << agent.description.name
                                   << " ignored: not rank 0 of a gang it holds");
    return;
  }
  const Lease lease = *found;
  auto spec = store_->JobSpecText(lease.job_id);
  if (!spec.ok()) {
    ++counters_.store_errors;
    LOG_ERROR("cannot read job " << lease.job_id << ": " << spec.status().message());
    registry_.RemoveLease(lease.job_id);
    LoseAttempt(lease, "its spec could not be read to offer its ranks");
    return;
  }
  const std::string store = report->store();
  LOG_INFO("job " << lease.job_id << " attempt " << lease.attempt << ": rank 0 on " << lease.agent
                  << " waits at " << store);
  const int64_t world_size = static_cast<int64_t>(lease.ranks.size()) + 1;
  for (size_t i = 0; i < lease.ranks.size(); ++i) {
    Agent* rank_agent = registry_.FindByName(lease.ranks[i]);
    if (rank_agent == nullptr) {
      registry_.RemoveLease(lease.job_id);
      LoseAttempt(lease, "agent " + lease.ranks[i] + " of rank " + std::to_string(i + 1) + " is gone");
      return;
    }
    JobOffer offer;
    offer.job = {lease.job_id, lease.attempt};
    offer.spec = json::parse(spec->first, nullptr, false);
    offer.timeout_s = spec->second;
    offer.gang = GangRole{static_cast<int64_t>(i + 1), world_size, store};
    if (SendOffer(*rank_agent, ToMessage(offer), lease) == Offer::kNotNow) return;
  }
}

void Coordinator::StopGang(const Lease& lease, const std::string& reason) {
  gang_results_.erase(lease.job_id);
  if (lease.ranks.empty()) return;
  for (const std::string& name : AgentRegistry::Holders(lease)) {
    Agent* holder = registry_.FindByName(name);
    if (holder == nullptr) continue;  // gone: its workers died with it
    (void)Send(Side::kAgents, holder->routing_id,
               ToMessage(StopOrder{{lease.job_id, lease.attempt}, reason.substr(0, 1000)}));
  }
}

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
    StopGang(lease, rejection);
    RejectResult(agent, job, rejection);
    LoseAttempt(lease, "its result was rejected: " + rejection);
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
  Dispatch();
  return true;
}

}  // namespace benchfleet
