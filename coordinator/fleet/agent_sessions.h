// AgentSessions: the fleet as the coordinator knows it. Agents register (their host
// stored, its calibration queued when asked), heartbeat both ways, and are taken for
// gone when silent for a liveness window or unreachable; their leases' attempts are
// then lost (the dispatcher's). The coordinator's own heartbeats go out a slice of the
// fleet at a time. A fresh agent asks for its machine's calibration; a stale one is
// taken again.
//
// It joins every round: the registry's journal undoes a failed round's changes to
// agents and leases, and agents registered in it are forgotten (their host rows were
// not kept: they register again when told they are unknown).
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "coordinator/fleet/dispatcher.h"
#include "coordinator/loop/context.h"

namespace benchfleet {

class AgentSessions : public RoundParticipant {
 public:
  AgentSessions(const CoordinatorContext& context, Dispatcher& dispatcher)
      : ctx_(context),
        dispatcher_(dispatcher),
        next_heartbeat_(context.Now()),
        last_heartbeat_slice_(context.Now()),
        next_calibration_check_(context.Now()) {}

  void Register(const std::string& routing_id, const Message& message);
  // The registered agent behind `routing_id`, marked seen now; null for a stranger,
  // who is told to register first (rate-limited).
  Agent* Seen(const std::string& routing_id);
  void Heartbeat(Agent& agent, const Message& message);
  // An agent's `error`: logged; a refused offer goes back to the dispatcher.
  void AgentError(Agent& agent, const Message& message);
  // How an agent was found gone.
  enum class Gone {
    kSilent,       // nothing from it for a liveness window: every lease it holds is lost
    kUnreachable,  // its connection closed (a send to it failed): it may be reconnecting,
                   // a stalled coordinator having made it take us for dead. The leases it
                   // holds alone stay, its machine busy, until they expire unrenewed or it
                   // registers again naming its job; a gang's that other agents would go
                   // on renewing is lost at once
  };
  // Removes an agent that is gone and loses its leases' attempts (as `how` says).
  void DropAgent(const std::string& routing_id, const std::string& reason, Gone how);
  // An agent's `leave`: removed at once; the attempt of the job it says it stopped is
  // lost, every other hand-out to it is taken back without costing an attempt. Answered
  // `left`, also when the agent was gone already.
  void Leave(const std::string& routing_id, const Message& message);
  // Drops agents silent, and leases unrenewed, for a liveness window before `now`.
  void ExpireSilentAgentsAndLeases(MonoTime now);
  // The loop did not run for `stalled` (a store stalled on its disk, the process stopped):
  // that time counts against no agent and no lease (docs/reliability.md, Liveness).
  void CreditStall(Millis stalled);
  // To every agent, once per heartbeat interval, a slice at a time. An agent that cannot
  // be reached is dropped.
  void SendHeartbeats();
  // Once a minute: machines whose calibration is older than --calibration-max-age.
  void RecalibrateStaleMachines();
  // Agents that left lately (`status_reply.departed`), oldest first.
  std::vector<DepartedAgent> Departed() const;

  void RoundBegins() override;
  void RoundCommitted() override;
  void RoundFailed() override;

 private:
  // Queues a calibration for `agent` unless its machine has a fresh one or one pending;
  // `why` is logged.
  void CalibrateMachineOf(const Agent& agent, const std::string& why, bool only_if_stale);
  // Takes the agent out of the registry and lists it as departed for `reason`; its leases
  // are the caller's to end (or keep). Nothing when it is not registered.
  void Remove(const std::string& routing_id, const std::string& reason);

  const CoordinatorContext& ctx_;
  Dispatcher& dispatcher_;
  std::vector<std::string> registered_in_round_;  // routing ids of agents new this round
  std::deque<DepartedAgent> departed_;            // newest last
  MonoTime next_heartbeat_;                       // the next slice of the fleet's heartbeats
  MonoTime last_heartbeat_slice_;
  std::string heartbeat_cursor_;  // the routing id the last slice ended with
  MonoTime next_calibration_check_;
};

}  // namespace benchfleet
