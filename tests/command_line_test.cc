// Every program's command line: --help works and exits 0, and a malformed command line
// exits 2 (bad input, as cli/commands.h documents) with a message that says what is
// wrong, never CLI11's own 104-109.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/fleet.h"
#include "tests/process.h"

namespace benchfleet::testing {
namespace {

struct Outcome {
  int code;
  std::string out, err;
};

Outcome Invoke(const std::vector<std::string>& argv) {
  Outcome o;
  o.code = RunCommand(argv, &o.out, &o.err);
  return o;
}

TEST(CommandLineTest, HelpWorksOnEveryProgram) {
  std::vector<std::string> programs = {kCliBin, kCoordinatorBin, kAgentBin};
#ifdef BENCHFLEET_GPU_CALIBRATE_BIN
  programs.push_back(BENCHFLEET_GPU_CALIBRATE_BIN);
#endif
  for (const std::string& program : programs) {
    const Outcome o = Invoke({program, "--help"});
    EXPECT_EQ(o.code, 0) << program << "\n" << o.err;
    EXPECT_NE(o.out.find("sage"), std::string::npos) << program << "\n" << o.out;  // Usage / usage
  }
  const Outcome sub = Invoke({kCliBin, "schedule", "add", "--help"});
  EXPECT_EQ(sub.code, 0);
  EXPECT_NE(sub.out.find("--cron"), std::string::npos) << sub.out;
}

TEST(CommandLineTest, BadCommandLinesExitTwoSayingWhy) {
  const Outcome unknown = Invoke({kCliBin, "sumbit", "sweep.json"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown command \"sumbit\""), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("submit"), std::string::npos) << unknown.err;  // what there is

  const Outcome missing = Invoke({kCliBin, "submit"});
  EXPECT_EQ(missing.code, 2) << missing.err;
  EXPECT_NE(missing.err.find("FILE"), std::string::npos) << missing.err;

  const Outcome no_sub = Invoke({kCliBin, "schedule"});
  EXPECT_EQ(no_sub.code, 2) << no_sub.err;

  const Outcome bad_flag = Invoke({kCoordinatorBin, "--no-such-flag"});
  EXPECT_EQ(bad_flag.code, 2) << bad_flag.err;
  const Outcome bad_agent = Invoke({kAgentBin, "--no-such-flag"});
  EXPECT_EQ(bad_agent.code, 2) << bad_agent.err;

  // An endpoint without its transport is explained, not ZeroMQ's "Invalid argument".
  const Outcome endpoint = Invoke({kCliBin, "--coordinator", "127.0.0.1:5555", "status"});
  EXPECT_EQ(endpoint.code, 2) << endpoint.err;
  EXPECT_NE(endpoint.err.find("tcp://127.0.0.1:5555"), std::string::npos) << endpoint.err;

  // JUnit is for the commands whose rows pass or fail; a gate names what it fails on.
  const Outcome junit = Invoke({kCliBin, "results", "--db", "results.db", "--format", "junit"});
  EXPECT_EQ(junit.code, 2) << junit.err;
  EXPECT_NE(junit.err.find("junit is for compare and regressions"), std::string::npos) << junit.err;
  const Outcome gate = Invoke({kCliBin, "compare", "1", "2", "--fail-on", "faster"});
  EXPECT_EQ(gate.code, 2) << gate.err;
  EXPECT_NE(gate.err.find("--fail-on"), std::string::npos) << gate.err;
  // A store file here or a coordinator there, not both.
  const Outcome both =
      Invoke({kCliBin, "--coordinator", "tcp://127.0.0.1:9", "results", "--db", "results.db"});
  EXPECT_EQ(both.code, 2) << both.err;
  EXPECT_NE(both.err.find("give one"), std::string::npos) << both.err;
}

// compare and regressions exit 1 only for what --fail-on names (tests/cli_store_file_test.cc
// has the store's cases); whatever stops them from comparing is 2, and --help says so.
TEST(CommandLineTest, CompareAndRegressionsExitTwoWhenTheyCannotCompare) {
  const Outcome same = Invoke({kCliBin, "compare", "2", "2", "--db", "no-such.db"});
  EXPECT_EQ(same.code, 2) << same.err;
  EXPECT_NE(same.err.find("two different sweeps"), std::string::npos) << same.err;
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{kCliBin, "compare", "1", "2", "--fail-on", "slower", "--db",
                                 "no-such.db"},
        {kCliBin, "--coordinator", "tcp://127.0.0.1:9", "--timeout", "0.2", "compare", "1", "2",
         "--fail-on", "slower"},
        {kCliBin, "regressions", "--fail-on", "confirmed", "--db", "no-such.db"},
        {kCliBin, "regressions", "--fail-on", "everything"}}) {
    const Outcome o = Invoke(argv);
    EXPECT_EQ(o.code, 2) << argv[1] << " " << argv[2] << "\n" << o.err;
    EXPECT_FALSE(o.err.empty());
  }
  for (const char* command : {"compare", "regressions"}) {
    const Outcome help = Invoke({kCliBin, command, "--help"});
    EXPECT_NE(help.out.find("Exit status: 0"), std::string::npos) << help.out;
    EXPECT_NE(help.out.find("2 could not"), std::string::npos) << help.out;
  }
}

// No coordinator at the address: the request goes once more on a new connection (the
// Lazy Pirate pattern), then the CLI says plainly that nothing answers there.
TEST(CommandLineTest, ASilentCoordinatorIsAskedTwiceThenNamed) {
  const Outcome o =
      Invoke({kCliBin, "--coordinator", "tcp://127.0.0.1:9", "--timeout", "0.3", "status"});
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("sending once more on a new connection"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("the coordinator does not answer at tcp://127.0.0.1:9"), std::string::npos)
      << o.err;
  // A request that must not go twice goes once.
  const Outcome once =
      Invoke({kCliBin, "--coordinator", "tcp://127.0.0.1:9", "--timeout", "0.3", "calibrate"});
  EXPECT_EQ(once.code, 1) << once.err;
  EXPECT_EQ(once.err.find("sending once more"), std::string::npos) << once.err;
}

}  // namespace
}  // namespace benchfleet::testing
