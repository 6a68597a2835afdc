// What every component of the coordinator shares: its options, its clock, the store,
// the open round, the fleet (agents and leases) and the counters. Each component keeps
// its own state; this is only what they all read and write through.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/clock.h"
#include "common/limits.h"
#include "common/protocol.h"
#include "common/status_reply.h"
#include "coordinator/loop/lease_table.h"
#include "coordinator/loop/registry.h"
#include "coordinator/loop/round.h"
#include "coordinator/store/model_store.h"
#include "coordinator/store/store.h"

namespace benchfleet {

struct CoordinatorOptions {
  std::string db_path = "results.db";
  std::string agents_endpoint = "tcp://127.0.0.1:5556";
  std::string clients_endpoint = "tcp://127.0.0.1:5555";
  int heartbeat_ms = kHeartbeatIntervalMs;
  int liveness = kHeartbeatLiveness;
  // Hand-outs of one job before it fails for good (a job that kills its agent every
  // time must not go round the fleet forever). A hand-out that never reached the agent
  // (the send failed, the agent refused it) is not counted.
  int max_attempts = 3;
  // The processes a job of one worker process runs in when its sweep names neither
  // `processes` nor `precision` (schemas/sweep.md, Processes).
  int64_t default_processes = kDefaultProcesses;
  // Allow two agents on one machine to run jobs at the same time (their timings will
  // disturb each other); off by default.
  bool share_machines = false;
  // When set, a JSON file {"agents": ..., "clients": ..., "pid": ...} written once both
  // sockets are bound (with wildcard ports resolved), for scripts and tests; with
  // "metrics": "http://HOST:PORT/metrics" when metrics are served.
  std::string ready_file;
  // --metrics HOST:PORT: serve GET /metrics in Prometheus' text format there (port 0:
  // a free one); empty: no HTTP server (docs/metrics.md).
  std::string metrics_address;
  // CURVE: the coordinator's key pair (benchfleet keygen) and the allow-list of agent
  // and client public keys. Required when an endpoint is beyond loopback, unless
  // `insecure` is set explicitly.
  std::string curve_key_path;
  std::string allow_list_path;
  bool insecure = false;
  // Where users' model files are kept by their SHA-256 (coordinator/store/model_store.h);
  // empty: `models/` beside the store.
  std::string models_dir;
  // A machine's calibration is shared by its agents and taken again once it is older
  // than this (checked when an agent starts and every minute).
  double calibration_max_age_h = 24;
  // Wall-clock time in Unix seconds, what schedules fire by (docs/schedules.md); unset:
  // the system clock. Tests set it to move time on.
  std::function<int64_t()> wall_clock_s;
  // The monotonic time leases, liveness, heartbeats and back-offs run on; unset: the
  // system's. Tests driving the coordinator in process (StartInProcess, Tick) pass a
  // ManualMonotonicClock and move it on; Run() needs a clock that moves by itself.
  // Not owned; must outlive the coordinator.
  const MonotonicClock* clock = nullptr;
};

// The shared parts, by reference; owned by the Coordinator.
struct CoordinatorContext {
  const CoordinatorOptions& options;
  const MonotonicClock& clock;
  Store& store;
  Round& round;
  Outlet& outlet;  // for what never waits for a round (heartbeats); else round.Send
  AgentRegistry& registry;
  LeaseTable& leases;
  CoordinatorCounters& counters;
  ModelStore& models;

  MonoTime Now() const { return clock.Now(); }
  // Silent this long, an agent is taken for gone and a lease for lost.
  Millis LivenessWindow() const { return Millis(int64_t{options.heartbeat_ms} * options.liveness); }
  // Sends now, or at the round's end.
  void Reply(Side side, const std::string& routing_id, Message message) const {
    (void)round.Send(side, routing_id, std::move(message));
  }
  // Refuses a malformed message: counted, logged sparingly, answered with an error.
  void Refuse(Side side, const std::string& routing_id, const Status& status,
              const json& request_id = nullptr) const;
};

}  // namespace benchfleet
