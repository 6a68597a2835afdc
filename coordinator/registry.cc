#include "coordinator/registry.h"

namespace benchfleet {

Agent* AgentRegistry::FindByRoutingId(const std::string& routing_id) {
  auto it = agents_.find(routing_id);
  return it == agents_.end() ? nullptr : &it->second;
}

Agent* AgentRegistry::FindByName(const std::string& name) {
  for (auto& [id, agent] : agents_) {
    if (agent.description.name == name) return &agent;
  }
  return nullptr;
}

Agent& AgentRegistry::Upsert(Agent agent) {
  std::string id = agent.routing_id;
  agents_[id] = std::move(agent);
  return agents_[id];
}

void AgentRegistry::Remove(const std::string& routing_id) { agents_.erase(routing_id); }

std::vector<std::string> AgentRegistry::SilentAgents(MonoTime now, Millis window) const {
  std::vector<std::string> silent;
  for (const auto& [routing_id, agent] : agents_) {
    if (now - agent.last_seen > window) silent.push_back(routing_id);
  }
  return silent;
}

std::vector<Agent*> AgentRegistry::All() {
  std::vector<Agent*> all;
  for (auto& [id, agent] : agents_) all.push_back(&agent);
  return all;
}

Lease* AgentRegistry::FindLease(int64_t job_id) {
  auto it = leases_.find(job_id);
  return it == leases_.end() ? nullptr : &it->second;
}

bool AgentRegistry::HasLease(const std::string& agent_name) const {
  for (const auto& [job, lease] : leases_) {
    if (lease.agent == agent_name) return true;
  }
  return false;
}

bool AgentRegistry::MachineBusy(const Agent& agent) const {
  for (const auto& [job, lease] : leases_) {
    if (lease.agent == agent.description.name) continue;
    for (const auto& [id, other] : agents_) {
      if (other.description.name == lease.agent && other.machine_id == agent.machine_id)
        return true;
    }
  }
  return false;
}

std::vector<Lease> AgentRegistry::TakeExpiredLeases(MonoTime now, Millis window) {
  std::vector<Lease> expired;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (now - it->second.renewed_at > window || now > it->second.hard_deadline) {
      expired.push_back(std::move(it->second));
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  return expired;
}

std::vector<Lease> AgentRegistry::TakeLeasesOf(const std::string& agent_name) {
  std::vector<Lease> taken;
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.agent == agent_name) {
      taken.push_back(std::move(it->second));
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
}

}  // namespace benchfleet
