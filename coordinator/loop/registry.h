// What the coordinator knows of live agents: an index by routing id, name and machine,
// and which of them may take a job offer. The leases of the jobs handed out to them are
// the lease table's (coordinator/loop/lease_table.h).
// In memory only: after a restart agents register again.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/core/matching.h"

namespace benchfleet {

struct Agent {
  std::string routing_id;
  int64_t host_id = 0;
  std::string machine_id;
  AgentDescription description;  // name, tags, capabilities
  std::string instance;          // the agent process's random id (its registration's)
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

// Every question the loop asks per message or per dispatch is answered from an index
// (by routing id, name, machine), so its cost does not grow with the number of agents.
class AgentRegistry {
 public:
  Agent* FindByRoutingId(const std::string& routing_id);
  Agent* FindByName(const std::string& name);
  // Adds or replaces the agent with this routing id. It may take an offer.
  Agent& Upsert(Agent agent);
  void Remove(const std::string& routing_id);
  // The coordinator's loop did not run for `stalled`: every agent counts as heard from
  // that much later.
  void Credit(Millis stalled);
  // Routing ids of the agents not heard from within `window` before `now`.
  std::vector<std::string> SilentAgents(MonoTime now, Millis window) const;
  std::vector<Agent*> All();
  // Up to `count` routing ids in their order, from the first after `after`, wrapping
  // round to the start but never reaching `after` again: a walk over the fleet a slice
  // at a time that survives agents joining and leaving between slices.
  std::vector<std::string> RoutingIdsAfter(const std::string& after, size_t count) const;
  size_t size() const { return agents_.size(); }

  // Names of the agents on `agent`'s machine, itself included.
  const std::set<std::string>& MachineAgents(const Agent& agent) const;
  // The agents named hold a lease now: none of them may take an offer.
  void Leased(const std::vector<std::string>& names);
  // A lease of the agent named `name` ended: it and every agent of its machine may take
  // an offer again.
  void MachineFreed(const std::string& name);
  // The same, by machine: a lease of a machine whose agent left the registry ended.
  void MachineIdFreed(const std::string& machine_id);

  // Offer candidates: the agents that may take a job offer, so that a dispatch visits
  // those instead of the whole fleet. An agent becomes one when it registers, when a
  // lease of its own or of its machine ends, and on MayAllTakeOffers (jobs were
  // queued); it stops being one when the dispatcher finds it busy or finds nothing it
  // can run (NoOfferFor).
  std::vector<std::string> OfferCandidates() const;
  void NoOfferFor(const std::string& routing_id) { offer_candidates_.erase(routing_id); }
  void MayAllTakeOffers();

 private:
  std::map<std::string, Agent> agents_;                          // by routing id
  std::map<std::string, std::string> routing_id_by_name_;        // agent name -> routing id
  std::map<std::string, std::set<std::string>> machine_agents_;  // machine id -> agent names
  std::set<std::string> offer_candidates_;                       // routing ids
};

}  // namespace benchfleet
