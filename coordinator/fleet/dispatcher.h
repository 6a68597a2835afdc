// Dispatcher: who runs what. It hands queued jobs to idle agents that can run them,
// each under a lease (LeaseTable), and takes a hand-out back when its offer does not
// arrive or is refused; it loses an attempt (requeued, or failed after
// --max-attempts) when its lease runs out. Gangs spread over agents (placement
// "spread", docs/scheduling.md) are handed out whole: rank 0 first, the other ranks once
// rank 0's agent names its c10d store (`rendezvous`); anything that ends such an
// attempt stops every rank. What waits, and why, is its answer too (`status`).
//
// It joins every round: a failed round's hand-outs are undone by the lease table's
// journal, and the requirements it learnt in the round are read again.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/agent_messages.h"
#include "coordinator/loop/context.h"
#include "coordinator/loop/events.h"

namespace benchfleet {

class Dispatcher : public RoundParticipant, public OfferKeeper {
 public:
  // `events`: an agent found gone (an offer to it could not be sent), a spread gang's
  // attempt stopped; the loop routes them.
  Dispatcher(const CoordinatorContext& context, LoopEvents& events)
      : ctx_(context), events_(events) {}

  // Offers a job to every idle agent that can run one (the offer candidates only).
  void Dispatch();
  // The loop's timer work: every agent and requirement looked at again now and then,
  // whatever path freed a job without saying so.
  void Refresh();
  // At start: a lease for each job the store says runs, for one liveness window.
  void RecoverLeases();
  // The requirements of the queued jobs, read again (new sweeps, reruns, calibrations).
  Status ReloadRequirements();
  // Some requirement may have queued jobs again.
  void MarkQueued();
  // An attempt is over without a result: requeued, or failed after --max-attempts; a
  // gang's other ranks are stopped. Where the store cannot write that now, Refresh
  // tries again.
  void LoseAttempt(const Lease& lease, const std::string& reason);
  // Ends the lease of `job_id`, if any, and loses its attempt.
  void Lose(int64_t job_id, const std::string& reason);
  // A registering agent's spooled results are on their way: a lease for each keeps
  // their jobs from being handed out again meanwhile.
  void HoldSpooledJobs(const std::string& agent, const std::vector<JobAttempt>& spooled);
  // A heartbeat naming the job `running` renews its lease.
  void RenewLease(const Agent& agent, const JobAttempt& running);
  // A busy agent refused the offer of `job`: taken back without costing an attempt, and
  // the agent gets no offer for a while (doubling per refusal).
  void OfferRefused(Agent& agent, const JobAttempt& job);
  // Takes back a hand-out that never started: it did not reach its agent, the agent
  // refused it, or it crossed the agent's `leave`. Not an attempt.
  void UndoHandOut(const Lease& lease);
  // Rank 0's agent names its store: the other ranks get their offers.
  void Rendezvous(Agent& agent, const RendezvousReport& report);
  // Tells every agent of a spread gang to stop the job's attempt.
  void StopGang(const Lease& lease, const std::string& reason);
  // What waits, by requirement, and why (`status_reply.waiting`).
  std::vector<WaitingRequirement> Waiting(std::optional<int64_t> sweep_id);
  // The requirement with this id, or null when it is not known (yet).
  const JobRequirement* FindRequirement(int64_t requirement_id) const {
    auto it = requirements_.find(requirement_id);
    return it == requirements_.end() ? nullptr : &it->second.requirement;
  }

  // What status calls each requirement known, by id (for the metrics' labels).
  std::map<int64_t, std::string> RequirementNames() const;
  // Registered agents able to run each of `requirement_ids` (status's agents matching),
  // by id; an id not known is left out. The agents' cached answers: no store read.
  std::map<int64_t, int64_t> MatchingAgents(const std::vector<int64_t>& requirement_ids);

  // RoundParticipant, OfferKeeper.
  void RoundFailed() override;
  bool StillLeased(const Lease& hand_out) override;
  void OfferSent(const Lease& hand_out) override;
  void OfferUndelivered(const Lease& lease, const std::string& routing_id,
                        const Status& sent) override;

 private:
  enum class Offer {
    kOffered,         // a job went to the agent
    kNothingToOffer,  // nothing queued that the agent can run
    kNotNow,          // the store or the send failed; try again later
  };
  Offer OfferNextJob(Agent& agent);
  // Marks `job` running under a new lease of `agent` (and of `ranks`, the agents of a
  // spread gang's other ranks) and offers it, with `gang` when given.
  Offer HandOut(Agent& agent, const QueuedJob& job, std::vector<std::string> ranks,
                std::optional<GangRole> gang = std::nullopt);
  // Sends an offer at the round's commit; an undelivered one is taken back.
  Offer SendOffer(Agent& agent, const JobOffer& offer, const Lease& lease);
  bool CanRun(Agent& agent, const JobRequirement& requirement);
  // Agents able to take part in a job of `requirement`: those that can run it; for a
  // pinned one (a spread gang's rerun, rank 0 on the host it confirms), every agent that
  // could be a rank beside the pinned agent, while that agent is here to be rank 0.
  int64_t AgentsAbleToRun(const JobRequirement& requirement);
  // Whether `agent` may be a rank other than 0 of a gang of `requirement`: a pinned
  // requirement pins its rank 0 only, the other ranks go to agents matching the rest.
  bool CanBePartner(Agent& agent, const JobRequirement& requirement);
  // `needed` idle agents besides `rank0` that can run `requirement`, by name; empty when
  // there are not that many.
  std::vector<Agent*> GangPartners(Agent& rank0, const JobRequirement& requirement, int64_t needed);
  // Hands `job` to `rank0` and world_size - 1 partners at once, or to nobody.
  Offer OfferGang(Agent& rank0, const QueuedJob& job, int64_t world_size);

  const CoordinatorContext& ctx_;
  LoopEvents& events_;
  // Requirements by id, each with whether it may have queued jobs (cleared when the
  // store finds none, set again by a submit or a requeue).
  struct RequirementState {
    JobRequirement requirement;
    bool may_have_queued = true;
  };
  std::map<int64_t, RequirementState> requirements_;
  bool reload_requirements_ = false;  // a reload failed: tried again at the next refresh
  MonoTime next_refresh_;
  // Attempts whose lease ended but whose requeue (or, `undo`, take-back) the store
  // could not write: tried again at the next refresh.
  struct Unrequeued {
    Lease lease;
    std::string reason;
    bool undo = false;
  };
  std::vector<Unrequeued> unrequeued_;
};

}  // namespace benchfleet
