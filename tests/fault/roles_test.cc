// Fault test: keys with roles on the coordinator's CURVE sockets. With one allow-list
// holding an agent, a viewer, an operator and an admin key: each client role may send
// what the role table allows and gets a permission_denied error naming both roles for
// the rest, with nothing done for it; an agent's key is refused on the clients' socket
// and a client's key on the agents' socket, during the handshake.
#include <gtest/gtest.h>

#include <fstream>

#include "cli/client.h"
#include "common/curve.h"
#include "common/protocol.h"
#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A reply comes at once from a coordinator on loopback; this bounds a refused handshake's
// wait for the reply that never comes.
constexpr int kClientTimeoutMs = 5000;
constexpr int kRefusedHandshakeTimeoutMs = 1000;

class RolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
    for (const char* name : {"server", "agent", "viewer", "operator", "admin"}) {
      auto pair = GenerateCurveKeyPair();
      ASSERT_TRUE(pair.ok());
      keys_[name] = *pair;
      ASSERT_TRUE(WriteCurveKeyPair(*pair, dir_ / name).ok());
    }
    std::ofstream(dir_ / "allow.txt") << "# one key per role\n"
                                      << keys_["agent"].public_key << " agent gpu-01\n"
                                      << keys_["viewer"].public_key << " viewer dashboard\n"
                                      << keys_["operator"].public_key << " operator ci\n"
                                      << keys_["admin"].public_key << " admin alice\n";
    FleetOptions options;
    options.coordinator_flags = {"--curve-key", dir_ / "server.key", "--allow", dir_ / "allow.txt"};
    options.worker = kResultWorkerBin;
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_TRUE(fleet_->StartCoordinator()) << fleet_->Logs();
  }

  // A client on the clients' socket holding `key`'s pair.
  std::unique_ptr<CoordinatorClient> Client(const std::string& key,
                                            int timeout_ms = kClientTimeoutMs) {
    CurveClientKeys curve{keys_.at(key), keys_.at("server").public_key};
    auto client = CoordinatorClient::Connect(fleet_->clients_endpoint(), timeout_ms, &curve);
    return client.ok() ? std::move(*client) : nullptr;
  }

  std::vector<std::string> AgentKeyFlags(const std::string& key) {
    return {"--curve-key", dir_ / (key + ".key"), "--server-key", dir_ / "server.pub"};
  }

  // The agents an admin's status lists.
  json AgentNames() {
    auto reply = Client("admin")->Call(msg::kStatus, json::object());
    if (!reply.ok()) return nullptr;
    json names = json::array();
    for (const json& agent : reply->body["agents"]) names.push_back(agent["agent"]);
    return names;
  }

  bool LogHas(const std::string& text) {
    return ReadFile(fleet_->coordinator().log_path()).find(text) != std::string::npos;
  }

  // The refusal of `type` by a client of `role`.
  static void ExpectDenied(const StatusOr<Message>& reply, const std::string& needs,
                           const std::string& held, const std::string& request) {
    ASSERT_FALSE(reply.ok()) << request << " went through";
    EXPECT_EQ(reply.status().code(), StatusCode::kPermissionDenied) << reply.status().ToString();
    EXPECT_EQ(reply.status().message(),
              request + " needs the " + needs + " role; this key has the " + held + " role");
  }

  TempDir dir_{"bf-roles"};
  std::map<std::string, CurveKeyPair> keys_;
  std::unique_ptr<Fleet> fleet_;
};

// A sweep no agent can run: its jobs wait in the queue, so a cancel has some to drop.
json UnrunnableSweep() {
  return {{"name", "roles"},
          {"placement", "any"},
          {"select", {{"tags", "no-agent-has-this-tag"}}},
          {"matrix", {{"model", {"mlp"}}, {"batch_size", {1, 2}}}},
          {"models", {{"mlp", {{"layers", {8, 8, 2}}}}}}};
}

TEST_F(RolesTest, EachRoleMaySendWhatItsRoleAllows) {
  ASSERT_TRUE(fleet_->StartAgent("gpu-01", AgentKeyFlags("agent")));
  ASSERT_TRUE(WaitFor([&] { return AgentNames() == json::array({"gpu-01"}); }, 60s))
      << fleet_->Logs();
  const std::string db = fleet_->db_path();

  // viewer: reads, and schedules' read-only actions.
  auto viewer = Client("viewer");
  ASSERT_TRUE(viewer);
  EXPECT_TRUE(viewer->Call(msg::kStatus, json::object()).ok());
  EXPECT_TRUE(viewer->Call(msg::kResults, json::object()).ok());
  auto one = viewer->Call(msg::kQuery, {{"sql", "select 1"}});
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->body["rows"], json::array({json::array({1})}));
  EXPECT_TRUE(viewer->Call(msg::kSchedule, {{"action", "list"}}).ok());
  ExpectDenied(viewer->Call(msg::kSubmit, {{"sweep", UnrunnableSweep()}}), "operator", "viewer",
               "submit");
  ExpectDenied(viewer->Call(msg::kSchedule, {{"action", "remove"}, {"name", "nightly"}}),
               "operator", "viewer", "schedule remove");
  EXPECT_EQ(QueryValue(db, "select count(*) from sweeps"), 0) << "a refused submit stored a sweep";

  // operator: changes what runs, not what is stored.
  auto op = Client("operator");
  ASSERT_TRUE(op);
  auto submitted = op->Call(msg::kSubmit, {{"sweep", UnrunnableSweep()}});
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  const int64_t sweep_id = submitted->body["sweep_id"];
  auto cancelled = op->Call(msg::kCancel, {{"sweep_id", sweep_id}});
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(cancelled->body["jobs_cancelled"], 2);
  ExpectDenied(
      op->Call(msg::kPrune, {{"samples_older_than_s", 0}}, CoordinatorClient::Retry::kNever),
      "admin", "operator", "prune");
  ExpectDenied(op->Call(msg::kSetPrice, {{"host", "gpu-01"}, {"per_hour", 9.5}}), "admin",
               "operator", "set_price");
  EXPECT_EQ(QueryValue(db, "select count(*) from host_prices where per_hour = 9.5"), 0)
      << "a refused set_price stored a price";

  // admin: everything.
  auto admin = Client("admin");
  ASSERT_TRUE(admin);
  auto pruned =
      admin->Call(msg::kPrune, {{"samples_older_than_s", 0}}, CoordinatorClient::Retry::kNever);
  EXPECT_TRUE(pruned.ok()) << pruned.status().ToString();
  auto priced = admin->Call(msg::kSetPrice, {{"host", "gpu-01"}, {"per_hour", 9.5}});
  EXPECT_TRUE(priced.ok()) << priced.status().ToString();
  EXPECT_EQ(QueryValue(db, "select count(*) from host_prices where per_hour = 9.5"), 1);

  // The CLI prints the refusal and fails as for any other error.
  std::string out, err;
  const int code = RunCommand(
      {kCliBin, "--coordinator", fleet_->clients_endpoint(), "--curve-key", dir_ / "viewer.key",
       "--server-key", dir_ / "server.pub", "cancel", std::to_string(sweep_id)},
      &out, &err);
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("cancel needs the operator role; this key has the viewer role"),
            std::string::npos)
      << err;
  EXPECT_TRUE(fleet_->coordinator().running());
}

TEST_F(RolesTest, KeysAreRefusedOnTheOtherRolesSocket) {
  // A client's key given to an agent: the handshake is refused, the agent never registers.
  ASSERT_TRUE(fleet_->StartAgent("gpu-01", AgentKeyFlags("agent")));
  ASSERT_TRUE(fleet_->StartAgent("impostor", AgentKeyFlags("operator")));
  ASSERT_TRUE(WaitFor(
      [&] {
        return LogHas("a key of role operator is not admitted on the agents' socket (" +
                      keys_["operator"].public_key + ")");
      },
      30s))
      << fleet_->Logs();
  // The good agent registers; both retry each second, so by then the impostor has had
  // as many chances as it.
  ASSERT_TRUE(WaitFor([&] { return AgentNames() == json::array({"gpu-01"}); }, 60s))
      << fleet_->Logs();
  EXPECT_EQ(QueryValue(fleet_->db_path(), "select group_concat(name) from hosts"), "gpu-01");

  // An agent's key used by a client: no reply at all within the client's timeout.
  auto agent_as_client = Client("agent", kRefusedHandshakeTimeoutMs);
  ASSERT_TRUE(agent_as_client);
  auto reply =
      agent_as_client->Call(msg::kStatus, json::object(), CoordinatorClient::Retry::kNever);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable) << reply.status().ToString();
  EXPECT_TRUE(WaitFor(
      [&] {
        return LogHas("a key of role agent is not admitted on the clients' socket (" +
                      keys_["agent"].public_key + ")");
      },
      10s))
      << fleet_->Logs();
  EXPECT_TRUE(fleet_->coordinator().running());
}

}  // namespace
}  // namespace benchfleet::testing
