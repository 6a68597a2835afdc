#include "coordinator/zap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/curve.h"
#include "common/transport.h"

namespace benchfleet {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(10);
// How long one poll waits for the routed message before the deadline is checked again.
constexpr long kPollSliceMs = 50;

// A CURVE server (ROUTER) guarded by a ZapHandler, on loopback TCP, and clients for it.
// Nothing here ever calls into the handler to answer a handshake: it must serve on its
// own thread.
class ZapHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CurveAvailable()) GTEST_SKIP() << "this libzmq has no CURVE support";
    allow_path_ = std::filesystem::temp_directory_path() / ("bf-zap-" + std::to_string(getpid()));
    server_ = *GenerateCurveKeyPair();
    friend_ = *GenerateCurveKeyPair();
    stranger_ = *GenerateCurveKeyPair();
    std::ofstream(allow_path_) << friend_.public_key << " friend\n";
    auto zap = ZapHandler::Start(context_, allow_path_);
    ASSERT_TRUE(zap.ok()) << zap.status().ToString();
    zap_ = std::move(*zap);
    auto router = BindRouter(context_, "tcp://127.0.0.1:*", &endpoint_, &server_);
    ASSERT_TRUE(router.ok()) << router.status().ToString();
    router_ = std::make_unique<zmq::socket_t>(std::move(*router));
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove(allow_path_, ec);
  }

  // Connects as `client`, sends one message and waits for it at the server.
  bool GetsThrough(const CurveKeyPair& client, const std::string& id) {
    CurveClientKeys keys{client, server_.public_key};
    auto dealer = ConnectDealer(context_, endpoint_, id, &keys);
    if (!dealer.ok() || !SendFrames(*dealer, {"hello"}).ok()) return false;
    for (auto end = Clock::now() + kDeadline; Clock::now() < end;) {
      if (!PollReadable({router_.get()}, kPollSliceMs)[0]) continue;
      auto frames = ReceiveFrames(*router_);
      if (frames.ok() && frames->has_value() && (*frames)->front() == id) return true;
    }
    return false;
  }

  bool WaitForRefusals(int64_t count) {
    for (auto end = Clock::now() + kDeadline; Clock::now() < end;) {
      if (zap_->refused() >= count) return true;
      PollReadable({router_.get()}, kPollSliceMs);  // nothing may arrive; a bounded wait
    }
    return false;
  }

  zmq::context_t context_;
  std::filesystem::path allow_path_;
  CurveKeyPair server_, friend_, stranger_;
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<zmq::socket_t> router_;
  std::string endpoint_;
};

TEST_F(ZapHandlerTest, AdmitsListedKeysOnItsOwnThread) {
  EXPECT_TRUE(GetsThrough(friend_, "friend"));
  EXPECT_GE(zap_->admitted(), 1);
  EXPECT_EQ(zap_->refused(), 0);
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

  std::ofstream(allow_path_) << friend_.public_key << "\n" << stranger_.public_key << "\n";
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
