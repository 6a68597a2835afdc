// The coordinator daemon: accepts sweeps from clients, stores them, hands jobs to idle
// matching agents under leases, stores results, answers status and queries.
// Single-threaded: one loop polls both sockets; the store is touched only from it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "common/limits.h"
#include "common/protocol.h"
#include "common/transport.h"
#include "coordinator/registry.h"
#include "coordinator/store.h"
#include "coordinator/zap.h"

namespace benchfleet {

struct CoordinatorOptions {
  std::string db_path = "results.db";
  std::string agents_endpoint = "tcp://127.0.0.1:5556";
  std::string clients_endpoint = "tcp://127.0.0.1:5555";
  int heartbeat_ms = kHeartbeatIntervalMs;
  int liveness = kHeartbeatLiveness;
  // Hand-outs of one job before it fails for good (a job that kills its agent every
  // time must not go round the fleet forever).
  int max_attempts = 3;
  // Allow two agents on one machine to run jobs at the same time (their timings will
  // disturb each other); off by default.
  bool share_machines = false;
  // When set, a JSON file {"agents": ..., "clients": ..., "pid": ...} written once both
  // sockets are bound (with wildcard ports resolved), for scripts and tests.
  std::string ready_file;
  // CURVE: the coordinator's key pair (benchfleet keygen) and the allow-list of agent
  // and client public keys. Required when an endpoint is beyond loopback, unless
  // `insecure` is set explicitly.
  std::string curve_key_path;
  std::string allow_list_path;
  bool insecure = false;
};

struct CoordinatorCounters {
  int64_t malformed_messages = 0;
  int64_t unknown_peers = 0;
  int64_t results_stored = 0;
  int64_t duplicate_results = 0;
  int64_t stale_results = 0;
  int64_t failed_jobs = 0;
  int64_t requeued_jobs = 0;
  int64_t send_failures = 0;
  int64_t store_errors = 0;
  json ToJson() const;
};

class Coordinator {
 public:
  explicit Coordinator(CoordinatorOptions options);
  ~Coordinator();

  // Opens the store, binds the sockets, recovers leases of running jobs.
  Status Start();
  // Checks the CURVE options: which key pair to serve with (null: plain TCP).
  StatusOr<std::unique_ptr<CurveKeyPair>> SecurityPolicy() const;
  // Serves until *stop becomes true (set it from a signal handler). When *reload is
  // true (SIGHUP) the allow-list is re-read and the flag cleared.
  Status Run(const std::atomic<bool>* stop, std::atomic<bool>* reload = nullptr);

 private:
  void HandleClient(const Frames& frames);
  void HandleAgent(const Frames& frames);
  Message Submit(const json& request);
  Message StatusReply(const json& request);
  Message Cancel(const json& request);
  Message ResultsReply(const json& request);
  Message QueryReply(const json& request);
  Message Calibrate(const json& request);
  void Register(const std::string& routing_id, const json& body);
  void Heartbeat(Agent& agent, const json& body);
  void HoldSpooledJobs(const std::string& agent, const json& spooled);
  void AcceptResult(Agent& agent, const json& body);
  void AgentError(Agent& agent, const json& body);
  void ReplyToAgent(const std::string& routing_id, const Message& message);

  void RecoverLeases();
  void ExpireSilentAgentsAndLeases();
  void LoseAttempt(const Lease& lease, const std::string& reason);
  void Dispatch();
  bool OfferNextJob(Agent& agent);
  void SendHeartbeats();
  Millis LivenessWindow() const {
    return Millis(int64_t{options_.heartbeat_ms} * options_.liveness);
  }

  CoordinatorOptions options_;
  std::unique_ptr<Store> store_;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> agents_socket_;
  std::unique_ptr<zmq::socket_t> clients_socket_;
  std::unique_ptr<ZapHandler> zap_;
  AgentRegistry registry_;
  CoordinatorCounters counters_;
  MonoTime next_heartbeat_;
  MonoTime last_expiry_ = MonoNow();
};

}  // namespace benchfleet
