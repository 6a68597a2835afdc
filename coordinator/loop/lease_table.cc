#include "coordinator/loop/lease_table.h"

#include "common/log.h"

namespace benchfleet {

std::vector<std::string> Lease::Holders() const {
  std::vector<std::string> holders = {agent};
  holders.insert(holders.end(), ranks.begin(), ranks.end());
  return holders;
}

Lease LeaseTable::Grant(int64_t job_id, int attempt, std::string agent,
                        std::vector<std::string> ranks, MonoTime now, Millis allowed,
                        Millis window) {
  Lease lease;
  lease.job_id = job_id;
  lease.attempt = attempt;
  lease.agent = std::move(agent);
  lease.ranks = std::move(ranks);
  lease.renewed_at = now;
  lease.hard_deadline = now + allowed + window;
  Put(std::move(lease));
  return leases_.at(job_id);
}

const Lease* LeaseTable::Find(int64_t job_id) const {
  auto it = leases_.find(job_id);
  return it == leases_.end() ? nullptr : &it->second;
}

bool LeaseTable::Renew(int64_t job_id, const std::string& agent, int attempt, MonoTime now) {
  auto it = leases_.find(job_id);
  if (it == leases_.end() || !it->second.HeldBy(agent, attempt)) return false;
  it->second.renewed_at = now;
  return true;
}

void LeaseTable::Restart(int64_t job_id, MonoTime now) {
  auto it = leases_.find(job_id);
  if (it == leases_.end()) return;
  it->second.hard_deadline += now - it->second.renewed_at;
  it->second.renewed_at = now;
}

std::optional<Lease> LeaseTable::Release(int64_t job_id, std::string_view reason) {
  auto it = leases_.find(job_id);
  if (it == leases_.end()) return std::nullopt;
  Lease released = it->second;
  LOG_DEBUG("lease of job " << job_id << " attempt " << released.attempt << " on " << released.agent
                            << " ends: " << reason);
  Erase(it);
  return released;
}

void LeaseTable::Credit(Millis stalled) {
  for (auto& [job_id, lease] : leases_) {
    lease.renewed_at += stalled;
    lease.hard_deadline += stalled;
  }
}

std::vector<Lease> LeaseTable::Expire(MonoTime now, Millis window) {
  std::vector<int64_t> expired;
  for (const auto& [job_id, lease] : leases_) {
    if (now - lease.renewed_at > window || now > lease.hard_deadline) expired.push_back(job_id);
  }
  std::vector<Lease> ended;
  for (int64_t job_id : expired) {
    const bool silent = now - leases_.at(job_id).renewed_at > window;
    ended.push_back(*Release(job_id, silent ? "not renewed" : "past its deadline"));
  }
  return ended;
}

std::vector<Lease> LeaseTable::ReleaseAllOf(const std::string& agent_name,
                                            std::string_view reason) {
  std::vector<Lease> ended;
  auto it = leases_by_agent_.find(agent_name);
  if (it == leases_by_agent_.end()) return ended;
  const std::set<int64_t> held = it->second;  // Release changes the index
  for (int64_t job_id : held) ended.push_back(*Release(job_id, reason));
  return ended;
}

std::vector<Lease> LeaseTable::ReleaseSharedOf(const std::string& agent_name,
                                               std::string_view reason) {
  std::vector<Lease> ended;
  auto it = leases_by_agent_.find(agent_name);
  if (it == leases_by_agent_.end()) return ended;
  const std::set<int64_t> held = it->second;  // Release changes the index
  for (int64_t job_id : held) {
    if (!leases_.at(job_id).ranks.empty()) ended.push_back(*Release(job_id, reason));
  }
  return ended;
}

std::optional<int64_t> LeaseTable::LeasedJobOf(const std::string& agent_name) const {
  auto it = leases_by_agent_.find(agent_name);
  if (it == leases_by_agent_.end() || it->second.empty()) return std::nullopt;
  return *it->second.rbegin();
}

bool LeaseTable::MachineBusy(const Agent& agent) const {
  for (const std::string& peer : agents_.MachineAgents(agent)) {
    if (peer != agent.description.name && LeasedJobOf(peer).has_value()) return true;
  }
  // A lease of an agent that left the registry, waiting for it to reconnect.
  if (auto machine = leases_by_machine_.find(agent.machine_id);
      machine != leases_by_machine_.end()) {
    for (int64_t job_id : machine->second) {
      const std::string& holder = leases_.at(job_id).agent;
      if (holder != agent.description.name && agents_.FindByName(holder) == nullptr) return true;
    }
  }
  return false;
}

void LeaseTable::BeginJournal() {
  journal_.clear();
  journaling_ = true;
}

void LeaseTable::EndJournal() {
  journal_.clear();
  journaling_ = false;
}

void LeaseTable::RollBackJournal() {
  journaling_ = false;
  for (auto change = journal_.rbegin(); change != journal_.rend(); ++change) {
    if (change->added) {
      if (auto it = leases_.find(change->lease.job_id); it != leases_.end()) Erase(it);
    } else {
      Put(change->lease);
    }
  }
  journal_.clear();
}

void LeaseTable::Put(Lease lease) {
  if (auto old = leases_.find(lease.job_id); old != leases_.end()) Erase(old);
  if (journaling_) journal_.push_back({true, lease});
  if (lease.machine_id.empty()) {
    if (const Agent* holder = agents_.FindByName(lease.agent))
      lease.machine_id = holder->machine_id;
  }
  if (!lease.machine_id.empty()) leases_by_machine_[lease.machine_id].insert(lease.job_id);
  const std::vector<std::string> holders = lease.Holders();
  for (const std::string& holder : holders) leases_by_agent_[holder].insert(lease.job_id);
  agents_.Leased(holders);
  leases_.emplace(lease.job_id, std::move(lease));
}

void LeaseTable::Erase(std::map<int64_t, Lease>::iterator it) {
  if (journaling_) journal_.push_back({false, it->second});
  for (const std::string& holder : it->second.Holders()) {
    auto held = leases_by_agent_.find(holder);
    if (held == leases_by_agent_.end()) continue;
    held->second.erase(it->first);
    if (held->second.empty()) leases_by_agent_.erase(held);
    agents_.MachineFreed(holder);
  }
  if (auto machine = leases_by_machine_.find(it->second.machine_id);
      machine != leases_by_machine_.end()) {
    machine->second.erase(it->first);
    if (machine->second.empty()) leases_by_machine_.erase(machine);
    agents_.MachineIdFreed(it->second.machine_id);  // its agent may have left the registry
  }
  leases_.erase(it);
}

}  // namespace benchfleet
