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
    json body = {{"v", 1},
                 {"type", "register"},
                 {"agent", name},
                 {"tags", json::array()},
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
      FromAgent(peer, {{"v", 1},
                       {"type", "result"},
                       {"job_id", body["job_id"]},
                       {"attempt", body["attempt"]},
                       {"result", result}});
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
  EXPECT_EQ(AnswerAll("gpu-box/1",
                      [](const json& spec) { return spec["device"] == "cpu" ? 8000.0 : 200000.0; }),
            2);

  json rows = Query(
      "SELECT host, device, per_hour, currency, cost_per_1m_samples FROM result_cost "
      "ORDER BY host, device");
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  auto cost = [](double per_hour, double throughput) {
    return per_hour / (throughput * 3600) * 1e6;
  };
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
  Message set = Request(
      {{"type", "set_price"}, {"host", "cpu-box"}, {"per_hour", 0.05}, {"currency", "USD"}});
  ASSERT_EQ(set.type, "rows") << set.body.dump();
  EXPECT_EQ(set.body["rows"][0][1], 0.05);
  RegisterPriced("cpu-box", 0, {{"per_hour", 0.50}, {"currency", "USD"}});
  EXPECT_EQ(Query("SELECT per_hour, source FROM host_price WHERE host = 'cpu-box'"),
            json::parse(R"([[0.05, "cli"]])"));
  EXPECT_EQ(Query("SELECT count(*) FROM host_prices")[0][0], 3);
  EXPECT_NEAR(Query("SELECT cost_per_1m_samples FROM result_cost WHERE host = 'cpu-box'")[0][0]
                  .get<double>(),
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

// A server run is worth what it serves within its SLO: result_capacity says so once,
// and result_cost prices that, not the offline batches inside the run.
TEST_F(CostTest, AServerRunIsPricedByItsRateWithinTheSloAndCapacityCarriesTheDecisionColumns) {
  RegisterPriced("box", 0, {{"per_hour", 1.80}, {"currency", "USD"}});
  RegisterPriced("free", 0, nullptr);
  Submit(json::parse(R"({"name": "serve", "matrix": {"model": "mlp", "batch_size": 8,
                         "scenario": {"kind": "server", "qps": 400, "slo_p99_ms": 5}}})"));
  for (const std::string peer : {"box/1", "free/1"}) {
    coordinator_->Tick();
    const Sent* offer = LastTo(peer, "job");
    ASSERT_NE(offer, nullptr) << peer;
    json result = GoodResult(offer->message.body["spec"]);
    result["throughput_per_s"] = 9000.0;  // the service rate of one full batch
    result["scenario"] = "server";
    result["serving"] = {
        {"target_qps", 2400.0},  {"achieved_qps", 2390.0}, {"latency_p50_ms", 1.2},
        {"latency_p90_ms", 2.9}, {"latency_p99_ms", 4.6},  {"queries", 12000},
        {"batches", 3000},       {"slo_p99_ms", 5.0},      {"max_qps_within_slo", 2400.0}};
    FromAgent(peer, {{"v", 1},
                     {"type", "result"},
                     {"job_id", offer->message.body["job_id"]},
                     {"attempt", offer->message.body["attempt"]},
                     {"result", result}});
  }
  coordinator_->Tick();
  json cost =
      Query("SELECT throughput_per_s, capacity_per_s, cost_per_1m_samples FROM result_cost");
  ASSERT_EQ(cost.size(), 1u) << "the host without a price has no cost: " << cost.dump();
  EXPECT_EQ(cost[0][0], 9000.0);
  EXPECT_EQ(cost[0][1], 2400.0);
  EXPECT_NEAR(cost[0][2].get<double>(), 1.80 / (2400.0 * 3600) * 1e6, 1e-12);

  json capacity = Query(
      "SELECT host, scenario, capacity_per_s, latency_p99_ms, accuracy_loss, stale, "
      "cost_per_1m_samples FROM result_capacity ORDER BY host");
  ASSERT_EQ(capacity.size(), 2u) << capacity.dump();
  EXPECT_EQ(capacity[0][0], "box");
  EXPECT_EQ(capacity[0][1], "server");
  EXPECT_EQ(capacity[0][3], 4.6) << "p99 from arrival, not one batch's";
  EXPECT_EQ(capacity[0][4], 0) << "an fp32 model as built loses nothing";
  EXPECT_EQ(capacity[0][5], 0);
  EXPECT_EQ(capacity[1][0], "free");
  EXPECT_TRUE(capacity[1][6].is_null());
}

TEST_F(CostTest, BadPricesAreRefusedNamingTheFieldAndUnknownHostsAreNotFound) {
  Message unknown = Request({{"type", "set_price"}, {"host", "nobody"}, {"per_hour", 1.0}});
  EXPECT_EQ(unknown.type, "error");
  EXPECT_NE(unknown.body.dump().find("nobody"), std::string::npos) << unknown.body.dump();
  RegisterPriced("box", 0, nullptr);
  for (const json& bad :
       {json{{"type", "set_price"}, {"host", "box"}, {"per_hour", -1}},
        json{{"type", "set_price"}, {"host", "box"}, {"per_hour", 2e6}},
        json{{"type", "set_price"}, {"host", "box"}, {"per_hour", 1}, {"currency", "usd"}}}) {
    Message reply = Request(bad);
    EXPECT_EQ(reply.type, "error") << bad.dump();
    const std::string text = reply.body.dump();
    EXPECT_TRUE(text.find("per_hour") != std::string::npos ||
                text.find("currency") != std::string::npos)
        << text;
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
