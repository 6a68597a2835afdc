#include "metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "metrics/exposition_writer.h"
#include "metrics/latest_snapshot.h"

namespace benchfleet {
namespace {

TEST(MetricsAddressTest, AcceptsHostAndPort) {
  auto address = ParseMetricsAddress("127.0.0.1:9464");
  ASSERT_TRUE(address.ok()) << address.status().message();
  EXPECT_EQ(address->host, "127.0.0.1");
  EXPECT_EQ(address->port, 9464);
  EXPECT_TRUE(address->IsLoopback());
  auto v6 = ParseMetricsAddress("[::1]:0");
  ASSERT_TRUE(v6.ok()) << v6.status().message();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_TRUE(v6->ipv6);
  EXPECT_TRUE(v6->IsLoopback());
  auto any = ParseMetricsAddress("0.0.0.0:9464");
  ASSERT_TRUE(any.ok());
  EXPECT_FALSE(any->IsLoopback());
}

TEST(MetricsAddressTest, RefusesWhatIsNotHostAndPort) {
  for (const char* bad : {"", "9464", "127.0.0.1", "127.0.0.1:", ":9464", "127.0.0.1:65536",
                          "127.0.0.1:94x", "http://127.0.0.1:9464", "::1:9464", "host name:1"}) {
    auto address = ParseMetricsAddress(bad);
    ASSERT_FALSE(address.ok()) << bad;
    EXPECT_EQ(address.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(address.status().message().rfind("--metrics: ", 0), 0u) << address.status().message();
  }
}

// What the server renders: the latest value published, as one gauge.
MetricsServer::Render RenderLatest(std::shared_ptr<LatestSnapshot<int64_t>> latest) {
  return [latest]() -> std::optional<std::string> {
    const std::shared_ptr<const int64_t> value = latest->Latest();
    if (!value) return std::nullopt;
    ExpositionWriter out;
    out.GaugesByLabel("x_agents", "Agents.", "state", {{"idle", *value}});
    return out.text();
  };
}

TEST(MetricsServerTest, ServesTheLatestSnapshotAndNothingElse) {
  auto latest = std::make_shared<LatestSnapshot<int64_t>>();
  auto server = MetricsServer::Start(*ParseMetricsAddress("127.0.0.1:0"), RenderLatest(latest));
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string& url = (*server)->url();
  ASSERT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;
  const int port = std::stoi(url.substr(std::string("http://127.0.0.1:").size()));
  ASSERT_GT(port, 0);
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);

  auto before = client.Get("/metrics");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 503);  // nothing published yet

  latest->Publish(std::make_shared<const int64_t>(4));
  auto scraped = client.Get("/metrics");
  ASSERT_TRUE(scraped);
  EXPECT_EQ(scraped->status, 200);
  EXPECT_EQ(scraped->get_header_value("Content-Type"), kExpositionContentType);
  EXPECT_EQ(scraped->body,
            "# HELP x_agents Agents.\n# TYPE x_agents gauge\nx_agents{state=\"idle\"} 4\n");
  latest->Publish(std::make_shared<const int64_t>(5));
  auto again = client.Get("/metrics");
  ASSERT_TRUE(again);
  EXPECT_NE(again->body.find("x_agents{state=\"idle\"} 5\n"), std::string::npos) << again->body;

  auto other = client.Get("/");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  auto post = client.Post("/metrics", "", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_NE(post->status, 200);
}

TEST(MetricsServerTest, APortInUseIsAClearError) {
  auto latest = std::make_shared<LatestSnapshot<int64_t>>();
  auto first = MetricsServer::Start(*ParseMetricsAddress("127.0.0.1:0"), RenderLatest(latest));
  ASSERT_TRUE(first.ok());
  const std::string& url = (*first)->url();
  const std::string address =
      url.substr(std::string("http://").size(), url.size() - std::string("http:///metrics").size());
  auto second = MetricsServer::Start(*ParseMetricsAddress(address), RenderLatest(latest));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("cannot listen on " + address), std::string::npos)
      << second.status().message();
}

}  // namespace
}  // namespace benchfleet
