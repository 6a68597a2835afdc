// An agent refuses what cannot work: with a worker that is missing, not executable, or
// whose --probe fails, it exits non-zero at once naming the reason, instead of
// registering and failing every job it is given.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>

#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;

class AgentStartTest : public ::testing::Test {
 protected:
  // A fake worker: a shell script with `body`.
  std::string Script(const std::string& name, const std::string& body, mode_t mode = 0755) {
    const std::string path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), mode);
    return path;
  }

  // Starts an agent with `worker` (no coordinator listens: a refusal happens before any
  // connection). Returns its wait status, or -1 if it was still running at the deadline.
  int RunAgent(const std::string& worker, ChildProcess* agent) {
    EXPECT_TRUE(agent->Start({kAgentBin, "--coordinator", "tcp://127.0.0.1:9", "--name", "t",
                              "--worker", worker, "--state-dir", dir_ / "state", "--no-calibrate"},
                             dir_ / "agent.log"));
    return agent->Wait(30s);
  }

  void ExpectRefusal(const std::string& worker, const std::string& reason) {
    ChildProcess agent;
    int status = RunAgent(worker, &agent);
    ASSERT_NE(status, -1) << "the agent started with a worker that cannot work\n"
                          << ReadFile(dir_ / "agent.log");
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_NE(WEXITSTATUS(status), 0);
    const std::string log = ReadFile(dir_ / "agent.log");
    EXPECT_NE(log.find("worker " + worker + " " + reason), std::string::npos) << log;
    EXPECT_NE(log.find("does not start"), std::string::npos) << log;
  }

  TempDir dir_{"bf-agent-start"};
};

TEST_F(AgentStartTest, MissingWorkerIsRefused) {
  ExpectRefusal(dir_ / "no-such-worker", "does not exist");
}

TEST_F(AgentStartTest, NonExecutableWorkerIsRefused) {
  ExpectRefusal(Script("plain-file", "echo '{}'", 0644), "is not executable");
}

TEST_F(AgentStartTest, WorkerThatCannotBeExecutedIsRefused) {
  const std::string path = dir_ / "garbage";
  std::ofstream(path) << "not a program\n";
  chmod(path.c_str(), 0755);
  ExpectRefusal(path, "cannot be executed: Exec format error");
}

TEST_F(AgentStartTest, FailingProbeIsRefusedWithItsStderr) {
  ExpectRefusal(Script("broken",
                       "echo 'libtorch_cpu.so: cannot open shared object file' >&2\n"
                       "exit 1"),
                "--probe exited with code 1: libtorch_cpu.so: cannot open shared object file");
}

TEST_F(AgentStartTest, ProbeWithoutJsonIsRefused) {
  ExpectRefusal(Script("chatty", "echo hello"), "--probe printed no JSON object");
}

// The probe is sent on as the registration's capabilities.torch: one the coordinator
// would refuse keeps the agent from starting, naming the field.
TEST_F(AgentStartTest, ProbeTheCoordinatorWouldRefuseIsRefused) {
  ExpectRefusal(
      Script("odd", "echo '{\"torch_version\": \"test\", \"cuda_available\": \"yes\"}'"),
      "--probe printed capabilities.torch.cuda_available: must be true or false, got \"yes\"");
}

TEST_F(AgentStartTest, WorkingProbeStartsTheAgent) {
  const std::string worker = Script("fake", "echo '{\"torch_version\": \"test\"}'");
  ChildProcess agent;
  ASSERT_TRUE(agent.Start({kAgentBin, "--coordinator", "tcp://127.0.0.1:9", "--name", "t",
                           "--worker", worker, "--state-dir", dir_ / "state", "--no-calibrate"},
                          dir_ / "agent.log"));
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(dir_ / "agent.log").find("spooled results to deliver") !=
                   std::string::npos ||
               !agent.running();
      },
      30s));
  EXPECT_TRUE(agent.running()) << ReadFile(dir_ / "agent.log");
  EXPECT_EQ(agent.Stop(), 0);
}

}  // namespace
}  // namespace benchfleet::testing
