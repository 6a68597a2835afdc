// The agent's protocol timers on an injected clock: heartbeats at the interval the
// coordinator set, results resent at doubling intervals until acknowledged, a silent
// coordinator left after its liveness window and reconnected to at once, then with a
// doubling backoff.
// The agent runs in the test's process, driven one pass at a time (AgentDaemon::Tick),
// against a real ROUTER socket on loopback that plays the coordinator's side of the wire;
// its clock stands still until the test moves it. Its worker is the result worker
// (tests/result_worker.cc): probed at start, never run here.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "agent/agent.h"
#include "agent/spool.h"
#include "common/agent_messages.h"
#include "common/transport.h"

namespace benchfleet {
namespace {

using namespace std::chrono_literals;

class AgentTimersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto router = BindRouter(context_, "tcp://127.0.0.1:*", &endpoint_);
    ASSERT_TRUE(router.ok()) << router.status().message();
    router_ = std::make_unique<zmq::socket_t>(std::move(*router));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void StartAgent(ExitPolicyOptions exit = {}) {
    AgentOptions options;
    options.exit = exit;
    options.coordinator = endpoint_;
    options.name = "timed";
    options.workers = {BENCHFLEET_RESULT_WORKER_BIN};
    options.state_dir = dir_ + "/state";
    options.calibrate_at_start = false;
    options.clock = &clock_;
    agent_ = std::make_unique<AgentDaemon>(options);
    const Status started = agent_->Start();
    ASSERT_TRUE(started.ok()) << started.message();
  }

  // The next message the agent sends, skipping heartbeats unless `type` is one. The
  // agent is ticked (its clock standing still) while the message crosses the socket;
  // the deadline only guards against a message that never comes.
  std::optional<Message> Next(const std::string& type) {
    const MonoTime deadline = MonoNow() + 10s;
    while (MonoNow() < deadline) {
      agent_->Tick(0);
      if (!PollReadable({router_.get()}, 5)[0]) continue;
      auto frames = ReceiveFrames(*router_);
      if (!frames.ok() || !frames->has_value() || (*frames)->size() < 2) continue;
      peer_ = (*frames)->front();
      auto message = Decode((*frames)->back());
      if (!message.ok()) continue;
      if (message->type != type && message->type == msg::kHeartbeat) continue;
      return std::move(message).value();
    }
    ADD_FAILURE() << "the agent sent no \"" << type << "\" within 10 s";
    return std::nullopt;
  }

  // True when the agent, ticked for a while at this instant of its clock, sends no
  // message of `type` (others are let by). A message it should not have sent would be
  // on loopback within this grace.
  bool Quiet(const std::string& type) {
    const MonoTime until = MonoNow() + 150ms;
    while (MonoNow() < until) {
      agent_->Tick(0);
      if (!PollReadable({router_.get()}, 5)[0]) continue;
      auto frames = ReceiveFrames(*router_);
      if (!frames.ok() || !frames->has_value() || (*frames)->empty()) continue;
      auto message = Decode((*frames)->back());
      if (message.ok() && message->type == type) return false;
    }
    return true;
  }

  // Ticks the agent until `condition` holds (true) or `timeout` passed (false).
  template <typename Condition>
  bool TickUntil(Condition condition, Millis timeout = 10s) {
    const MonoTime deadline = MonoNow() + timeout;
    while (MonoNow() < deadline) {
      agent_->Tick(0);
      if (condition()) return true;
      PollReadable({router_.get()}, 1);
    }
    return false;
  }

  void Reply(const Message& message) {
    const Status sent = SendMessageTo(*router_, peer_, message);
    ASSERT_TRUE(sent.ok()) << sent.message();
  }

  // Answers the agent's registration with the coordinator's heartbeat interval and
  // liveness, and waits until the agent took it.
  // A registration still queued from a connection the agent has since dropped may be
  // answered on that connection (the agent's routing id is the same on both): the one
  // sent at once on the new connection is answered then.
  void Register(int heartbeat_ms, int liveness) {
    for (int tries = 0; tries < 3 && !agent_->registered(); ++tries) {
      ASSERT_TRUE(Next(msg::kRegister));
      (void)SendMessageTo(*router_, peer_,
                          ToMessage(RegisteredReply{"timed", heartbeat_ms, liveness}));
      TickUntil([&] { return agent_->registered(); }, 2s);
    }
    ASSERT_TRUE(agent_->registered());
  }

  // The agent, without a socket, makes its next one `backoff` after it dropped the last
  // (the clock standing there now), and not a millisecond before.
  void ExpectReconnectAfter(Millis backoff) {
    clock_.Advance(backoff - 1ms);
    agent_->Tick(0);
    EXPECT_FALSE(agent_->connected()) << "reconnected before " << backoff.count() << " ms";
    clock_.Advance(1ms);
    agent_->Tick(0);
    EXPECT_TRUE(agent_->connected()) << "not reconnected after " << backoff.count() << " ms";
  }

  // An offer of job `job_id` that the agent can only fail at once (its gang names a rank
  // beyond its world): a result without a worker.
  Message FailingOffer(int64_t job_id) {
    return MakeMessage(msg::kJob, {{"job_id", job_id},
                                   {"attempt", 1},
                                   {"timeout_s", 10},
                                   {"spec", {{"model", "mlp"}, {"batch_size", 1}}},
                                   {"gang", {{"rank", 2}, {"world_size", 2}, {"store", "h:1"}}}});
  }

  size_t SpoolFiles() const {
    size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/state/spool")) {
      files += entry.is_regular_file();
    }
    return files;
  }

  std::string dir_ = [] {
    char pattern[] = "/tmp/bf-agent-timers.XXXXXX";
    return std::string(mkdtemp(pattern));
  }();
  ManualMonotonicClock clock_;
  zmq::context_t context_;
  std::string endpoint_;
  std::unique_ptr<zmq::socket_t> router_;
  std::string peer_;
  std::unique_ptr<AgentDaemon> agent_;
};

TEST_F(AgentTimersTest, HeartbeatsComeAtTheIntervalTheCoordinatorSet) {
  StartAgent();
  Register(/*heartbeat_ms=*/1000, /*liveness=*/3);
  ASSERT_TRUE(Next(msg::kHeartbeat));  // the first one at once
  clock_.Advance(999ms);
  EXPECT_TRUE(Quiet(msg::kHeartbeat));
  clock_.Advance(1ms);
  EXPECT_TRUE(Next(msg::kHeartbeat));
  clock_.Advance(999ms);
  EXPECT_TRUE(Quiet(msg::kHeartbeat));
  clock_.Advance(1ms);
  EXPECT_TRUE(Next(msg::kHeartbeat));
}

TEST_F(AgentTimersTest, AnUnacknowledgedResultIsResentAtDoublingIntervalsUntilItsAck) {
  {
    SpoolDirectory spool(dir_ + "/state/spool");
    ASSERT_TRUE(spool.Open().ok());
    ASSERT_TRUE(spool.Put({7, 1, {{"ok", false}, {"error", "spooled before the start"}}}).ok());
  }
  StartAgent();
  // Heartbeats far apart, and a liveness window longer than the test moves the clock.
  Register(/*heartbeat_ms=*/60000, /*liveness=*/10);
  auto sent = Next(msg::kResult);  // delivered as soon as the agent is registered
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->body["job_id"], 7);
  // Then after 2 s, 4 s, 8 s: each interval twice the last (limits.h,
  // kResultResendIntervalMs), while no ack comes.
  for (const auto interval : {2000ms, 4000ms, 8000ms}) {
    clock_.Advance(interval - 1ms);
    EXPECT_TRUE(Quiet(msg::kResult)) << "resent before " << interval.count() << " ms";
    clock_.Advance(1ms);
    EXPECT_TRUE(Next(msg::kResult)) << "not resent after " << interval.count() << " ms";
  }
  Reply(ToMessage(ResultAck{{7, 1}, ResultAck::Outcome::kStored, ""}));
  ASSERT_TRUE(TickUntil([&] { return SpoolFiles() == 0; }));
  clock_.Advance(16000ms);
  EXPECT_TRUE(Quiet(msg::kResult)) << "a result was resent after its ack";
}

TEST_F(AgentTimersTest,
       ASilentCoordinatorIsLeftAfterItsLivenessAndReconnectedToWithDoublingBackoff) {
  StartAgent();
  Register(/*heartbeat_ms=*/1000, /*liveness=*/3);
  ASSERT_TRUE(Next(msg::kHeartbeat));  // the first one at once
  // Silent for exactly the liveness window (3 x 1000 ms): still trusted.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(1000ms);
    ASSERT_TRUE(Next(msg::kHeartbeat));
  }
  EXPECT_TRUE(agent_->connected());
  clock_.Advance(1ms);  // past it: the socket is dropped
  ASSERT_TRUE(TickUntil([&] { return !agent_->connected(); }));
  EXPECT_FALSE(agent_->registered());
  agent_->Tick(0);  // the first reconnect at once
  EXPECT_TRUE(agent_->connected());
  ASSERT_TRUE(Next(msg::kRegister));
  // Still nobody answers: left again after the window; the next reconnect is 1 s on,
  // then 2 s.
  clock_.Advance(3001ms);
  ASSERT_TRUE(TickUntil([&] { return !agent_->connected(); }));
  ExpectReconnectAfter(1000ms);
  clock_.Advance(3001ms);
  ASSERT_TRUE(TickUntil([&] { return !agent_->connected(); }));
  ExpectReconnectAfter(2000ms);
  // The coordinator answers now: registered again, and the first reconnect is at once.
  Register(/*heartbeat_ms=*/1000, /*liveness=*/3);
  ASSERT_TRUE(Next(msg::kHeartbeat));
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(1000ms);
    ASSERT_TRUE(Next(msg::kHeartbeat));
  }
  clock_.Advance(1ms);
  ASSERT_TRUE(TickUntil([&] { return !agent_->connected(); }));
  agent_->Tick(0);
  EXPECT_TRUE(agent_->connected());
}

// --exit-when-idle: the agent leaves once no job ran or was offered for that long, not
// a millisecond before, saying why.
TEST_F(AgentTimersTest, AnIdleAgentLeavesAfterItsIdleTimeNotBefore) {
  ExitPolicyOptions exit;
  exit.when_idle = 30000ms;
  StartAgent(exit);
  Register(/*heartbeat_ms=*/60000, /*liveness=*/10);
  clock_.Advance(20000ms);
  Reply(FailingOffer(3));  // an offer: idle from its end
  auto result = Next(msg::kResult);
  ASSERT_TRUE(result);
  Reply(ToMessage(ResultAck{{3, 1}, ResultAck::Outcome::kStored, ""}));
  ASSERT_TRUE(TickUntil([&] { return SpoolFiles() == 0; }));
  clock_.Advance(29999ms);
  EXPECT_TRUE(Quiet(msg::kLeave));
  EXPECT_FALSE(agent_->left());
  clock_.Advance(1ms);
  auto leave = Next(msg::kLeave);
  ASSERT_TRUE(leave);
  EXPECT_EQ(leave->body["reason"], "idle for 30 s (--exit-when-idle)");
  EXPECT_TRUE(leave->body["running"].is_null());
  // It keeps the connection until the coordinator answers (an offer that crossed the
  // leave is not run), and closes it then.
  Reply(FailingOffer(4));
  EXPECT_TRUE(Quiet(msg::kResult));
  EXPECT_FALSE(agent_->left());
  EXPECT_TRUE(agent_->connected());
  Reply(ToMessage(LeftReply{}));
  ASSERT_TRUE(TickUntil([&] { return agent_->left(); }));
  EXPECT_FALSE(agent_->connected());
}

// No answer: it closes after kLeaveAnswerMs on its clock, not before.
TEST_F(AgentTimersTest, ALeavingAgentClosesWhenTheCoordinatorDoesNotAnswer) {
  ExitPolicyOptions exit;
  exit.when_idle = 1000ms;
  StartAgent(exit);
  Register(/*heartbeat_ms=*/60000, /*liveness=*/10);
  clock_.Advance(1000ms);
  ASSERT_TRUE(Next(msg::kLeave));
  clock_.Advance(Millis(kLeaveAnswerMs - 1));
  EXPECT_TRUE(Quiet(msg::kHeartbeat));
  EXPECT_FALSE(agent_->left());
  clock_.Advance(1ms);
  ASSERT_TRUE(TickUntil([&] { return agent_->left(); }));
}

// --max-jobs: after its jobs no offer is taken (each refused, naming it, so the coordinator
// takes it back), and the agent leaves once their results are acknowledged, not before.
TEST_F(AgentTimersTest, AfterItsMaxJobsTheAgentRefusesOffersAndLeavesOnceAcknowledged) {
  ExitPolicyOptions exit;
  exit.max_jobs = 1;
  StartAgent(exit);
  Register(/*heartbeat_ms=*/60000, /*liveness=*/10);
  Reply(FailingOffer(5));
  auto result = Next(msg::kResult);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->body["job_id"], 5);
  // A well-formed offer, which the agent would run: refused.
  Reply(MakeMessage(msg::kJob, {{"job_id", 6},
                                {"attempt", 1},
                                {"timeout_s", 10},
                                {"spec", {{"model", "mlp"}, {"batch_size", 1}}}}));
  auto refusal = Next(msg::kError);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->body["job_id"], 6);
  EXPECT_EQ(refusal->body["message"], "agent is leaving: --max-jobs 1 reached");
  clock_.Advance(1000ms);
  EXPECT_TRUE(Quiet(msg::kLeave)) << "left before its result was acknowledged";
  EXPECT_FALSE(agent_->left());
  Reply(ToMessage(ResultAck{{5, 1}, ResultAck::Outcome::kStored, ""}));
  auto leave = Next(msg::kLeave);
  ASSERT_TRUE(leave);
  EXPECT_EQ(leave->body["reason"], "ran 1 job (--max-jobs)");
  EXPECT_EQ(SpoolFiles(), 0u);
  Reply(ToMessage(LeftReply{}));
  ASSERT_TRUE(TickUntil([&] { return agent_->left(); }));
}

// Stopped (SIGTERM in Run): it says so too, naming no job when idle, and Run returns once
// the coordinator answered. Run loops in its own thread; this one plays the coordinator.
TEST_F(AgentTimersTest, AStoppedAgentSaysItLeaves) {
  StartAgent();
  Register(/*heartbeat_ms=*/60000, /*liveness=*/10);
  const std::atomic<bool> stop{true};
  std::thread run([&] { EXPECT_TRUE(agent_->Run(&stop).ok()); });
  std::optional<Message> leave;
  const MonoTime deadline = MonoNow() + 10s;
  while (!leave && MonoNow() < deadline) {
    if (!PollReadable({router_.get()}, 10)[0]) continue;
    auto frames = ReceiveFrames(*router_);
    if (!frames.ok() || !frames->has_value() || (*frames)->size() < 2) continue;
    auto message = Decode((*frames)->back());
    if (message.ok() && message->type == msg::kLeave) leave = std::move(message).value();
  }
  Reply(ToMessage(LeftReply{}));
  run.join();
  ASSERT_TRUE(leave) << "the stopped agent sent no \"leave\"";
  EXPECT_EQ(leave->body["reason"], "stopped by a signal");
  EXPECT_TRUE(leave->body["running"].is_null());
  EXPECT_TRUE(agent_->left());
}

}  // namespace
}  // namespace benchfleet
