// A healthy agent keeps its job's lease on a host it does not have to itself
// (docs/reliability.md, Leases): its worker holds every CPU, as many busy processes
// compete for them, a writer keeps the disk busy with fsyncs, and the coordinator is
// stopped for longer than the liveness window, as a store stalled on its disk stops it.
// The agent takes the silent coordinator for dead and reconnects in the middle of the
// job; it registers again naming its job, and the job still ends on its first attempt.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/fleet.h"
#include "tests/process.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kHeartbeatMs = 500;
constexpr int kLiveness = 3;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Busy processes, one per CPU and as many again, and a writer that syncs 64 MiB at a time
// into `dir`; all killed with the object.
class HostLoad {
 public:
  explicit HostLoad(const std::string& dir) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < 2 * cpus; ++i) Start({"/bin/sh", "-c", "while :; do :; done"});
    Start({"/bin/sh", "-c",
           "while :; do dd if=/dev/zero of='" + dir +
               "/load' bs=1M count=64 conv=fsync status=none; done"});
  }
  // Each ChildProcess kills its process when it goes.

 private:
  void Start(const std::vector<std::string>& argv) {
    auto process = std::make_unique<ChildProcess>();
    if (process->Start(argv, "/dev/null")) processes_.push_back(std::move(process));
  }
  std::vector<std::unique_ptr<ChildProcess>> processes_;
};

TEST(LeaseUnderLoadTest, AJobOutlivesABusyHostAndAStalledCoordinatorOnItsFirstAttempt) {
  FleetOptions options;
  options.heartbeat_ms = kHeartbeatMs;
  options.liveness = kLiveness;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  ASSERT_TRUE(fleet.StartAgent("agent1")) << fleet.Logs();
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  // One job whose worker holds every CPU for some 8 s.
  const json sweep = {
      {"name", "long"},
      {"placement", "any"},
      {"matrix", {{"model", "mlp"}, {"batch_size", 64}, {"threads", cpus}}},
      {"models", {{"mlp", {{"layers", {256, 256, 10}}}}}},
      {"timing", {{"warmup_s", 0.1}, {"min_time_s", 8}, {"max_time_s", 9}, {"target_ci", 0.001}}}};
  HostLoad load(fleet.dir(""));
  const int64_t sweep_id = fleet.Submit(sweep);
  ASSERT_GT(sweep_id, 0);
  int64_t job = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        const json running =
            QueryValue(fleet.db_path(),
                       "SELECT max(job_id) FROM jobs WHERE state = 'running' AND sweep_id = " +
                           std::to_string(sweep_id));
        job = running.is_number() ? running.get<int64_t>() : 0;
        return job > 0 && !fleet.AgentRunning(job).empty();
      },
      60s))
      << fleet.Logs();
  // The coordinator stops until the agent has taken it for dead (a liveness window).
  const std::string agent_log = fleet.agent("agent1").log_path();
  fleet.coordinator().Signal(SIGSTOP);
  const bool reconnecting = WaitFor(
      [&] { return ReadAll(agent_log).find("coordinator silent") != std::string::npos; }, 30s);
  fleet.coordinator().Signal(SIGCONT);
  ASSERT_TRUE(reconnecting) << fleet.Logs();

  const json status = fleet.WaitForSweep(sweep_id, 180s);
  EXPECT_EQ(status.value("state", ""), "done") << status.dump() << fleet.Logs();
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "SELECT attempts FROM jobs WHERE job_id = " + std::to_string(job)),
            1)
      << fleet.Logs();
  EXPECT_EQ(QueryValue(fleet.db_path(),
                       "SELECT count(*) FROM results WHERE job_id = " + std::to_string(job)),
            1);
  EXPECT_EQ(fleet.Logs().find("lost ("), std::string::npos) << fleet.Logs();
  // It did reconnect mid-job, and registered again.
  const std::string log = ReadAll(agent_log);
  EXPECT_NE(log.find("registered with", log.find("coordinator silent")), std::string::npos) << log;
}

}  // namespace
}  // namespace benchfleet::testing
