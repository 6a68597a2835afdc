#include "coordinator/fleet/agent_sessions.h"

#include <cmath>
#include <set>

#include "common/cpu_list.h"
#include "common/log.h"
#include "coordinator/core/fingerprint.h"

namespace benchfleet {
namespace {

// Agents that left the registry, remembered for status.
constexpr size_t kDepartedShown = 20;
// Heartbeats to the fleet go out in this many slices per interval (SendHeartbeats).
constexpr int kHeartbeatSlices = 10;
// Unknown peers told to register one by one before the answers thin out to one in 100.
constexpr int64_t kUnknownPeersAnsweredInFull = 100;

}  // namespace

Agent* AgentSessions::Seen(const std::string& routing_id) {
  Agent* agent = ctx_.registry.FindByRoutingId(routing_id);
  if (agent == nullptr) {
    // After a coordinator restart, or after we declared the agent dead: it registers again.
    ++ctx_.counters.unknown_peers;
    // Rate-limited like malformed messages: a stranger may repeat this endlessly.
    if (ctx_.counters.unknown_peers <= kUnknownPeersAnsweredInFull ||
        ctx_.counters.unknown_peers % 100 == 0) {
      ctx_.Reply(Side::kAgents, routing_id, MakeError(NotFound("unknown agent; register first")));
    }
    return nullptr;
  }
  agent->last_seen = ctx_.Now();
  return agent;
}

std::vector<DepartedAgent> AgentSessions::Departed() const {
  return std::vector<DepartedAgent>(departed_.begin(), departed_.end());
}

void AgentSessions::RoundBegins() { ctx_.leases.BeginJournal(); }

void AgentSessions::RoundCommitted() {
  ctx_.leases.EndJournal();
  registered_in_round_.clear();
}

void AgentSessions::RoundFailed() {
  ctx_.leases.RollBackJournal();
  for (const std::string& routing_id : registered_in_round_) ctx_.registry.Remove(routing_id);
  registered_in_round_.clear();
}

void AgentSessions::Register(const std::string& routing_id, const Message& message) {
  auto request = RegisterRequest::FromJson(message.body);
  if (!request.ok()) return ctx_.Refuse(Side::kAgents, routing_id, request.status());
  const std::string& name = request->agent;
  if (Agent* other = ctx_.registry.FindByName(name); other && other->routing_id != routing_id) {
    if (request->instance.empty() || other->instance != request->instance) {
      ctx_.Reply(
          Side::kAgents, routing_id,
          MakeError(FailedPrecondition("agent name \"" + name + "\" is in use by a live agent")));
      return;
    }
    // The same agent process on a new connection (it took us for dead and reconnected):
    // it takes its session over; its leases stay.
    LOG_INFO("agent " << name << " reconnected");
    const std::string old_routing_id = other->routing_id;  // Remove ends `other`
    ctx_.registry.Remove(old_routing_id);
  }
  Agent agent;
  agent.routing_id = routing_id;
  agent.description = {name, request->tags, request->capabilities};
  agent.instance = request->instance;
  // Agents on one machine (same machine_id) run one job at a time unless
  // --share-machines; an agent that does not say is a machine of its own.
  const std::string machine_id = request->capabilities.host.machine_id.value_or("");
  agent.machine_id = machine_id.empty() ? name : machine_id;
  auto host_id = ctx_.store.hosts().UpsertHost(name, agent.machine_id, request->tags,
                                               request->capabilities.raw,
                                               FingerprintOf(request->capabilities));
  if (!host_id.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot store host " << name << ": " << host_id.status().message());
    ctx_.Reply(
        Side::kAgents, routing_id,
        MakeError(Unavailable("coordinator store unavailable: " + host_id.status().message())));
    return;
  }
  agent.host_id = *host_id;
  if (request->price) {
    if (Status priced = ctx_.store.hosts().RecordAgentPrice(*host_id, *request->price);
        !priced.ok()) {
      ++ctx_.counters.store_errors;  // the agent still registers; its price waits for the next time
      LOG_ERROR("cannot store the price of host " << name << ": " << priced.message());
    }
  }
  if (auto cpus = ParseCpuList(request->capabilities.cpus); cpus.ok()) {
    agent.job_cpus = static_cast<int64_t>(cpus->size());
  }
  agent.last_seen = ctx_.Now();
  bool known = ctx_.registry.FindByRoutingId(routing_id) != nullptr;
  ctx_.registry.Upsert(std::move(agent));
  dispatcher_.HoldSpooledJobs(name, request->spooled);
  // An agent that reconnected mid-job (it took a stalled coordinator for dead) names its
  // job: the lease lives on, as a heartbeat naming it would keep it.
  if (Agent* registered = ctx_.registry.FindByRoutingId(routing_id); registered && request->running)
    dispatcher_.RenewLease(*registered, *request->running);
  if (!known) {
    if (ctx_.round.open()) registered_in_round_.push_back(routing_id);
    LOG_INFO("agent " << name << " registered");
    // A fresh agent process asks for a calibration of its host; it runs as a job, so it
    // waits for other jobs on the same machine instead of disturbing them. Agents of
    // one machine share one calibration.
    if (request->calibrate) {
      if (Agent* registered = ctx_.registry.FindByRoutingId(routing_id)) {
        CalibrateMachineOf(*registered, "agent " + name + " started", /*only_if_stale=*/false);
      }
    }
  }
  ctx_.Reply(Side::kAgents, routing_id,
             ToMessage(RegisteredReply{name, ctx_.options.heartbeat_ms, ctx_.options.liveness}));
}

void AgentSessions::Heartbeat(Agent& agent, const Message& message) {
  auto heartbeat = benchfleet::Heartbeat::FromJson(message.body);
  if (!heartbeat.ok()) return ctx_.Refuse(Side::kAgents, agent.routing_id, heartbeat.status());
  if (heartbeat->running) dispatcher_.RenewLease(agent, *heartbeat->running);
}

void AgentSessions::AgentError(Agent& agent, const Message& message) {
  auto report = ErrorReport::FromJson(message.body);
  if (!report.ok()) return ctx_.Refuse(Side::kAgents, agent.routing_id, report.status());
  LOG_WARN("agent " << agent.description.name << " reports " << report->code << ": "
                    << report->message.substr(0, 500));
  // A refused offer (the agent was busy) names the job.
  if (report->job) dispatcher_.OfferRefused(agent, *report->job);
}

void AgentSessions::CalibrateMachineOf(const Agent& agent, const std::string& why,
                                       bool only_if_stale) {
  auto pending = ctx_.store.hosts().CalibrationPending(agent.machine_id);
  auto age = ctx_.store.hosts().CalibrationAge(agent.machine_id);
  if (!pending.ok() || !age.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot read the calibrations of machine " << agent.machine_id);
    return;
  }
  const double max_age_s = ctx_.options.calibration_max_age_h * 3600;
  if (*pending) return;  // one is on its way for this machine
  if (*age && **age < max_age_s) {
    if (!only_if_stale) {
      LOG_INFO(why << ": machine " << agent.machine_id << " was calibrated "
                   << static_cast<int64_t>(**age / 60) << " min ago; its calibration is shared");
    }
    return;
  }
  if (only_if_stale && !*age) return;  // never calibrated: only on request
  auto calibration =
      ctx_.store.jobs().CreateCalibration({agent.description.name}, kCalibrationTimeoutS);
  if (!calibration.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot queue the calibration of " << agent.description.name << ": "
                                                 << calibration.status().message());
    return;
  }
  LOG_INFO(why << ": calibration of machine " << agent.machine_id << " queued on "
               << agent.description.name);
  if (Status reloaded = dispatcher_.ReloadRequirements(); !reloaded.ok()) {
    LOG_ERROR("cannot read requirements: " << reloaded.message());
  }
}

void AgentSessions::RecalibrateStaleMachines() {
  if (ctx_.Now() < next_calibration_check_) return;
  next_calibration_check_ = ctx_.Now() + std::chrono::minutes(1);
  std::set<std::string> machines;
  for (Agent* agent : ctx_.registry.All()) {
    if (!machines.insert(agent->machine_id).second) continue;
    CalibrateMachineOf(
        *agent,
        "calibration older than " + std::to_string(ctx_.options.calibration_max_age_h) + " h",
        /*only_if_stale=*/true);
  }
}

void AgentSessions::Remove(const std::string& routing_id, const std::string& reason) {
  Agent* agent = ctx_.registry.FindByRoutingId(routing_id);
  if (agent == nullptr) return;
  const std::string name = agent->description.name;
  ctx_.registry.Remove(routing_id);
  departed_.push_back(DepartedAgent{name, UtcNowIso8601(), reason});
  while (departed_.size() > kDepartedShown) departed_.pop_front();
}

void AgentSessions::DropAgent(const std::string& routing_id, const std::string& reason, Gone how) {
  Agent* agent = ctx_.registry.FindByRoutingId(routing_id);
  if (agent == nullptr) return;
  const std::string name = agent->description.name;
  const std::string lost = "agent " + name + " " + reason;
  LOG_WARN(lost << "; taken for gone");
  Remove(routing_id, reason);
  const std::vector<Lease> ended = how == Gone::kSilent ? ctx_.leases.ReleaseAllOf(name, lost)
                                                        : ctx_.leases.ReleaseSharedOf(name, lost);
  for (const Lease& lease : ended) dispatcher_.LoseAttempt(lease, lost);
  if (how == Gone::kUnreachable && ctx_.leases.LeasedJobOf(name)) {
    LOG_INFO("the lease of agent " << name << "'s job " << *ctx_.leases.LeasedJobOf(name)
                                   << " waits a liveness window for it to reconnect");
  }
}

void AgentSessions::Leave(const std::string& routing_id, const Message& message) {
  auto leave = LeaveNotice::FromJson(message.body);
  if (!leave.ok()) return ctx_.Refuse(Side::kAgents, routing_id, leave.status());
  ctx_.Reply(Side::kAgents, routing_id, ToMessage(LeftReply{}));
  Agent* agent = ctx_.registry.FindByRoutingId(routing_id);
  if (agent == nullptr) return;
  const std::string name = agent->description.name;
  LOG_INFO("agent " << name << " left: " << leave->reason);
  Remove(routing_id, "left: " + leave->reason);
  for (const Lease& lease : ctx_.leases.ReleaseAllOf(name, "agent " + name + " left")) {
    if (leave->running && leave->running->job_id == lease.job_id &&
        leave->running->attempt == lease.attempt) {
      dispatcher_.LoseAttempt(lease, "agent " + name + " left while running it: " + leave->reason);
    } else {
      // An offer that crossed the leave, or a result it could not deliver before going:
      // nothing of it ran there that counts.
      dispatcher_.UndoHandOut(lease);
    }
  }
}

void AgentSessions::ExpireSilentAgentsAndLeases(MonoTime now) {
  for (const std::string& routing_id : ctx_.registry.SilentAgents(now, ctx_.LivenessWindow())) {
    DropAgent(routing_id,
              "went silent for " + std::to_string(ctx_.LivenessWindow().count()) + " ms",
              Gone::kSilent);
  }
  for (const Lease& lease : ctx_.leases.Expire(now, ctx_.LivenessWindow())) {
    dispatcher_.LoseAttempt(lease, "lease of agent " + lease.agent + " expired");
  }
}

void AgentSessions::CreditStall(Millis stalled) {
  LOG_WARN("the loop did not run for " << stalled.count()
                                       << " ms more than a pass takes; agents and leases get "
                                          "that time back");
  ctx_.registry.Credit(stalled);
  ctx_.leases.Credit(stalled);
}

void AgentSessions::SendHeartbeats() {
  MonoTime now = ctx_.Now();
  if (now < next_heartbeat_) return;
  // Each agent hears from us once per interval, but the fleet is walked a slice at a
  // time, not in one burst: a thousand heartbeats sent together queue ahead of every
  // offer sent after them, on our socket and on the agents' side (at 1,000 agents the
  // burst was most of the p99 of job committed -> received). A slice covers the time
  // since the last one, so a late slice catches up.
  const auto interval = Millis(std::max(1, ctx_.options.heartbeat_ms));
  next_heartbeat_ = now + std::max(Millis(1), interval / kHeartbeatSlices);
  const auto elapsed = std::min<MonoClock::duration>(now - last_heartbeat_slice_, interval);
  last_heartbeat_slice_ = now;
  const auto count = static_cast<size_t>(std::ceil(
      static_cast<double>(ctx_.registry.size()) * std::chrono::duration<double>(elapsed).count() /
      std::chrono::duration<double>(interval).count()));
  const std::vector<std::string> peers = ctx_.registry.RoutingIdsAfter(heartbeat_cursor_, count);
  if (peers.empty()) return;
  heartbeat_cursor_ = peers.back();
  // One message for every agent, encoded once.
  const Message heartbeat = ToMessage(benchfleet::Heartbeat{std::nullopt, /*from_agent=*/false});
  const std::string encoded = Encode(heartbeat);
  for (const std::string& peer : peers) {
    Status sent = ctx_.outlet.takes_encoded()
                      ? ctx_.outlet.SendEncoded(Side::kAgents, peer, heartbeat.type, encoded)
                      : ctx_.outlet.Send(Side::kAgents, peer, heartbeat);
    if (sent.code() == StatusCode::kNotFound) {
      DropAgent(peer, "is unreachable (" + sent.message() + ")", Gone::kUnreachable);
    }
  }
}

}  // namespace benchfleet
