// Fault test 5: rogue peers send malformed frames and oversized messages to both
// coordinator sockets while a good agent finishes 40 jobs. Nothing crashes, the good
// agent's jobs all complete, and every malformed message is counted. (The flood lasts as
// long as the jobs: 40 of them give it some 15 s here, 55 s under the sanitizers, and
// every kind of attack is sent hundreds of times.)
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <random>
#include <thread>
#include <zmq.hpp>

#include "common/limits.h"
#include "common/transport.h"
#include "tests/fleet.h"

namespace benchfleet::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Sends hostile traffic to `endpoint` until `stop`; returns how many messages it sent.
int64_t Rogue(const std::string& endpoint, const std::atomic<bool>& stop, unsigned seed) {
  zmq::context_t context;
  std::mt19937 random(seed);
  const std::vector<Frames> attacks = {
      {std::string("\x00\xff\x13garbage", 10)},
      {"{"},
      {"[1,2,3]"},
      {R"({"v":1,"type":"result","job_id":"one","attempt":1,"result":{}})"},
      {R"({"v":1,"type":"register","agent":"evil name!","tags":[],"capabilities":{}})"},
      {R"({"v":1,"type":"register","agent":"x","tags":[1,2],"capabilities":{}})"},
      {R"({"v":1,"type":"submit","request_id":1,"sweep":{"name":"x","matrix":{"model":["mlp"],"batch_size":[1e30]}}})"},
      {R"({"v":2,"type":"heartbeat"})"},
      {R"({"v":1,"type":"query","request_id":1,"sql":"drop table results"})"},
      {R"({"v":1,"type":"result","job_id":1,"attempt":99,"result":{"ok":true}})"},
      {"one", "two", "three"},
      {std::string(1000000, '[')},
  };
  int64_t sent = 0;
  int reconnects = 0;
  while (!stop) {
    auto socket = ConnectDealer(context, endpoint, "");
    if (!socket.ok()) return sent;
    for (int i = 0; i < 200 && !stop; ++i) {
      // Now and then a message over the size limit: libzmq drops the connection.
      if (random() % 50 == 0) {
        (void)SendFrames(*socket, {std::string(kMaxMessageBytes + 1024, 'x')});
        ++sent;
        break;  // the peer is disconnected; come back with a new socket
      }
      (void)SendFrames(*socket, attacks[random() % attacks.size()]);
      ++sent;
      while (ReceiveFrames(*socket).ok() && PollReadable({&*socket}, 0)[0]) {
      }
      std::this_thread::sleep_for(2ms);  // pacing, so a 2-core machine still runs the jobs
    }
    ++reconnects;
  }
  return sent;
}

TEST(RogueFaultTest, HostilePeersDoNotStopAGoodAgentsJobs) {
  FleetOptions options;
  options.worker = kResultWorkerBin;
  Fleet fleet(options);
  ASSERT_TRUE(fleet.StartCoordinator());
  ASSERT_TRUE(fleet.StartAgent("good"));
  ASSERT_TRUE(fleet.WaitForAgents(1, 60s)) << fleet.Logs();

  std::atomic<bool> stop{false};
  std::atomic<int64_t> sent{0};
  std::thread agent_side([&] { sent += Rogue(fleet.agents_endpoint(), stop, 1); });
  std::thread client_side([&] { sent += Rogue(fleet.clients_endpoint(), stop, 2); });

  constexpr int kJobs = 40;
  json batches = json::array();
  for (int i = 1; i <= kJobs; ++i) batches.push_back(i);
  json sweep = {
      {"name", "rogues"},
      {"matrix", {{"model", {"mlp"}}, {"batch_size", batches}}},
      {"models", {{"mlp", {{"layers", {32, 32, 4}}}}}},
      {"timing",
       {{"warmup_s", 0.01}, {"min_time_s", 0.05}, {"max_time_s", 0.2}, {"target_ci", 0.5}}}};
  int64_t sweep_id = fleet.Submit(sweep);
  ASSERT_GT(sweep_id, 0);
  json done = fleet.WaitForSweep(sweep_id, 600s);
  stop = true;
  agent_side.join();
  client_side.join();
  ASSERT_TRUE(done.is_object()) << fleet.Logs();
  EXPECT_EQ(done["jobs"]["done"], kJobs);
  EXPECT_EQ(done["jobs"]["failed"], 0);
  EXPECT_TRUE(fleet.coordinator().running());
  EXPECT_TRUE(fleet.agent("good").running());
  json status = fleet.Status();
  ASSERT_TRUE(status.is_object());
  int64_t malformed = status["counters"]["malformed_messages"];
  EXPECT_GT(malformed, 0);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from result_summary"), kJobs);
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from results"),
            kJobs);  // nothing injected
  EXPECT_EQ(QueryValue(fleet.db_path(), "select count(*) from sweeps"), 1);
  std::cout << "FIGURE rogues: " << sent << " hostile messages (" << malformed
            << " counted malformed), " << kJobs << "/" << kJobs << " good jobs done, 0 crashes\n";
}

}  // namespace
}  // namespace benchfleet::testing
