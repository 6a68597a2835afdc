// The coordinator daemon: accepts sweeps from clients, stores them, hands jobs to idle
// matching agents under leases, stores results, answers status and queries.
// One loop polls both sockets and owns the store; users' reads (query, results) run on
// the query thread (coordinator/store/query_runner.h), so nothing slow delays a heartbeat.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <zmq.hpp>

#include "common/limits.h"
#include "common/messages.h"
#include "common/protocol.h"
#include "common/roles.h"
#include "common/transport.h"
#include "common/worker_result.h"
#include "coordinator/api/client_api.h"
#include "coordinator/api/metrics_publisher.h"
#include "coordinator/fleet/agent_sessions.h"
#include "coordinator/fleet/dispatcher.h"
#include "coordinator/intake/schedule_runner.h"
#include "coordinator/intake/sweep_intake.h"
#include "coordinator/loop/context.h"
#include "coordinator/loop/registry.h"
#include "coordinator/loop/round.h"
#include "coordinator/results/regression_judge.h"
#include "coordinator/results/result_acceptor.h"
#include "coordinator/security/zap.h"
#include "coordinator/store/pruner.h"
#include "coordinator/store/query_runner.h"
#include "coordinator/store/store.h"

namespace benchfleet {

// The loop: it owns the components, calls them, and routes what one tells it for another
// (LoopEvents, coordinator/loop/events.h).
class Coordinator : private RoundParticipant, private LoopEvents {
 public:
  explicit Coordinator(CoordinatorOptions options);
  ~Coordinator();

  // Opens the store, binds the sockets, recovers leases of running jobs.
  Status Start();
  // The same without sockets: every outgoing message goes to `outbox`. Drive it with
  // HandleAgent/HandleClient, Tick and DeliverReadReplies.
  Status StartInProcess(Outbox outbox);
  // Checks the CURVE options: which key pair to serve with (null: plain TCP).
  StatusOr<std::unique_ptr<CurveKeyPair>> SecurityPolicy() const;
  // Serves until *stop becomes true (set it from a signal handler). When *reload is
  // true (SIGHUP) the allow-list is re-read and the flag cleared.
  Status Run(const std::atomic<bool>* stop, std::atomic<bool>* reload = nullptr);

  // One message from a peer, as [routing id, body]. Never throws. A client's `role` is
  // its key's (common/roles.h); in process, as without CURVE, every client is admin.
  void HandleAgent(const Frames& frames);
  void HandleClient(const Frames& frames, Role role = Role::kAdmin);
  // Expires silent agents and leases, dispatches, heartbeats: the loop's timer work.
  void Tick();
  // Sends the replies of finished reads (query, results); waits up to `wait` for the
  // first. Returns how many were sent.
  int DeliverReadReplies(Millis wait);
  // Group commit (coordinator/loop/round.h): Run() makes each loop round one of these.
  void BeginRound();
  void EndRound();
  const CoordinatorCounters& counters() const { return counters_; }

 private:
  // The store, the components over it and the query thread (Start, StartInProcess).
  Status OpenStoreAndComponents();
  void HandleAgentMessage(const std::string& routing_id, const Message& message);
  void HandleClientMessage(const std::string& routing_id, const Message& message, Role role);
  void Refuse(Side side, const std::string& routing_id, const Status& status,
              const json& request_id = nullptr);
  // Sends now, or at the end of the round when one is open.
  // By value: a reply held for the round's commit is moved in, not copied (a status
  // reply to a thousand-agent fleet is a large tree).
  Status Send(Side side, const std::string& routing_id, Message message);

  MonoTime Now() const { return clock_.Now(); }
  Millis LivenessWindow() const {
    return Millis(int64_t{options_.heartbeat_ms} * options_.liveness);
  }

  CoordinatorOptions options_;
  const MonotonicClock& clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ModelStore> models_;  // users' model files, by SHA-256
  // Made once the store is open.
  std::unique_ptr<RegressionJudge> judge_;
  std::unique_ptr<ScheduleRunner> schedules_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<AgentSessions> sessions_;
  std::unique_ptr<SweepIntake> intake_;
  std::unique_ptr<ResultAcceptor> results_;
  std::unique_ptr<ClientApi> clients_;
  SweepProgress progress_{clock_};
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> agents_socket_;
  std::unique_ptr<zmq::socket_t> clients_socket_;
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<QueryRunner> reads_;
  AgentRegistry registry_;
  LeaseTable leases_{registry_};  // after the registry it tells of leases ending
  CoordinatorCounters counters_;
  Outlet outlet_{counters_.send_failures};   // the sockets, or the outbox in process
  std::unique_ptr<Round> round_;             // made once the store is open
  std::unique_ptr<CoordinatorContext> ctx_;  // what the components share
  // LoopEvents: routed to the component that acts on each.
  void AgentUnreachable(const std::string& routing_id, const std::string& reason) override;
  void GangStopped(int64_t job_id) override;
  std::optional<Message> SubmitScheduled(const std::string& routing_id, const json& request_id,
                                         const SubmitRequest& request,
                                         const ScheduledFiring& firing) override;
  std::optional<Message> PostRead(ReadRequest request) override;
  // A round's marks and undo (RoundParticipant).
  void RoundBegins() override;
  void RoundFailed() override;
  CoordinatorCounters counters_at_round_start_;
  MonoTime last_expiry_ = Now();
  // Every agent message sent before this has been handled (the inbound queue was
  // empty).
  MonoTime observed_until_ = Now();
  // When the loop last polled its sockets (Run): a gap beyond a pass is a stall.
  MonoTime last_polled_at_ = Now();
  // --metrics: made by Start once the components exist; null without the flag.
  std::unique_ptr<MetricsPublisher> metrics_;
};

}  // namespace benchfleet
