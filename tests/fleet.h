// Test support: a real fleet on loopback — one benchfleet-coordinator and any number of
// benchfleet-agent processes with their own state directories — plus a client.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/client.h"
#include "tests/process.h"

namespace benchfleet::testing {

struct FleetOptions {
  int heartbeat_ms = 500;
  int liveness = 3;
  // Agents calibrate their host at start (a job of ~10 s each); off unless a test needs it.
  bool calibrate_agents = false;
  // The coordinator's --processes: 1, so that a test's jobs each run once, unless it is
  // about repeats in processes; 0: the coordinator's default (ProcessesFleetTest).
  int processes = 1;
  std::vector<std::string> coordinator_flags;
  std::string db_path;  // default: results.db in the fleet's directory
  // The agents' --worker: benchfleet-worker by default; kResultWorkerBin where a test is
  // about the daemons, not about what LibTorch measures.
  std::string worker;
};

class Fleet {
 public:
  explicit Fleet(FleetOptions options = {});
  ~Fleet();

  // Starts the coordinator on wildcard loopback ports; false if it was not serving in time.
  bool StartCoordinator();
  // Starts (or restarts) agent `name`; `endpoint` overrides the coordinator's (a proxy).
  bool StartAgent(const std::string& name, const std::vector<std::string>& extra_flags = {},
                  const std::string& endpoint = "");
  // The spooled results of agent `name` waiting for an ack.
  size_t SpooledResults(const std::string& name) const;
  // The agent busy with `job_id` according to the coordinator, or "".
  std::string AgentRunning(int64_t job_id);
  ChildProcess& agent(const std::string& name) { return *agents_.at(name); }
  ChildProcess& coordinator() { return coordinator_; }

  CoordinatorClient& client();
  // Status reply body, or null if the coordinator did not answer.
  nlohmann::json Status();
  bool WaitForAgents(size_t count, std::chrono::milliseconds timeout);
  // Waits until the sweep is no longer running; returns its status object (or null).
  nlohmann::json WaitForSweep(int64_t sweep_id, std::chrono::milliseconds timeout);
  // Submits a sweep; returns the sweep id or -1 (with the error in *error).
  int64_t Submit(const nlohmann::json& sweep, std::string* error = nullptr);

  const std::string& db_path() const { return db_path_; }
  const std::string& agents_endpoint() const { return agents_endpoint_; }
  const std::string& clients_endpoint() const { return clients_endpoint_; }
  std::string dir(const std::string& name) const { return dir_ / name; }
  // The logs of every process, for a failure message.
  std::string Logs() const;

 private:
  FleetOptions options_;
  TempDir dir_;
  std::string db_path_;
  std::string agents_endpoint_;
  std::string clients_endpoint_;
  ChildProcess coordinator_;
  std::map<std::string, std::unique_ptr<ChildProcess>> agents_;
  std::unique_ptr<CoordinatorClient> client_;
};

// Opens `path` read-only and returns the first column of the first row of `sql`
// as JSON (null when no row).
nlohmann::json QueryValue(const std::string& path, const std::string& sql);
// All rows of `sql` as an array of objects.
nlohmann::json QueryRows(const std::string& path, const std::string& sql);

extern const char* kCoordinatorBin;
extern const char* kAgentBin;
extern const char* kWorkerBin;
// The result worker (tests/result_worker.cc): a job's result after the job's own time, no
// LibTorch; for the tests of dispatch, leases, spools and faults.
extern const char* kResultWorkerBin;
extern const char* kCliBin;
// A worker built against another LibTorch (deploy/build-worker.sh legacy: Debian's 1.13),
// for an agent of two workers; "" when the build was not given one
// (-DBENCHFLEET_SECOND_WORKER=PATH, which deploy/test.sh gives).
extern const char* kSecondWorkerBin;
// The python of the torch the worker links ("" when it was built without one).
extern const char* kTorchPython;
// Where the agents of every test keep compiled packages (one cache: each is made once).
extern const char* kTestPackageCache;

}  // namespace benchfleet::testing
