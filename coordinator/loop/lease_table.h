// The leases of the jobs handed out, and the one place that grants, renews, releases
// and expires them. The agent registry stays an index of agents: a lease that ends
// tells it which agents may take an offer again (AgentRegistry::MachineFreed), and a
// lease granted tells it which may not (AgentRegistry::Leased).
// In memory only: after a restart agents register again and running jobs get fresh
// leases from the store (Dispatcher::RecoverLeases).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "coordinator/loop/registry.h"

namespace benchfleet {

// A job handed out under (job_id, attempt). It stays valid while the agent keeps naming
// the job in its heartbeats; it ends with the job's result, or expires.
struct Lease {
  int64_t job_id = 0;
  int attempt = 0;
  std::string agent;  // agent name (rank 0's, for a gang spread over agents)
  // A gang spread over agents: the agents of ranks 1.. in order. Each holds the lease
  // as rank 0's does (busy, renewing it, losing it when silent).
  std::vector<std::string> ranks;
  // The machine of `agent` when granted: a lease whose agent left the registry (its
  // connection closed: it may be reconnecting) still keeps that machine busy.
  std::string machine_id;
  MonoTime renewed_at;     // dispatch, or the last heartbeat naming this job
  MonoTime hard_deadline;  // the job's timeout plus the liveness window

  // Whether `agent_name` holds this lease, for `attempt`: rank 0's agent or one of the
  // other ranks' (only what a holder says about the job counts).
  bool HeldBy(const std::string& agent_name, int attempt_number) const {
    return attempt == attempt_number &&
           (agent == agent_name ||
            std::find(ranks.begin(), ranks.end(), agent_name) != ranks.end());
  }
  // Every agent holding it: its agent, then its ranks' (a spread gang).
  std::vector<std::string> Holders() const;
};

class LeaseTable {
 public:
  explicit LeaseTable(AgentRegistry& agents) : agents_(agents) {}
  LeaseTable(const LeaseTable&) = delete;
  LeaseTable& operator=(const LeaseTable&) = delete;

  // A lease for (job_id, attempt) held by `agent` (and `ranks`, a gang spread over
  // agents), from `now`. Its hard deadline is the one formula for every lease: `allowed`
  // (the job's timeout; none for a result already on its way) plus the liveness window.
  // A lease of the same job (an earlier attempt) is replaced. Returns a copy: a lease in
  // the table may end (be released) before its holder's caller is done with it.
  Lease Grant(int64_t job_id, int attempt, std::string agent, std::vector<std::string> ranks,
              MonoTime now, Millis allowed, Millis window);
  const Lease* Find(int64_t job_id) const;
  // A heartbeat of a holder naming the job: the lease lives on. False if `agent` does
  // not hold it for `attempt` (only what a holder says about the job counts).
  bool Renew(int64_t job_id, const std::string& agent, int attempt, MonoTime now);
  // The offer left only now (a long round): the lease runs from `now`, its deadline
  // moved on by as much.
  void Restart(int64_t job_id, MonoTime now);
  // Ends the lease of `job_id` (its result came, it was taken back or lost), if any, and
  // returns it. `reason` is logged at debug level: what ended it.
  std::optional<Lease> Release(int64_t job_id, std::string_view reason);
  // The coordinator's loop did not run for `stalled` (Coordinator::Run): every lease's
  // renewal and deadline move on by as much, as if its holder had been heard meanwhile.
  void Credit(Millis stalled);
  // Ends and returns the leases not renewed within `window` before `now`, or past their
  // hard deadline.
  std::vector<Lease> Expire(MonoTime now, Millis window);
  // Ends and returns every lease `agent_name` holds (the agent is gone).
  std::vector<Lease> ReleaseAllOf(const std::string& agent_name, std::string_view reason);
  // Ends and returns the leases `agent_name` holds with other agents (a gang spread over
  // agents, whose other ranks renew it: it would never expire). Its own stay, to expire
  // unless it names them again within the liveness window.
  std::vector<Lease> ReleaseSharedOf(const std::string& agent_name, std::string_view reason);

  // The job `agent_name` holds a lease for, if any (the newest one).
  std::optional<int64_t> LeasedJobOf(const std::string& agent_name) const;
  // True when an agent other than `agent` on its machine holds a lease: jobs on one
  // machine run one at a time so they do not disturb each other's timing.
  bool MachineBusy(const Agent& agent) const;
  const std::map<int64_t, Lease>& all() const { return leases_; }
  size_t size() const { return leases_.size(); }

  // Changes between BeginJournal and EndJournal are recorded, so that a round of the
  // loop whose commit failed puts the leases back as the store has them (RollBackJournal
  // undoes each change, newest first). Renewals are not recorded: a renewal only keeps a
  // lease from expiring early.
  void BeginJournal();
  void EndJournal();
  void RollBackJournal();

 private:
  void Put(Lease lease);
  void Erase(std::map<int64_t, Lease>::iterator it);

  AgentRegistry& agents_;
  std::map<int64_t, Lease> leases_;                             // by job id
  std::map<std::string, std::set<int64_t>> leases_by_agent_;    // agent name -> job ids
  std::map<std::string, std::set<int64_t>> leases_by_machine_;  // Lease::machine_id -> job ids
  struct Change {
    bool added;  // else removed
    Lease lease;
  };
  bool journaling_ = false;
  std::vector<Change> journal_;
};

}  // namespace benchfleet
