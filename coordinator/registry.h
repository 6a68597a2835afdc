// What the coordinator knows of live agents and of the jobs handed out to them.
// In memory only: after a restart agents register again and running jobs get fresh
// leases from the store (Coordinator::RecoverLeases).
#pragma once

#include <map>
#include <optional>
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
  // Whether the agent can run each requirement (by requirement_id), computed once.
  std::map<int64_t, bool> can_run;
};

// A job handed out under (job_id, attempt). It stays valid while the agent keeps naming
// the job in its heartbeats; it ends with the job's result, or expires.
struct Lease {
  int64_t job_id = 0;
  int attempt = 0;
  std::string agent;       // agent name
  MonoTime renewed_at;     // dispatch, or the last heartbeat naming this job
  MonoTime hard_deadline;  // the job's timeout plus the liveness window
};

class AgentRegistry {
 public:
  Agent* FindByRoutingId(const std::string& routing_id);
  Agent* FindByName(const std::string& name);
  // Adds or replaces the agent with this routing id.
  Agent& Upsert(Agent agent);
  void Remove(const std::string& routing_id);
  // Routing ids of the agents not heard from within `window`.
  std::vector<std::string> SilentAgents(MonoTime now, Millis window) const;
  std::vector<Agent*> All();

  // Leases, keyed by job id.
  void AddLease(Lease lease) { leases_[lease.job_id] = std::move(lease); }
  Lease* FindLease(int64_t job_id);
  void RemoveLease(int64_t job_id) { leases_.erase(job_id); }
  bool HasLease(const std::string& agent_name) const;
  // True when an agent other than `agent` with the same machine id holds a lease:
  // jobs on one machine run one at a time so they do not disturb each other's timing.
  bool MachineBusy(const Agent& agent) const;
  // Leases not renewed within `window`, or past their hard deadline; removed and returned.
  std::vector<Lease> TakeExpiredLeases(MonoTime now, Millis window);
  // Leases held by `agent_name`, removed and returned.
  std::vector<Lease> TakeLeasesOf(const std::string& agent_name);
  const std::map<int64_t, Lease>& leases() const { return leases_; }

 private:
  std::map<std::string, Agent> agents_;  // by routing id
  std::map<int64_t, Lease> leases_;      // by job id
};

}  // namespace benchfleet
