// What the coordinator knows of live agents and of the jobs handed out to them.
// In memory only: after a restart agents register again and running jobs get fresh
// leases from the store (Coordinator::RecoverLeases).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/matching.h"

namespace benchfleet {

struct Agent {
  std::string routing_id;
  int64_t host_id = 0;
  std::string machine_id;
  AgentDescription description;  // name, tags, capabilities
  MonoTime last_seen;
  // After the agent refused a job offer (busy), no offer before this; the wait doubles
  // with each refusal and is reset by a result.
  MonoTime offers_paused_until;
  int refusal_backoff_ms = 0;
  // CPUs its jobs run on (its registration's `cpus` list); 0 when it did not say. A
  // job of several ranks on one agent needs world_size x threads of them.
  int64_t job_cpus = 0;
  // Whether the agent can run each requirement (by requirement_id), computed once.
  std::map<int64_t, bool> can_run;
};

// A job handed out under (job_id, attempt). It stays valid while the agent keeps naming
// the job in its heartbeats; it ends with the job's result, or expires.
struct Lease {
  int64_t job_id = 0;
  int attempt = 0;
  std::string agent;       // agent name (rank 0's, for a gang spread over agents)
  // A gang spread over agents: the agents of ranks 1.. in order. Each holds the lease
  // as rank 0's does (busy, renewing it, losing it when silent).
  std::vector<std::string> ranks;
  MonoTime renewed_at;     // dispatch, or the last heartbeat naming this job
  MonoTime hard_deadline;  // the job's timeout plus the liveness window

  // Whether `agent_name` holds this lease, for `attempt`: rank 0's agent or one of the
  // other ranks' (only what a holder says about the job counts).
  bool HeldBy(const std::string& agent_name, int attempt_number) const {
    return attempt == attempt_number &&
           (agent == agent_name || std::find(ranks.begin(), ranks.end(), agent_name) != ranks.end());
  }
  // Every agent holding it: its agent, then its ranks' (a spread gang).
  std::vector<std::string> Holders() const;
};

// Every question the loop asks per message or per dispatch is answered from an index
// (by routing id, name, machine, lease holder), so its cost does not grow with the
// number of agents or leases; only the expiry sweep walks them all, and it runs a few
// times a second, not per message.
class AgentRegistry {
 public:
  Agent* FindByRoutingId(const std::string& routing_id);
  Agent* FindByName(const std::string& name);
  // Adds or replaces the agent with this routing id. It may take an offer.
  Agent& Upsert(Agent agent);
  void Remove(const std::string& routing_id);
  // Routing ids of the agents not heard from within `window` before `now`.
  std::vector<std::string> SilentAgents(MonoTime now, Millis window) const;
  std::vector<Agent*> All();
  // Up to `count` routing ids in their order, from the first after `after`, wrapping
  // round to the start but never reaching `after` again: a walk over the fleet a slice
  // at a time that survives agents joining and leaving between slices.
  std::vector<std::string> RoutingIdsAfter(const std::string& after, size_t count) const;
  size_t size() const { return agents_.size(); }

  // Leases, keyed by job id.
  void AddLease(Lease lease);
  Lease* FindLease(int64_t job_id);
  // Removes the lease of `job_id`, if any; its agent, and the agents of its machine,
  // may take an offer again.
  void RemoveLease(int64_t job_id);
  // The job `agent_name` holds a lease for, if any (the newest one).
  std::optional<int64_t> LeasedJobOf(const std::string& agent_name) const;
  // True when an agent other than `agent` with the same machine id holds a lease:
  // jobs on one machine run one at a time so they do not disturb each other's timing.
  bool MachineBusy(const Agent& agent) const;
  // Leases not renewed within `window` before `now`, or past their hard deadline;
  // removed and returned.
  std::vector<Lease> TakeExpiredLeases(MonoTime now, Millis window);
  // Leases held by `agent_name`, removed and returned.
  std::vector<Lease> TakeLeasesOf(const std::string& agent_name);
  const std::map<int64_t, Lease>& leases() const { return leases_; }

  // Lease changes are recorded between BeginJournal and EndJournal, so that a round of
  // the loop whose commit failed puts the leases back as the store has them
  // (RollBackJournal undoes each change, newest first). Renewals are not recorded: a
  // renewal only keeps a lease from expiring early.
  void BeginJournal();
  void EndJournal();
  void RollBackJournal();

  // Offer candidates: the agents that may take a job offer, so that a dispatch visits
  // those instead of the whole fleet. An agent becomes one when it registers, when a
  // lease of its own or of its machine ends, and on MayAllTakeOffers (jobs were
  // queued); it stops being one when the dispatcher finds it busy or finds nothing it
  // can run (NoOfferFor).
  std::vector<std::string> OfferCandidates() const;
  void NoOfferFor(const std::string& routing_id) { offer_candidates_.erase(routing_id); }
  void MayAllTakeOffers();

 private:
  void IndexLease(const Lease& lease);
  void UnindexLease(const Lease& lease);
  // The agent named `name` and every agent of its machine may take an offer again.
  void MachineFreed(const std::string& name);

  std::map<std::string, Agent> agents_;                      // by routing id
  std::map<std::string, std::string> routing_id_by_name_;    // agent name -> routing id
  std::map<std::string, std::set<std::string>> machine_agents_;  // machine id -> agent names
  std::map<int64_t, Lease> leases_;                          // by job id
  std::map<std::string, std::set<int64_t>> leases_by_agent_;  // agent name -> job ids
  std::set<std::string> offer_candidates_;                   // routing ids
  struct LeaseChange {
    bool added;  // else removed
    Lease lease;
  };
  bool journaling_ = false;
  std::vector<LeaseChange> journal_;
};

}  // namespace benchfleet
