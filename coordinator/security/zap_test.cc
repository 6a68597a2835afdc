#include "coordinator/security/zap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/curve.h"
#include "common/roles.h"
#include "common/transport.h"

namespace benchfleet {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(10);
// How long one poll waits for the routed message before the deadline is checked again.
constexpr long kPollSliceMs = 50;

// The coordinator's two CURVE servers (ROUTERs, agents' and clients' ZAP domains)
// guarded by a ZapHandler, on loopback TCP, and peers for them. Nothing here ever calls
// into the handler to answer a handshake: it must serve on its own thread.
class ZapHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
    allow_path_ = std::filesystem::temp_directory_path() / ("bf-zap-" + std::to_string(getpid()));
    server_ = *GenerateCurveKeyPair();
    friend_ = *GenerateCurveKeyPair();
    stranger_ = *GenerateCurveKeyPair();
    viewer_ = *GenerateCurveKeyPair();
    std::ofstream(allow_path_) << friend_.public_key << " agent friend\n"
                               << viewer_.public_key << " viewer dashboard\n";
    auto zap = ZapHandler::Start(context_, allow_path_);
    ASSERT_TRUE(zap.ok()) << zap.status().ToString();
    zap_ = std::move(*zap);
    auto router = BindRouter(context_, "tcp://127.0.0.1:*", &endpoint_, &server_, kAgentsZapDomain);
    ASSERT_TRUE(router.ok()) << router.status().ToString();
    router_ = std::make_unique<zmq::socket_t>(std::move(*router));
    auto clients =
        BindRouter(context_, "tcp://127.0.0.1:*", &clients_endpoint_, &server_, kClientsZapDomain);
    ASSERT_TRUE(clients.ok()) << clients.status().ToString();
    clients_ = std::make_unique<zmq::socket_t>(std::move(*clients));
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove(allow_path_, ec);
  }

  // Connects as `client` to the agents' server (or the clients'), sends one message and
  // waits for it there; `user_id` gets the User-Id it arrived with.
  bool GetsThrough(const CurveKeyPair& client, const std::string& id, bool to_clients = false,
                   std::string* user_id = nullptr) {
    CurveClientKeys keys{client, server_.public_key};
    auto dealer = ConnectDealer(context_, to_clients ? clients_endpoint_ : endpoint_, id, &keys);
    if (!dealer.ok() || !SendFrames(*dealer, {"hello"}).ok()) return false;
    zmq::socket_t* router = to_clients ? clients_.get() : router_.get();
    for (auto end = Clock::now() + kDeadline; Clock::now() < end;) {
      if (!PollReadable({router}, kPollSliceMs)[0]) continue;
      auto frames = ReceiveFrames(*router, user_id);
      if (frames.ok() && frames->has_value() && (*frames)->front() == id) return true;
    }
    return false;
  }

  bool WaitForRefusals(int64_t count) {
    for (auto end = Clock::now() + kDeadline; Clock::now() < end;) {
      if (zap_->refused() >= count) return true;
      PollReadable({router_.get(), clients_.get()},
                   kPollSliceMs);  // nothing may arrive; a bounded wait
    }
    return false;
  }

  zmq::context_t context_;
  std::filesystem::path allow_path_;
  CurveKeyPair server_, friend_, stranger_, viewer_;
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<zmq::socket_t> router_;   // the agents' domain
  std::unique_ptr<zmq::socket_t> clients_;  // the clients' domain
  std::string endpoint_, clients_endpoint_;
};

TEST_F(ZapHandlerTest, AdmitsListedKeysOnItsOwnThread) {
  std::string user_id;
  EXPECT_TRUE(GetsThrough(friend_, "friend", false, &user_id));
  EXPECT_EQ(user_id, "agent");
  EXPECT_TRUE(GetsThrough(viewer_, "viewer", true, &user_id));
  EXPECT_EQ(user_id, "viewer");  // the role, read by the coordinator from each message
  EXPECT_GE(zap_->admitted(), 2);
  EXPECT_EQ(zap_->refused(), 0);
}

TEST_F(ZapHandlerTest, AKeyIsAdmittedOnlyOnItsRolesSocket) {
  CurveClientKeys agent_keys{friend_, server_.public_key};
  auto agent_as_client = ConnectDealer(context_, clients_endpoint_, "agent-as-client", &agent_keys);
  ASSERT_TRUE(agent_as_client.ok());
  ASSERT_TRUE(SendFrames(*agent_as_client, {"hello"}).ok());
  ASSERT_TRUE(WaitForRefusals(1));
  CurveClientKeys viewer_keys{viewer_, server_.public_key};
  auto viewer_as_agent = ConnectDealer(context_, endpoint_, "viewer-as-agent", &viewer_keys);
  ASSERT_TRUE(viewer_as_agent.ok());
  ASSERT_TRUE(SendFrames(*viewer_as_agent, {"hello"}).ok());
  ASSERT_TRUE(WaitForRefusals(2));
  EXPECT_EQ(zap_->refused_wrong_socket(), 2);
  EXPECT_EQ(zap_->admitted(), 0);
  auto readable = PollReadable({router_.get(), clients_.get()}, 0);  // nothing got through
  EXPECT_FALSE(readable[0]);
  EXPECT_FALSE(readable[1]);
}

TEST(ZapHandlerDomainTest, ACurveServerNeedsAZapDomain) {
  if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
  zmq::context_t context;
  CurveKeyPair server = *GenerateCurveKeyPair();
  std::string bound;
  EXPECT_EQ(BindRouter(context, "tcp://127.0.0.1:*", &bound, &server).status().code(),
            StatusCode::kInternal);
}

TEST_F(ZapHandlerTest, RefusesOthersUntilAReloadAdmitsThem) {
  CurveClientKeys keys{stranger_, server_.public_key};
  auto dealer = ConnectDealer(context_, endpoint_, "stranger", &keys);
  ASSERT_TRUE(dealer.ok());
  ASSERT_TRUE(SendFrames(*dealer, {"hello"}).ok());
  ASSERT_TRUE(WaitForRefusals(1));
  EXPECT_FALSE(PollReadable({router_.get()}, 0)[0]);  // nothing of the stranger got through

  // An allow-list that does not parse leaves the old one in force.
  std::ofstream(allow_path_) << "not-a-key\n";
  ASSERT_TRUE(zap_->Reload().ok());
  EXPECT_TRUE(GetsThrough(friend_, "friend-after-bad-reload"));

  std::ofstream(allow_path_) << friend_.public_key << " agent\n"
                             << stranger_.public_key << " agent\n";
  ASSERT_TRUE(zap_->Reload().ok());
  EXPECT_TRUE(GetsThrough(stranger_, "stranger-admitted"));
}

TEST(ZapHandlerStartTest, AnUnreadableAllowListIsAnError) {
  zmq::context_t context;
  auto zap = ZapHandler::Start(context, "/nonexistent/benchfleet-allow.txt");
  ASSERT_FALSE(zap.ok());
  EXPECT_EQ(zap.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace benchfleet
