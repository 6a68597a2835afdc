// The agent's --metrics and --ready-file as its loop keeps them: an agent in the test's
// process, driven one pass at a time (AgentDaemon::Tick) on an injected clock, against a
// real ROUTER socket on loopback playing the coordinator, and scraped over real HTTP. The
// ready file appears at the registration and names the endpoint; the jobs it ends count
// by outcome, its spool and its state show, and a silent coordinator counts a reconnect.
// Its worker is the result worker (tests/result_worker.cc): probed at start, never run.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "agent/agent.h"
#include "common/agent_messages.h"
#include "common/transport.h"

namespace benchfleet {
namespace {

using namespace std::chrono_literals;

class DaemonHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto router = BindRouter(context_, "tcp://127.0.0.1:*", &endpoint_);
    ASSERT_TRUE(router.ok()) << router.status().message();
    router_ = std::make_unique<zmq::socket_t>(std::move(*router));
    AgentOptions options;
    options.coordinator = endpoint_;
    options.name = "healthy";
    options.workers = {BENCHFLEET_RESULT_WORKER_BIN};
    options.state_dir = dir_ + "/state";
    options.calibrate_at_start = false;
    options.clock = &clock_;
    options.metrics_address = "127.0.0.1:0";
    options.ready_file = ready_file_;
    agent_ = std::make_unique<AgentDaemon>(options);
    const Status started = agent_->Start();
    ASSERT_TRUE(started.ok()) << started.message();
  }
  void TearDown() override {
    agent_.reset();
    std::filesystem::remove_all(dir_);
  }

  // The next message of `type` the agent sends (others are let by), ticking it meanwhile.
  std::optional<Message> Next(const std::string& type) {
    const MonoTime deadline = MonoNow() + 10s;
    while (MonoNow() < deadline) {
      agent_->Tick(0);
      if (!PollReadable({router_.get()}, 5)[0]) continue;
      auto frames = ReceiveFrames(*router_);
      if (!frames.ok() || !frames->has_value() || (*frames)->size() < 2) continue;
      peer_ = (*frames)->front();
      auto message = Decode((*frames)->back());
      if (message.ok() && message->type == type) return std::move(message).value();
    }
    ADD_FAILURE() << "the agent sent no \"" << type << "\" within 10 s";
    return std::nullopt;
  }

  void Reply(const Message& message) {
    const Status sent = SendMessageTo(*router_, peer_, message);
    ASSERT_TRUE(sent.ok()) << sent.message();
  }

  // The agent's samples by series ("name{labels}"), scraped once `condition` holds of
  // them (the agent ticked meanwhile: each pass publishes what the last one left).
  template <typename Condition>
  std::map<std::string, double> ScrapeWhen(Condition condition) {
    std::map<std::string, double> samples;
    const MonoTime deadline = MonoNow() + 10s;
    while (MonoNow() < deadline) {
      agent_->Tick(0);
      agent_->Tick(0);
      samples = Scrape();
      if (condition(samples)) return samples;
      PollReadable({router_.get()}, 1);
    }
    ADD_FAILURE() << "the scrape did not show what was expected within 10 s";
    return samples;
  }

  std::map<std::string, double> Scrape() {
    std::map<std::string, double> samples;
    httplib::Client client(host_, port_);
    client.set_connection_timeout(5);
    client.set_read_timeout(5);
    auto scraped = client.Get("/metrics");
    if (!scraped || scraped->status != 200) return samples;
    std::istringstream in(scraped->body);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      const size_t space = line.rfind(' ');
      samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return samples;
  }

  std::string dir_ = [] {
    char pattern[] = "/tmp/bf-agent-health.XXXXXX";
    return std::string(mkdtemp(pattern));
  }();
  std::string ready_file_ = dir_ + "/agent.ready";
  ManualMonotonicClock clock_;
  zmq::context_t context_;
  std::string endpoint_;
  std::unique_ptr<zmq::socket_t> router_;
  std::string peer_;
  std::unique_ptr<AgentDaemon> agent_;
  std::string host_;
  int port_ = 0;
};

double UnixNowS() { return static_cast<double>(UnixMicrosNow()) / 1e6; }

TEST_F(DaemonHealthTest, TheReadyFileAndTheScrapeFollowTheAgent) {
  // Not registered yet: no ready file.
  ASSERT_TRUE(Next(msg::kRegister));
  EXPECT_FALSE(std::filesystem::exists(ready_file_));
  Reply(ToMessage(RegisteredReply{"healthy", /*heartbeat_ms=*/1000, /*liveness=*/3}));
  const MonoTime deadline = MonoNow() + 10s;
  while (!agent_->registered() && MonoNow() < deadline) {
    agent_->Tick(0);
    PollReadable({router_.get()}, 1);
  }
  ASSERT_TRUE(agent_->registered());

  // Registered: the ready file names the agent, its process and where it serves.
  std::ifstream in(ready_file_);
  const auto ready = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(ready.is_object()) << "the ready file does not hold a JSON object";
  EXPECT_EQ(ready.value("agent", ""), "healthy");
  EXPECT_EQ(ready.value("pid", 0), getpid());
  std::smatch match;
  const std::string url = ready.value("metrics", "");
  ASSERT_TRUE(
      std::regex_match(url, match, std::regex("^http://(127\\.0\\.0\\.1):([0-9]+)/metrics$")))
      << ready.dump();
  host_ = match[1];
  port_ = std::stoi(match[2]);

  const double registered_at = UnixNowS();
  auto samples = ScrapeWhen([](auto& s) { return s["benchfleet_agent_registered"] == 1; });
  EXPECT_EQ(samples["benchfleet_agent_connected"], 1);
  EXPECT_EQ(samples["benchfleet_agent_busy"], 0);
  EXPECT_EQ(samples["benchfleet_agent_spooled_results"], 0);
  EXPECT_EQ(samples["benchfleet_agent_reconnects_total"], 0);
  for (const char* outcome : {"ok", "failed", "stopped"}) {
    EXPECT_EQ(samples.at(std::string("benchfleet_agent_jobs_total{outcome=\"") + outcome + "\"}"),
              0);
  }
  // Its answer was heard just now (the protocol's clock stands still meanwhile).
  const double heard = samples["benchfleet_agent_last_heartbeat_timestamp_seconds"];
  EXPECT_NEAR(heard, registered_at, 30);
  EXPECT_GT(samples["benchfleet_agent_start_time_seconds"], 0);
  const auto build =
      samples.lower_bound("benchfleet_agent_build_info{agent=\"healthy\",version=\"");
  ASSERT_NE(build, samples.end());
  EXPECT_EQ(build->first.rfind("benchfleet_agent_build_info{agent=\"healthy\",version=\"", 0), 0u);
  EXPECT_EQ(build->second, 1);

  // A job it cannot run (a model by path, which it never loads): failed, its result
  // spooled until the ack.
  JobOffer refused;
  refused.job = {5, 1};
  refused.spec = {{"model", "torchscript"}, {"model_args", {{"path", "/etc/x.pt"}}}};
  refused.timeout_s = 60;
  Reply(ToMessage(refused));
  auto result = Next(msg::kResult);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->body["job_id"], 5);
  samples =
      ScrapeWhen([](auto& s) { return s["benchfleet_agent_jobs_total{outcome=\"failed\"}"] == 1; });
  EXPECT_EQ(samples["benchfleet_agent_spooled_results"], 1);
  Reply(ToMessage(ResultAck{{5, 1}, ResultAck::Outcome::kStored, ""}));
  ScrapeWhen([](auto& s) { return s["benchfleet_agent_spooled_results"] == 0; });

  // A job waiting for its model is busy; stopped by the coordinator, it counts so.
  JobOffer waiting;
  waiting.job = {6, 1};
  waiting.spec = {{"model", "torchscript"}, {"model_args", {{"sha256", std::string(64, 'a')}}}};
  waiting.timeout_s = 60;
  Reply(ToMessage(waiting));
  ASSERT_TRUE(Next(msg::kModelFetch));
  ScrapeWhen([](auto& s) { return s["benchfleet_agent_busy"] == 1; });
  Reply(ToMessage(StopOrder{{6, 1}, "stopped by the test"}));
  samples = ScrapeWhen(
      [](auto& s) { return s["benchfleet_agent_jobs_total{outcome=\"stopped\"}"] == 1; });
  EXPECT_EQ(samples["benchfleet_agent_busy"], 0);
  EXPECT_EQ(samples["benchfleet_agent_jobs_total{outcome=\"failed\"}"], 1);

  // The coordinator silent past its liveness (3 x 1000 ms): the connection is dropped,
  // the agent shows it, and the last heartbeat stays when it was, before the drop.
  clock_.Advance(3001ms);
  samples = ScrapeWhen([](auto& s) { return s["benchfleet_agent_reconnects_total"] == 1; });
  EXPECT_EQ(samples["benchfleet_agent_registered"], 0);
  EXPECT_EQ(samples["benchfleet_agent_connected"], 0);
  // (On the protocol's clock it was heard 3 s before the drop; the Unix seconds the
  // scrape shows are the system clock's less that.)
  const double last = samples["benchfleet_agent_last_heartbeat_timestamp_seconds"];
  EXPECT_NEAR(last, heard, 30);
  EXPECT_LE(last, UnixNowS());
  samples = ScrapeWhen([](auto&) { return true; });
  EXPECT_EQ(samples["benchfleet_agent_last_heartbeat_timestamp_seconds"], last);
}

}  // namespace
}  // namespace benchfleet
