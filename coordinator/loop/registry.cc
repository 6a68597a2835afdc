#include "coordinator/loop/registry.h"

#include <algorithm>

namespace benchfleet {

Agent* AgentRegistry::FindByRoutingId(const std::string& routing_id) {
  auto it = agents_.find(routing_id);
  return it == agents_.end() ? nullptr : &it->second;
}

Agent* AgentRegistry::FindByName(const std::string& name) {
  auto it = routing_id_by_name_.find(name);
  return it == routing_id_by_name_.end() ? nullptr : FindByRoutingId(it->second);
}

Agent& AgentRegistry::Upsert(Agent agent) {
  const std::string id = agent.routing_id;
  Remove(id);  // its name or machine may have changed
  routing_id_by_name_[agent.description.name] = id;
  machine_agents_[agent.machine_id].insert(agent.description.name);
  offer_candidates_.insert(id);
  return agents_[id] = std::move(agent);
}

void AgentRegistry::Remove(const std::string& routing_id) {
  auto it = agents_.find(routing_id);
  if (it == agents_.end()) return;
  const Agent& agent = it->second;
  // Its machine's other agents no longer wait for it (its leases, if any, are taken by
  // the caller). Marked while the indexes still know the machine; the agent itself is
  // dropped from the candidates just below.
  MachineFreed(agent.description.name);
  routing_id_by_name_.erase(agent.description.name);
  auto machine = machine_agents_.find(agent.machine_id);
  if (machine != machine_agents_.end()) {
    machine->second.erase(agent.description.name);
    if (machine->second.empty()) machine_agents_.erase(machine);
  }
  offer_candidates_.erase(routing_id);
  agents_.erase(it);
}

std::vector<std::string> AgentRegistry::SilentAgents(MonoTime now, Millis window) const {
  std::vector<std::string> silent;
  for (const auto& [routing_id, agent] : agents_) {
    if (now - agent.last_seen > window) silent.push_back(routing_id);
  }
  return silent;
}

void AgentRegistry::Credit(Millis stalled) {
  for (auto& [routing_id, agent] : agents_) agent.last_seen += stalled;
}

std::vector<Agent*> AgentRegistry::All() {
  std::vector<Agent*> all;
  all.reserve(agents_.size());
  for (auto& [id, agent] : agents_) all.push_back(&agent);
  return all;
}

std::vector<std::string> AgentRegistry::RoutingIdsAfter(const std::string& after,
                                                        size_t count) const {
  std::vector<std::string> ids;
  count = std::min(count, agents_.size());
  ids.reserve(count);
  for (auto it = agents_.upper_bound(after); it != agents_.end() && ids.size() < count; ++it) {
    ids.push_back(it->first);
  }
  for (auto it = agents_.begin(); it != agents_.end() && ids.size() < count && it->first <= after;
       ++it) {
    ids.push_back(it->first);
  }
  return ids;
}

const std::set<std::string>& AgentRegistry::MachineAgents(const Agent& agent) const {
  static const std::set<std::string> kNone;
  auto machine = machine_agents_.find(agent.machine_id);
  return machine == machine_agents_.end() ? kNone : machine->second;
}

void AgentRegistry::Leased(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (auto holder = routing_id_by_name_.find(name); holder != routing_id_by_name_.end()) {
      offer_candidates_.erase(holder->second);
    }
  }
}

void AgentRegistry::MachineFreed(const std::string& name) {
  // A lease held under a name no registered agent has (recovered after a restart)
  // frees nobody but that name, if it registers later.
  if (auto agent = routing_id_by_name_.find(name); agent != routing_id_by_name_.end()) {
    offer_candidates_.insert(agent->second);
    const std::string& machine_id = agents_.at(agent->second).machine_id;
    for (const std::string& peer : machine_agents_[machine_id]) {
      if (auto peer_id = routing_id_by_name_.find(peer); peer_id != routing_id_by_name_.end()) {
        offer_candidates_.insert(peer_id->second);
      }
    }
  }
}

void AgentRegistry::MachineIdFreed(const std::string& machine_id) {
  auto machine = machine_agents_.find(machine_id);
  if (machine == machine_agents_.end()) return;
  for (const std::string& peer : machine->second) {
    if (auto peer_id = routing_id_by_name_.find(peer); peer_id != routing_id_by_name_.end()) {
      offer_candidates_.insert(peer_id->second);
    }
  }
}

std::vector<std::string> AgentRegistry::OfferCandidates() const {
  return {offer_candidates_.begin(), offer_candidates_.end()};
}

void AgentRegistry::MayAllTakeOffers() {
  for (const auto& [routing_id, agent] : agents_) offer_candidates_.insert(routing_id);
}

}  // namespace benchfleet
