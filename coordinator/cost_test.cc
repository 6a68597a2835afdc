// Host prices and the cost views, driven through the coordinator as agents and clients
// drive it: two hosts at different prices, a CPU and a GPU, the same workload on each.
#include <gtest/gtest.h>

#include "coordinator/coordinator_fixture.h"

namespace benchfleet {
namespace {

using namespace testing_fixture;
using testing_fixture::Capabilities;  // not benchfleet::Capabilities

class CostTest : public CoordinatorTest {
 protected:
  void RegisterPriced(const std::string& name, int gpus, const json& price) {
    json body = {{"v", 1}, {"type", "register"}, {"agent", name}, {"tags", json::array()},
                 {"capabilities", Capabilities(gpus, name)}};
    if (!price.is_null()) body["price"] = price;
    FromAgent(name + "/1", body);
  }
  // Answers every job offered to `peer` with `throughput(spec)` samples per second.
  int AnswerAll(const std::string& peer, const std::function<double(const json&)>& throughput) {
    int answered = 0;
    for (int round = 0; round < 20; ++round) {
      coordinator_->Tick();
      const Sent* offer = LastTo(peer, "job");
      if (!offer || answered_.count(offer->message.body["job_id"].get<int64_t>())) break;
      const json body = offer->message.body;
      json result = GoodResult(body["spec"]);
      result["throughput_per_s"] = throughput(body["spec"]);
      FromAgent(peer, {{"v", 1}, {"type", "result"}, {"job_id", body["job_id"]},
                       {"attempt", body["attempt"]}, {"result", result}});
      answered_.insert(body["job_id"].get<int64_t>());
      ++answered;
    }
    return answered;
  }
  std::set<int64_t> answered_;
};

TEST_F(CostTest, TwoHostsAtDifferentPricesGiveEachResultItsCostAndTheCheaperDevice) {
  RegisterPriced("cpu-box", 0, {{"per_hour", 0.50}, {"currency", "USD"}});
  RegisterPriced("gpu-box", 1, {{"per_hour", 2.48}});  // USD unless said
  Submit(json::parse(R"({"name": "cost", "matrix": {"model": "mlp", "batch_size": 64,
                         "device": ["cpu", "cuda"]}})"));
  // The CPU host does 10,000 samples/s, the GPU host's CPU 8,000 and its GPU 200,000.
  EXPECT_EQ(AnswerAll("cpu-box/1", [](const json&) { return 10000.0; }), 1);
  EXPECT_EQ(AnswerAll("gpu-box/1", [](const json& spec) { return spec["device"] == "cpu" ? 8000.0 : 200000.0; }), 2);

  json rows = Query("SELECT host, device, per_hour, currency, cost_per_1m_samples FROM result_cost "
                    "ORDER BY host, device");
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  auto cost = [](double per_hour, double throughput) { return per_hour / (throughput * 3600) * 1e6; };
  EXPECT_EQ(rows[0][0], "cpu-box");
  EXPECT_NEAR(rows[0][4].get<double>(), cost(0.50, 10000), 1e-12);  // 0.0139 USD per 1M
  EXPECT_EQ(rows[1][1], "cpu");
  EXPECT_NEAR(rows[1][4].get<double>(), cost(2.48, 8000), 1e-12);
  EXPECT_EQ(rows[2][1], "cuda");
  EXPECT_EQ(rows[2][3], "USD");
  EXPECT_NEAR(rows[2][4].get<double>(), cost(2.48, 200000), 1e-12);

  // The cheapest CPU result (cpu-box's) against the GPU's.
  json pair = Query("SELECT cpu_host, gpu_host, gpu_device, cost_ratio FROM cpu_gpu_cost");
  ASSERT_EQ(pair.size(), 1u) << pair.dump();
  EXPECT_EQ(pair[0][0], "cpu-box");
  EXPECT_EQ(pair[0][1], "gpu-box");
  EXPECT_NEAR(pair[0][3].get<double>(), cost(0.50, 10000) / cost(2.48, 200000), 1e-9);

  // A price set by hand wins from now on; the old one stays as history. The agent's
  // re-registration with its unchanged price does not undo it.
  Message set = Request({{"type", "set_price"}, {"host", "cpu-box"}, {"per_hour", 0.05}, {"currency", "USD"}});
  ASSERT_EQ(set.type, "rows") << set.body.dump();
  EXPECT_EQ(set.body["rows"][0][1], 0.05);
  RegisterPriced("cpu-box", 0, {{"per_hour", 0.50}, {"currency", "USD"}});
  EXPECT_EQ(Query("SELECT per_hour, source FROM host_price WHERE host = 'cpu-box'"), json::parse(R"([[0.05, "cli"]])"));
  EXPECT_EQ(Query("SELECT count(*) FROM host_prices")[0][0], 3);
  EXPECT_NEAR(Query("SELECT cost_per_1m_samples FROM result_cost WHERE host = 'cpu-box'")[0][0].get<double>(),
              cost(0.05, 10000), 1e-12);
  // A changed agent price is recorded.
  RegisterPriced("cpu-box", 0, {{"per_hour", 0.60}, {"currency", "EUR"}});
  EXPECT_EQ(Query("SELECT per_hour, currency, source FROM host_price WHERE host = 'cpu-box'"),
            json::parse(R"([[0.6, "EUR", "agent"]])"));
  // Prices in different currencies are never compared: the GPU host's own CPU result is
  // now the cheapest CPU result in USD.
  EXPECT_EQ(Query("SELECT cpu_host, gpu_host, currency FROM cpu_gpu_cost"),
            json::parse(R"([["gpu-box", "gpu-box", "USD"]])"));
}

TEST_F(CostTest, BadPricesAreRefusedNamingTheFieldAndUnknownHostsAreNotFound) {
  Message unknown = Request({{"type", "set_price"}, {"host", "nobody"}, {"per_hour", 1.0}});
  EXPECT_EQ(unknown.type, "error");
  EXPECT_NE(unknown.body.dump().find("nobody"), std::string::npos) << unknown.body.dump();
  RegisterPriced("box", 0, nullptr);
  for (const json& bad : {json{{"type", "set_price"}, {"host", "box"}, {"per_hour", -1}},
                          json{{"type", "set_price"}, {"host", "box"}, {"per_hour", 2e6}},
                          json{{"type", "set_price"}, {"host", "box"}, {"per_hour", 1}, {"currency", "usd"}}}) {
    Message reply = Request(bad);
    EXPECT_EQ(reply.type, "error") << bad.dump();
    const std::string text = reply.body.dump();
    EXPECT_TRUE(text.find("per_hour") != std::string::npos || text.find("currency") != std::string::npos) << text;
  }
  EXPECT_EQ(Query("SELECT count(*) FROM host_prices")[0][0], 0);
  // An agent with a bad price is refused, naming the field, and stores nothing.
  RegisterPriced("odd", 0, {{"per_hour", 1}, {"currency", 42}});
  const Sent* refused = LastTo("odd/1", "error");
  ASSERT_NE(refused, nullptr);
  EXPECT_NE(refused->message.body.dump().find("register.price.currency"), std::string::npos)
      << refused->message.body.dump();
  EXPECT_EQ(Query("SELECT count(*) FROM host_prices")[0][0], 0);
}

}  // namespace
}  // namespace benchfleet
