// Fault test 6: with CURVE on, an agent with no key, with the wrong server key, or with
// a key not on the allow-list gets nothing through; an allowed one works; the
// allow-list is re-read on SIGHUP; a coordinator reachable beyond loopback refuses to
// start without CURVE unless --insecure is given.
#include "common/curve.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "common/transport.h"
#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class CurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
    for (const char* name : {"server", "good", "stranger", "client"}) {
      auto pair = GenerateCurveKeyPair();
      ASSERT_TRUE(pair.ok());
      keys_[name] = *pair;
      ASSERT_TRUE(WriteCurveKeyPair(*pair, dir_ / name).ok());
    }
    allow_ = dir_ / "allow.txt";
    std::ofstream(allow_) << "# agents and clients\n"
                          << keys_["good"].public_key << " agent good\n"
                          << keys_["client"].public_key << " viewer ci client\n";
  }

  std::vector<std::string> AgentKeys(const std::string& name, const std::string& server_pub) {
    return {"--curve-key", dir_ / (name + ".key"), "--server-key", server_pub};
  }

  TempDir dir_{"bf-curve"};
  std::map<std::string, CurveKeyPair> keys_;
  std::string allow_;
};

TEST_F(CurveTest, OnlyAllowedKeysGetThrough) {
  FleetOptions options;
  options.coordinator_flags = {"--curve-key", dir_ / "server.key", "--allow", allow_};
  options.worker = kResultWorkerBin;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator()) << fleet.Logs();
  const std::string server_pub = dir_ / "server.pub";
  auto wrong_server = GenerateCurveKeyPair();
  ASSERT_TRUE(fleet.StartAgent("good", AgentKeys("good", server_pub)));
  ASSERT_TRUE(fleet.StartAgent("nokey"));
  ASSERT_TRUE(fleet.StartAgent("wrongserver", AgentKeys("good", wrong_server->public_key)));
  ASSERT_TRUE(fleet.StartAgent("stranger", AgentKeys("stranger", server_pub)));

  // The CLI needs the keys too: without them nothing comes back.
  std::string out, err;
  int code = RunCommand(
      {kCliBin, "--coordinator", fleet.clients_endpoint(), "--timeout", "2", "status"}, &out, &err);
  EXPECT_NE(code, 0);
  EXPECT_NE(err.find("no reply"), std::string::npos) << err;
  const std::vector<std::string> with_keys = {
      kCliBin,        "--coordinator", fleet.clients_endpoint(), "--curve-key", dir_ / "client.key",
      "--server-key", server_pub};
  auto status = [&] {
    std::vector<std::string> argv = with_keys;
    argv.insert(argv.end(), {"status", "--format", "json"});
    std::string o, e;
    return RunCommand(argv, &o, &e) == 0 ? json::parse(o, nullptr, false) : json();
  };
  // The good agent registers; the stranger's handshakes are refused by the ZAP handler.
  ASSERT_TRUE(WaitFor(
      [&] {
        json s = status();
        return s.is_object() && s["agents"].size() == 1 && s["agents"][0]["agent"] == "good";
      },
      60s))
      << fleet.Logs();
  ASSERT_TRUE(WaitFor(
      [&] {
        std::string log = ReadFile(fleet.coordinator().log_path());
        return log.find("not on the allow-list (" + keys_["stranger"].public_key + ")") !=
               std::string::npos;
      },
      30s))
      << fleet.Logs();
  // Every agent retries registration each second; after the stranger was refused, the
  // others have had as many chances. Only the good one is known, in memory and on disk.
  json s = status();
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["agents"].size(), 1u);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select group_concat(name) from hosts"), "good");

  // A rogue plain-TCP peer gets no answer at all.
  zmq::context_t context;
  auto rogue = ConnectDealer(context, fleet.agents_endpoint(), "rogue");
  ASSERT_TRUE(rogue.ok());
  ASSERT_TRUE(SendFrames(*rogue, {R"({"v":1,"type":"heartbeat"})"}).ok());
  EXPECT_FALSE(PollReadable({&*rogue}, 1000)[0]);

  // Revocation and admission happen on SIGHUP, without a restart.
  std::ofstream(allow_, std::ios::app) << keys_["stranger"].public_key << " agent now trusted\n";
  fleet.coordinator().Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] {
        json now = status();
        return now.is_object() && now["agents"].size() == 2;
      },
      60s))
      << fleet.Logs();
  EXPECT_TRUE(fleet.coordinator().running());
}

TEST_F(CurveTest, BeyondLoopbackNeedsCurveOrInsecure) {
  TempDir run("bf-curve-bind");
  ChildProcess refused;
  ASSERT_TRUE(refused.Start({kCoordinatorBin, "--db", run / "r.db", "--agents", "tcp://0.0.0.0:*",
                             "--clients", "tcp://127.0.0.1:*"},
                            run / "refused.log"));
  int status = refused.Wait(30s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE(ReadFile(run / "refused.log").find("beyond loopback needs CURVE"), std::string::npos);

  ChildProcess insecure;
  ASSERT_TRUE(insecure.Start(
      {kCoordinatorBin, "--db", run / "i.db", "--agents", "tcp://0.0.0.0:*", "--clients",
       "tcp://127.0.0.1:*", "--insecure", "--ready-file", run / "ready"},
      run / "insecure.log"));
  EXPECT_TRUE(WaitFor([&] { return !ReadFile(run / "ready").empty(); }, 30s))
      << ReadFile(run / "insecure.log");
  EXPECT_EQ(insecure.Stop(), 0);
}

TEST(CurveKeysTest, KeyFilesAndAllowListsAreValidated) {
  TempDir dir("bf-keys");
  auto pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok());
  ASSERT_TRUE(WriteCurveKeyPair(*pair, dir / "k").ok());
  auto read = ReadCurveKeyPair(dir / "k.key");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->secret_key, pair->secret_key);
  EXPECT_EQ(*ReadCurvePublicKey(dir / "k.pub"), pair->public_key);
  EXPECT_EQ(*ReadCurvePublicKey(pair->public_key), pair->public_key);
  chmod((dir / "k.key").c_str(), 0644);
  EXPECT_NE(ReadCurveKeyPair(dir / "k.key").status().message().find("chmod 600"),
            std::string::npos);
  // The allow-list and the loopback rule: coordinator/security/allow_list_test.cc.
}

TEST(CurveKeysTest, KeygenRefusesToReplaceAKeyWithoutForce) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
  TempDir dir("bf-keygen");
  const std::string prefix = dir / "coordinator";
  std::string out, err;
  ASSERT_EQ(RunCommand({kCliBin, "keygen", prefix}, &out, &err), 0) << err;
  const std::string key = ReadFile(prefix + ".key");
  const std::string pub = ReadFile(prefix + ".pub");
  ASSERT_FALSE(key.empty());

  // A second keygen into the same files would lock the fleet out: refused, nothing changed.
  EXPECT_NE(RunCommand({kCliBin, "keygen", prefix}, &out, &err), 0);
  EXPECT_NE(err.find(prefix + ".key exists"), std::string::npos) << err;
  EXPECT_NE(err.find("--force"), std::string::npos) << err;
  EXPECT_EQ(ReadFile(prefix + ".key"), key);
  EXPECT_EQ(ReadFile(prefix + ".pub"), pub);

  // A lone .pub (the key pair lives elsewhere) is not replaced either.
  std::ofstream(dir / "agent.pub") << pub;
  EXPECT_NE(RunCommand({kCliBin, "keygen", dir / "agent"}, &out, &err), 0);
  EXPECT_NE(err.find("agent.pub exists"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir / "agent.key"));

  // --force replaces both, and the new secret file is 0600.
  ASSERT_EQ(RunCommand({kCliBin, "keygen", "--force", prefix}, &out, &err), 0) << err;
  EXPECT_NE(ReadFile(prefix + ".key"), key);
  auto replaced = ReadCurveKeyPair(prefix + ".key");
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_EQ(*ReadCurvePublicKey(prefix + ".pub"), replaced->public_key);
}

}  // namespace
}  // namespace benchfleet::testing
