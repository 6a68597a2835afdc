#include "common/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "common/files.h"

namespace benchfleet {
namespace {

using std::chrono::milliseconds;

ProcessOptions Shell(const std::string& script) {
  ProcessOptions options;
  options.argv = {"/bin/sh", "-c", script};
  return options;
}

TEST(SubprocessTest, ACommandsOutputAndExitAreCaptured) {
  auto run = RunCommand(Shell("echo out; echo err >&2; exit 3"), milliseconds(30000));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->out, "out\n");
  EXPECT_EQ(run->err, "err\n");
  EXPECT_FALSE(run->timed_out);
  EXPECT_EQ(run->exit.code(), 3);
  EXPECT_FALSE(run->exit.exited_cleanly());
  EXPECT_EQ(run->exit.Describe(), "exited with code 3");
}

TEST(SubprocessTest, AProgramThatCannotRunIsAnErrorNamingIt) {
  ProcessOptions options;
  options.argv = {"/nonexistent/benchfleet-nothing", "--probe"};
  auto run = RunCommand(options, milliseconds(30000));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(run.status().message(),
            "/nonexistent/benchfleet-nothing cannot be executed: No such file or directory");
  auto started = Subprocess::Start(options);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.status().message().find("cannot be executed"), std::string::npos);
}

TEST(SubprocessTest, AFailedExecCanBeLeftToTheChildsExitAndLog) {
  ProcessOptions options;
  options.argv = {"/nonexistent/benchfleet-worker"};
  options.exec_failure_line = "exec of the worker failed";
  auto run = RunCommand(options, milliseconds(30000));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->exit.code(), 127);
  EXPECT_EQ(run->err, "exec of the worker failed\n");
}

TEST(SubprocessTest, ACommandPastItsDeadlineIsKilled) {
  auto run = RunCommand(Shell("echo started; exec sleep 60"), milliseconds(300));
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->timed_out);
  EXPECT_EQ(run->out, "started\n");
  EXPECT_EQ(run->exit.code(), 128 + SIGKILL);
  EXPECT_EQ(run->exit.Describe(), "killed by signal 9 (Killed)");
}

TEST(SubprocessTest, OutputIsKeptUpToItsLimit) {
  auto run = RunCommand(Shell("head -c 100000 /dev/zero"), milliseconds(30000), 1000);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->out.size(), 1000u);
  EXPECT_TRUE(run->exit.exited_cleanly());
}

TEST(SubprocessTest, EnvironmentAndCpusAreTheChildsOnly) {
  ProcessOptions options =
      Shell("echo \"$BF_ONLY_HERE:$HOME\"; grep Cpus_allowed_list /proc/self/status");
  options.environment = std::vector<std::string>{"BF_ONLY_HERE=yes"};
  options.cpus = {0};
  auto run = RunCommand(options, milliseconds(30000));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->out, "yes:\nCpus_allowed_list:\t0\n");
}

TEST(SubprocessTest, AStartedProcessWritesItsFileAndStopsOnSigterm) {
  std::string dir = (std::filesystem::temp_directory_path() / "bf-subprocess-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  ProcessOptions options = Shell(
      "echo ready; echo warn >&2; trap 'echo bye; exit 0' TERM; "
      "while :; do sleep 0.05; done");
  options.stdout_path = dir + "/log";
  options.stderr_path = dir + "/log";
  auto process = Subprocess::Start(options);
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  EXPECT_TRUE(process->running());
  EXPECT_FALSE(process->Poll().has_value());
  // Wait on the condition (its first lines written), not for a fixed time.
  for (int i = 0; i < 2000 && ReadWholeFile(dir + "/log").value() != "ready\nwarn\n"; ++i) {
    usleep(5000);
  }
  auto exit = process->Stop(milliseconds(20000));
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited_cleanly()) << exit->Describe();
  EXPECT_FALSE(process->running());
  EXPECT_EQ(ReadWholeFile(dir + "/log").value(), "ready\nwarn\nbye\n");
  std::filesystem::remove_all(dir);
}

TEST(SubprocessTest, ASignalToAProcessWithItsOwnGroupReachesWhatItStarted) {
  std::string dir = (std::filesystem::temp_directory_path() / "bf-subprocess-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  // The shell starts a grandchild and prints its pid; killing the group must end both.
  ProcessOptions options = Shell("sleep 60 & echo $! > " + dir + "/grandchild; wait");
  options.own_process_group = true;
  auto process = Subprocess::Start(options);
  ASSERT_TRUE(process.ok());
  std::string grandchild;
  for (int i = 0; i < 4000; ++i) {
    auto text = ReadWholeFile(dir + "/grandchild");
    if (text.ok() && !text->empty() && text->back() == '\n') {
      grandchild = *text;
      break;
    }
    usleep(5000);  // until the real child has written its grandchild's pid
  }
  ASSERT_FALSE(grandchild.empty());
  const pid_t sleeper = std::stoi(grandchild);
  EXPECT_EQ(getpgid(sleeper), process->pid());
  process->Signal(SIGKILL);
  auto exit = process->Wait(milliseconds(20000));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code(), 128 + SIGKILL);
  // The grandchild is re-parented and reaped by init; it is gone once kill(0) fails.
  bool gone = false;
  for (int i = 0; i < 4000 && !gone; ++i) {
    gone = kill(sleeper, 0) != 0;
    if (!gone) usleep(5000);  // until init has reaped the killed grandchild
  }
  EXPECT_TRUE(gone);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace benchfleet
