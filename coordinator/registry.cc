#include "coordinator/registry.h"

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

std::vector<std::string> Lease::Holders() const {
  std::vector<std::string> holders = {agent};
  holders.insert(holders.end(), ranks.begin(), ranks.end());
  return holders;
}

void AgentRegistry::IndexLease(const Lease& lease) {
  for (const std::string& holder : lease.Holders()) leases_by_agent_[holder].insert(lease.job_id);
}

void AgentRegistry::UnindexLease(const Lease& lease) {
  for (const std::string& holder : lease.Holders()) {
    auto it = leases_by_agent_.find(holder);
    if (it == leases_by_agent_.end()) continue;
    it->second.erase(lease.job_id);
    if (it->second.empty()) leases_by_agent_.erase(it);
    MachineFreed(holder);
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

void AgentRegistry::AddLease(Lease lease) {
  if (auto old = leases_.find(lease.job_id); old != leases_.end()) {
    if (journaling_) journal_.push_back({false, old->second});
    UnindexLease(old->second);
    leases_.erase(old);
  }
  if (journaling_) journal_.push_back({true, lease});
  IndexLease(lease);
  for (const std::string& name : lease.Holders()) {
    if (auto holder = routing_id_by_name_.find(name); holder != routing_id_by_name_.end()) {
      offer_candidates_.erase(holder->second);
    }
  }
  leases_[lease.job_id] = std::move(lease);
}

Lease* AgentRegistry::FindLease(int64_t job_id) {
  auto it = leases_.find(job_id);
  return it == leases_.end() ? nullptr : &it->second;
}

void AgentRegistry::RemoveLease(int64_t job_id) {
  auto it = leases_.find(job_id);
  if (it == leases_.end()) return;
  if (journaling_) journal_.push_back({false, it->second});
  UnindexLease(it->second);
  leases_.erase(it);
}

void AgentRegistry::BeginJournal() {
  journal_.clear();
  journaling_ = true;
}

void AgentRegistry::EndJournal() {
  journal_.clear();
  journaling_ = false;
}

void AgentRegistry::RollBackJournal() {
  journaling_ = false;
  for (auto change = journal_.rbegin(); change != journal_.rend(); ++change) {
    if (change->added) {
      RemoveLease(change->lease.job_id);
    } else {
      AddLease(change->lease);
    }
  }
  journal_.clear();
}

std::optional<int64_t> AgentRegistry::LeasedJobOf(const std::string& agent_name) const {
  auto it = leases_by_agent_.find(agent_name);
  if (it == leases_by_agent_.end() || it->second.empty()) return std::nullopt;
  return *it->second.rbegin();
}

bool AgentRegistry::MachineBusy(const Agent& agent) const {
  auto machine = machine_agents_.find(agent.machine_id);
  if (machine == machine_agents_.end()) return false;
  for (const std::string& peer : machine->second) {
    if (peer != agent.description.name && LeasedJobOf(peer).has_value()) return true;
  }
  return false;
}

std::vector<Lease> AgentRegistry::TakeExpiredLeases(MonoTime now, Millis window) {
  std::vector<Lease> expired;
  for (const auto& [job_id, lease] : leases_) {
    if (now - lease.renewed_at > window || now > lease.hard_deadline) expired.push_back(lease);
  }
  for (const Lease& lease : expired) RemoveLease(lease.job_id);
  return expired;
}

std::vector<Lease> AgentRegistry::TakeLeasesOf(const std::string& agent_name) {
  std::vector<Lease> taken;
  auto it = leases_by_agent_.find(agent_name);
  if (it == leases_by_agent_.end()) return taken;
  for (int64_t job_id : it->second) taken.push_back(leases_.at(job_id));
  for (const Lease& lease : taken) RemoveLease(lease.job_id);
  return taken;
}

std::vector<std::string> AgentRegistry::OfferCandidates() const {
  return {offer_candidates_.begin(), offer_candidates_.end()};
}

void AgentRegistry::MayAllTakeOffers() {
  for (const auto& [routing_id, agent] : agents_) offer_candidates_.insert(routing_id);
}

}  // namespace benchfleet
