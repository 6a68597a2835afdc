// MetricsServer: GET /metrics over HTTP (cpp-httplib) on threads of its own, answering
// with what its Render makes of the latest snapshot a daemon's loop published
// (metrics/latest_snapshot.h). It never touches the daemon's state and the loop never
// waits for it. The endpoint has no authentication and shows no secrets
// (docs/metrics.md). The coordinator and the agent each serve one (--metrics).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/status.h"

namespace httplib {
class Server;
}

namespace benchfleet {

// Threads answering scrapes: one for Prometheus, one for a person's curl meanwhile.
inline constexpr int kMetricsServerThreads = 2;
// A scrape connection that sends or takes nothing for this long is closed, so a stuck
// client holds a thread only briefly.
inline constexpr int kMetricsIoTimeoutS = 5;
// How long Start waits for the listening thread to take its first connection.
inline constexpr int kMetricsStartTimeoutMs = 5000;

// --metrics HOST:PORT, checked: an IPv4 address or host name, or an IPv6 address in
// brackets ("[::1]:9464"); port 0 to 65535, 0 picking a free one.
struct MetricsAddress {
  std::string host;  // without brackets
  int port = 0;
  bool ipv6 = false;
  // Whether only this host can reach it (127.0.0.0/8, ::1, localhost).
  bool IsLoopback() const;
};

// InvalidArgument naming --metrics and what is wrong.
StatusOr<MetricsAddress> ParseMetricsAddress(const std::string& text);

class MetricsServer {
 public:
  // What a scrape shows, in Prometheus' text format (ExpositionWriter), made on the
  // scrape's thread: never the loop's, which only publishes snapshots. Two scrapes may
  // render at once. nullopt: nothing published yet (answered 503).
  using Render = std::function<std::optional<std::string>()>;
  // Binds `address` and serves from its own threads; a non-loopback address is logged
  // as reachable by others. Unavailable when the address cannot be bound.
  static StatusOr<std::unique_ptr<MetricsServer>> Start(const MetricsAddress& address,
                                                        Render render);
  // Stops serving and joins the threads.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Where it serves, the port resolved: "http://127.0.0.1:9464/metrics".
  const std::string& url() const { return url_; }

 private:
  MetricsServer();

  std::unique_ptr<httplib::Server> server_;
  std::thread listener_;
  std::string url_;
  Render render_;
};

}  // namespace benchfleet
