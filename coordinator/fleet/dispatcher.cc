#include "coordinator/fleet/dispatcher.h"

#include <algorithm>

#include "common/job_spec.h"
#include "common/log.h"
#include "common/sweep.h"
#include "coordinator/core/matching.h"

namespace benchfleet {
namespace {

// Queued jobs read per requirement when looking for one to hand out: jobs held for a
// spooled result on its way are skipped, so a few more than one are read.
constexpr int kOldestQueuedScan = 8;
// Every agent and requirement is looked at for dispatch at least this often.
constexpr int kDispatchRefreshMs = 1000;
// A busy agent that refused an offer gets no other for this long, doubling per refusal
// up to the maximum; a result resets it.
constexpr int kMaxRefusalBackoffMs = 30000;

// A job's timeout, what its lease allows it to run.
Millis TimeoutOf(double timeout_s) {
  return std::chrono::duration_cast<Millis>(std::chrono::duration<double>(timeout_s));
}

}  // namespace

void Dispatcher::Refresh() {
  const MonoTime now = ctx_.Now();
  if (now < next_refresh_) return;
  next_refresh_ = now + Millis(kDispatchRefreshMs);
  // Attempts over whose requeue (or take-back) the store could not write: again. One a
  // lease holds again (a failed round put it back) is that lease's.
  std::vector<Unrequeued> again;
  again.swap(unrequeued_);
  for (const Unrequeued& item : again) {
    if (ctx_.leases.Find(item.lease.job_id) != nullptr) continue;
    if (item.undo) {
      UndoHandOut(item.lease);
    } else {
      LoseAttempt(item.lease, item.reason);
    }
  }
  if (reload_requirements_) reload_requirements_ = !ReloadRequirements().ok();
  MarkQueued();
}

void Dispatcher::RenewLease(const Agent& agent, const JobAttempt& running) {
  ctx_.leases.Renew(running.job_id, agent.description.name, running.attempt, ctx_.Now());
}

void Dispatcher::OfferRefused(Agent& agent, const JobAttempt& job) {
  // The job never started there, so the hand-out is taken back without costing an
  // attempt, and the agent gets no offer for a while.
  const Lease* lease = ctx_.leases.Find(job.job_id);
  if (!lease || !lease->HeldBy(agent.description.name, job.attempt)) return;
  const Lease refused = *ctx_.leases.Release(job.job_id, "the offer was refused");
  ++ctx_.counters.refused_offers;
  UndoHandOut(refused);
  agent.refusal_backoff_ms = std::min(
      kMaxRefusalBackoffMs, std::max(ctx_.options.heartbeat_ms, agent.refusal_backoff_ms * 2));
  agent.offers_paused_until = ctx_.Now() + Millis(agent.refusal_backoff_ms);
}

void Dispatcher::RoundFailed() {
  // Requirement ids given out this round may be given again to other requirements.
  for (Agent* agent : ctx_.registry.All()) agent->can_run.clear();
  requirements_.clear();
  Status reloaded = ReloadRequirements();
  if (!reloaded.ok()) {
    LOG_ERROR("cannot read requirements: " << reloaded.message());
    reload_requirements_ = true;
  }
  MarkQueued();
}

void Dispatcher::HoldSpooledJobs(const std::string& agent, const std::vector<JobAttempt>& spooled) {
  // The agent is about to deliver these results (it sends its spool right after
  // "registered"). A lease per result keeps a requeued job from being handed out again
  // meanwhile, so valid work is not thrown away; if the result does not come, the lease
  // expires like any other.
  MonoTime now = ctx_.Now();
  for (const JobAttempt& item : spooled) {
    if (ctx_.leases.Find(item.job_id) != nullptr) continue;
    // Nothing left to run: the liveness window alone.
    ctx_.leases.Grant(item.job_id, item.attempt, agent, {}, now, Millis(0), ctx_.LivenessWindow());
  }
}

void Dispatcher::RecoverLeases() {
  auto running = ctx_.store.jobs().RunningJobs();
  if (!running.ok()) {
    LOG_ERROR("cannot read running jobs: " << running.status().message());
    return;
  }
  MonoTime now = ctx_.Now();
  for (const RunningJob& job : *running) {
    // The agent gets one liveness window to come back and name the job in a heartbeat
    // (or deliver its result); otherwise the attempt is lost and the job requeued.
    ctx_.leases.Grant(job.job_id, job.attempt, job.host, {}, now, TimeoutOf(job.timeout_s),
                      ctx_.LivenessWindow());
  }
  if (!running->empty()) LOG_INFO("recovered " << running->size() << " leases of running jobs");
}

void Dispatcher::Lose(int64_t job_id, const std::string& reason) {
  if (std::optional<Lease> lease = ctx_.leases.Release(job_id, reason)) LoseAttempt(*lease, reason);
}

void Dispatcher::LoseAttempt(const Lease& lease, const std::string& reason) {
  StopGang(lease, reason);
  auto requeued = ctx_.store.jobs().RequeueOrFail(lease.job_id, lease.attempt,
                                                  ctx_.options.max_attempts, reason);
  if (!requeued.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot requeue job " << lease.job_id
                                    << " (tried again shortly): " << requeued.status().message());
    // The attempt is over (its lease ended), but the store still says it runs: the
    // requeue is tried again by Refresh. The job is not leased meanwhile, so no agent
    // looks busy with it.
    unrequeued_.push_back({lease, reason, /*undo=*/false});
    return;
  }
  if (*requeued) {
    ++ctx_.counters.requeued_jobs;
    MarkQueued();
    LOG_WARN("job " << lease.job_id << " attempt " << lease.attempt << " lost (" << reason
                    << "); requeued");
  } else {
    LOG_WARN("job " << lease.job_id << " attempt " << lease.attempt << " lost (" << reason << ")");
  }
}

void Dispatcher::UndoHandOut(const Lease& lease) {
  StopGang(lease, "the job was taken back before it ran");
  auto undone = ctx_.store.jobs().UndoHandOut(lease.job_id, lease.attempt);
  if (!undone.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot take back job " << lease.job_id
                                      << " (requeued shortly): " << undone.status().message());
    // The agent never had it, but the store says it runs: taken back by Refresh.
    unrequeued_.push_back({lease, "", /*undo=*/true});
    return;
  }
  MarkQueued();
}

Status Dispatcher::ReloadRequirements() {
  ASSIGN_OR_RETURN(auto all, ctx_.store.jobs().Requirements());
  for (JobRequirement& requirement : all) {
    auto& state = requirements_[requirement.requirement_id];
    state.requirement = std::move(requirement);
    state.may_have_queued = true;
  }
  ctx_.registry.MayAllTakeOffers();
  return Status::Ok();
}

void Dispatcher::MarkQueued() {
  for (auto& [id, state] : requirements_) state.may_have_queued = true;
  ctx_.registry.MayAllTakeOffers();
}

bool Dispatcher::CanRun(Agent& agent, const JobRequirement& requirement) {
  auto [it, inserted] = agent.can_run.emplace(requirement.requirement_id, false);
  if (inserted) it->second = AgentCanRun(requirement, agent.description);
  return it->second;
}

void Dispatcher::Dispatch() {
  // Nothing queued that anyone could take: an idle fleet costs no dispatch work.
  if (std::none_of(requirements_.begin(), requirements_.end(),
                   [](const auto& entry) { return entry.second.may_have_queued; })) {
    return;
  }
  MonoTime now = ctx_.Now();
  // Only the offer candidates (AgentRegistry), not the whole fleet. By routing id: an
  // offer that cannot be sent removes its agent from the registry.
  for (const std::string& routing_id : ctx_.registry.OfferCandidates()) {
    Agent* agent = ctx_.registry.FindByRoutingId(routing_id);
    if (agent == nullptr) continue;
    if (ctx_.leases.LeasedJobOf(agent->description.name).has_value() ||
        (!ctx_.options.share_machines && ctx_.leases.MachineBusy(*agent))) {
      ctx_.registry.NoOfferFor(routing_id);  // again a candidate when the lease ends
      continue;
    }
    if (now < agent->offers_paused_until) continue;  // stays a candidate
    if (OfferNextJob(*agent) == Offer::kNothingToOffer) {
      ctx_.registry.NoOfferFor(routing_id);  // again a candidate when jobs are queued
    }
  }
}

Dispatcher::Offer Dispatcher::OfferNextJob(Agent& agent) {
  // The oldest queued job among the requirements this agent can run, calibrations
  // first. Each requirement costs one index probe, however many queued jobs match
  // nothing registered.
  std::optional<QueuedJob> best;
  for (auto& [id, state] : requirements_) {
    if (!state.may_have_queued) continue;
    if (!CanRun(agent, state.requirement)) continue;
    if (best && best->kind == "calibration" && state.requirement.kind != "calibration") continue;
    auto queued = ctx_.store.jobs().OldestQueued(id, kOldestQueuedScan);
    if (!queued.ok()) {
      ++ctx_.counters.store_errors;
      LOG_ERROR("cannot read the queue: " << queued.status().message());
      return Offer::kNotNow;
    }
    if (queued->empty()) {
      state.may_have_queued = false;
      continue;
    }
    for (QueuedJob& job : *queued) {
      if (ctx_.leases.Find(job.job_id) != nullptr) continue;  // its result is on the way
      // A gang wider than the agents that could ever run it now does not hold up the
      // jobs behind it (it waits, and says why in status).
      if (const int64_t agents = job.needs.Agents();
          agents > 1 && agents > AgentsAbleToRun(state.requirement)) {
        continue;
      }
      // A gang on one agent needs a CPU per thread of every rank: an agent with fewer
      // leaves it to a larger one and takes the next job instead.
      if (const int64_t cpus = job.needs.local_cpus; agent.job_cpus > 0 && cpus > agent.job_cpus) {
        continue;
      }
      const bool calibration = job.kind == "calibration";
      const bool better =
          !best || (calibration && best->kind != "calibration") ||
          (calibration == (best->kind == "calibration") && job.queue_order < best->queue_order);
      if (better) best = std::move(job);
      break;
    }
  }
  if (!best) return Offer::kNothingToOffer;
  const QueuedJob& job = *best;
  if (const int64_t agents = job.needs.Agents(); agents > 1) return OfferGang(agent, job, agents);
  return HandOut(agent, job, {});
}

Dispatcher::Offer Dispatcher::HandOut(Agent& agent, const QueuedJob& job,
                                      std::vector<std::string> ranks,
                                      std::optional<GangRole> gang) {
  auto attempt = ctx_.store.jobs().MarkRunning(job.job_id, agent.host_id);
  if (!attempt.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot hand out job " << job.job_id << ": " << attempt.status().message());
    return Offer::kNotNow;
  }
  const Lease lease =
      ctx_.leases.Grant(job.job_id, *attempt, agent.description.name, std::move(ranks), ctx_.Now(),
                        TimeoutOf(job.timeout_s), ctx_.LivenessWindow());
  JobOffer offer;
  offer.job = {job.job_id, *attempt};
  offer.spec = json::parse(job.spec, nullptr, false);
  // A later process of a job with `precision` samples as long as was chosen for it
  // (coordinator/core/process_stats.h); its stored spec, what its series is of, stays.
  if (!job.process_timing.empty() && offer.spec.is_object()) {
    json timing = json::parse(job.process_timing, nullptr, false);
    if (timing.is_object()) offer.spec["timing"] = std::move(timing);
  }
  offer.needs = job.needs;
  offer.timeout_s = job.timeout_s;
  offer.gang = gang;
  // Side A of a pair brings side B and how this pair runs (schemas/sweep.md, Versus).
  if (!job.versus.empty()) {
    auto pair = ctx_.store.pairs().NextPair(job);
    if (!pair.ok()) {
      ++ctx_.counters.store_errors;
      LOG_ERROR("cannot offer job " << job.job_id << "'s pair: " << pair.status().message());
    } else {
      offer.versus = std::move(pair).value();
    }
  }
  LOG_DEBUG("job " << job.job_id << " attempt " << *attempt << " -> " << agent.description.name);
  return SendOffer(agent, offer, lease);
}

Dispatcher::Offer Dispatcher::SendOffer(Agent& agent, const JobOffer& offer, const Lease& lease) {
  // Sent once the hand-out is committed (the round's end); an undelivered one is taken
  // back (OfferUndelivered).
  return ctx_.round.SendOffer(agent.routing_id, ToMessage(offer), lease) ? Offer::kOffered
                                                                         : Offer::kNotNow;
}

void Dispatcher::OfferUndelivered(const Lease& lease, const std::string& routing_id,
                                  const Status& sent) {
  // The job never reached the agent: not an attempt. The peer is gone (the ROUTER
  // knows no connection to it), so it leaves the registry now, not after its
  // liveness window, and the job goes to another agent.
  ++ctx_.counters.undelivered_offers;
  const Lease undelivered = lease;  // `lease` may be the table's own, which Release ends
  ctx_.leases.Release(undelivered.job_id, "the offer could not be sent");
  UndoHandOut(undelivered);
  if (sent.code() == StatusCode::kNotFound)
    events_.AgentUnreachable(routing_id, "is unreachable (" + sent.message() + ")");
}

bool Dispatcher::StillLeased(const Lease& hand_out) {
  const Lease* lease = ctx_.leases.Find(hand_out.job_id);
  return lease != nullptr && lease->attempt == hand_out.attempt && lease->agent == hand_out.agent;
}

void Dispatcher::OfferSent(const Lease& hand_out) {
  // The lease runs from when the agent can have the job, not from when the round made
  // the offer: a long round must not expire it before it is even sent.
  ctx_.leases.Restart(hand_out.job_id, ctx_.Now());
}

std::vector<WaitingRequirement> Dispatcher::Waiting(std::optional<int64_t> sweep_id) {
  std::vector<WaitingRequirement> waiting;
  auto counts = ctx_.store.jobs().QueuedPerRequirement(sweep_id);
  if (!counts.ok()) return waiting;
  for (const auto& [requirement_id, jobs] : *counts) {
    auto it = requirements_.find(requirement_id);
    if (it == requirements_.end()) continue;
    const JobRequirement& requirement = it->second.requirement;
    int64_t matching = 0;
    for (Agent* agent : ctx_.registry.All()) matching += CanRun(*agent, requirement) ? 1 : 0;
    const std::string what = std::to_string(jobs) + (jobs == 1 ? " job waits" : " jobs wait");
    std::string reason =
        matching == 0 ? what + " for an agent matching " + DescribeRequirement(requirement) +
                            "; none is registered"
                      : what + " for one of " + std::to_string(matching) + " agents matching " +
                            DescribeRequirement(requirement) + " to be free";
    // A gang spread over agents needs that many at once: wider than the agents that
    // match, it cannot run (and counts no matching agents, so submit --wait stops).
    if (auto oldest = ctx_.store.jobs().OldestQueued(requirement_id, 1);
        oldest.ok() && !oldest->empty()) {
      const int64_t ranks = oldest->front().needs.Agents();
      const int64_t cpus = oldest->front().needs.local_cpus;
      int64_t largest = 0;
      for (Agent* agent : ctx_.registry.All()) {
        if (CanRun(*agent, requirement)) largest = std::max(largest, agent->job_cpus);
      }
      if (cpus > 0 && matching > 0 && largest > 0 && cpus > largest) {
        reason = what + "; the oldest is a gang on one agent needing " + std::to_string(cpus) +
                 " CPUs (a CPU per thread of each rank) and the largest of the " +
                 std::to_string(matching) + " agents matching " + DescribeRequirement(requirement) +
                 " runs jobs on " + std::to_string(largest);
        matching = 0;
      }
      if (ranks > 1 && !requirement.pinned_host.empty()) matching = AgentsAbleToRun(requirement);
      if (ranks > 1 && ranks > matching) {
        reason = what + "; the oldest is a gang of " + std::to_string(ranks) +
                 " ranks spread over agents and only " + std::to_string(matching) +
                 " agents match " + DescribeRequirement(requirement);
        matching = 0;
      } else if (ranks > 1) {
        reason = what + "; the oldest is a gang of " + std::to_string(ranks) +
                 " ranks: it starts when " + std::to_string(ranks) + " of the " +
                 std::to_string(matching) + " agents matching " + DescribeRequirement(requirement) +
                 " are free at once";
      }
    }
    waiting.push_back(WaitingRequirement{jobs, requirement.kind, requirement.pinned_host,
                                         requirement.select, requirement.device, matching,
                                         std::move(reason)});
  }
  return waiting;
}

int64_t Dispatcher::AgentsAbleToRun(const JobRequirement& requirement) {
  const bool pinned = !requirement.pinned_host.empty();
  if (pinned) {
    Agent* rank0 = ctx_.registry.FindByName(requirement.pinned_host);
    if (rank0 == nullptr || !CanRun(*rank0, requirement)) return 0;
  }
  int64_t able = 0;
  for (Agent* agent : ctx_.registry.All()) {
    if (pinned ? CanBePartner(*agent, requirement) : CanRun(*agent, requirement)) ++able;
  }
  return able;
}

bool Dispatcher::CanBePartner(Agent& agent, const JobRequirement& requirement) {
  if (requirement.pinned_host.empty()) return CanRun(agent, requirement);
  JobRequirement unpinned = requirement;
  unpinned.pinned_host.clear();
  return AgentCanRun(unpinned, agent.description);  // not cached: the cache is by requirement id
}

std::vector<Agent*> Dispatcher::GangPartners(Agent& rank0, const JobRequirement& requirement,
                                             int64_t needed) {
  // Idle as Dispatch means it, and able to run the job. Agents of one machine may share
  // a gang: its ranks are one job.
  std::vector<Agent*> partners;
  const MonoTime now = ctx_.Now();
  for (Agent* agent : ctx_.registry.All()) {
    if (agent == &rank0 || ctx_.leases.LeasedJobOf(agent->description.name).has_value() ||
        now < agent->offers_paused_until || !CanBePartner(*agent, requirement)) {
      continue;
    }
    if (!ctx_.options.share_machines && agent->machine_id != rank0.machine_id &&
        ctx_.leases.MachineBusy(*agent)) {
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

Dispatcher::Offer Dispatcher::OfferGang(Agent& rank0, const QueuedJob& job, int64_t world_size) {
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

void Dispatcher::Rendezvous(Agent& agent, const RendezvousReport& rendezvous) {
  const RendezvousReport* report = &rendezvous;
  const Lease* found = ctx_.leases.Find(report->job.job_id);
  if (found == nullptr || found->attempt != report->job.attempt || found->ranks.empty() ||
      found->agent != agent.description.name) {
    LOG_WARN("rendezvous for job " << report->job.job_id << " attempt " << report->job.attempt
                                   << " from " << agent.description.name
                                   << " ignored: not rank 0 of a gang it holds");
    return;
  }
  const Lease lease = *found;
  auto job = ctx_.store.jobs().FindJob(lease.job_id);
  if (!job.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot read job " << lease.job_id << ": " << job.status().message());
    Lose(lease.job_id, "its spec could not be read to offer its ranks");
    return;
  }
  const std::string store = report->store();
  LOG_INFO("job " << lease.job_id << " attempt " << lease.attempt << ": rank 0 on " << lease.agent
                  << " waits at " << store);
  const int64_t world_size = static_cast<int64_t>(lease.ranks.size()) + 1;
  for (size_t i = 0; i < lease.ranks.size(); ++i) {
    Agent* rank_agent = ctx_.registry.FindByName(lease.ranks[i]);
    if (rank_agent == nullptr) {
      Lose(lease.job_id,
           "agent " + lease.ranks[i] + " of rank " + std::to_string(i + 1) + " is gone");
      return;
    }
    JobOffer offer;
    offer.job = {lease.job_id, lease.attempt};
    offer.spec = json::parse(job->spec, nullptr, false);
    offer.needs = job->needs;
    offer.timeout_s = job->timeout_s;
    offer.gang = GangRole{static_cast<int64_t>(i + 1), world_size, store};
    if (SendOffer(*rank_agent, offer, lease) == Offer::kNotNow) return;
  }
}

void Dispatcher::StopGang(const Lease& lease, const std::string& reason) {
  events_.GangStopped(lease.job_id);
  if (lease.ranks.empty()) return;
  for (const std::string& name : lease.Holders()) {
    Agent* holder = ctx_.registry.FindByName(name);
    if (holder == nullptr) continue;  // gone: its workers died with it
    ctx_.Reply(Side::kAgents, holder->routing_id,
               ToMessage(StopOrder{{lease.job_id, lease.attempt}, reason.substr(0, 1000)}));
  }
}

std::map<int64_t, std::string> Dispatcher::RequirementNames() const {
  std::map<int64_t, std::string> names;
  for (const auto& [id, state] : requirements_) names[id] = DescribeRequirement(state.requirement);
  return names;
}

std::map<int64_t, int64_t> Dispatcher::MatchingAgents(const std::vector<int64_t>& requirement_ids) {
  std::map<int64_t, int64_t> matching;
  for (int64_t id : requirement_ids) {
    auto it = requirements_.find(id);
    if (it == requirements_.end()) continue;
    int64_t& agents = matching[id];
    for (Agent* agent : ctx_.registry.All())
      agents += CanRun(*agent, it->second.requirement) ? 1 : 0;
  }
  return matching;
}

}  // namespace benchfleet
