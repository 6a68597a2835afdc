// MetricsServer: GET /metrics over HTTP (cpp-httplib) on threads of its own, answering
// with the latest snapshot the coordinator's loop published. It never touches the
// coordinator's state and the loop never waits for it: the loop swaps a pointer under a
// mutex (Publish), a scrape copies that pointer under the same mutex and renders outside
// it. The endpoint has no authentication and shows no secrets (docs/metrics.md).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "coordinator/metrics/exposition.h"

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
  // Binds `address` and serves from its own threads; a non-loopback address is logged
  // as reachable by others. Unavailable when the address cannot be bound.
  // Reads the queued and running jobs per requirement for a scrape, on the scrape's
  // thread (never the loop's: on a store of many sweeps the read takes milliseconds).
  using JobCounts = std::function<StatusOr<std::vector<RequirementJobCount>>()>;
  static StatusOr<std::unique_ptr<MetricsServer>> Start(const MetricsAddress& address,
                                                        JobCounts job_counts = {});
  // Stops serving and joins the threads.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Replaces what scrapes show. Never waits for a scrape in progress (it rendered its
  // own copy of the pointer).
  void Publish(std::shared_ptr<const MetricsSnapshot> snapshot);
  // Where it serves, the port resolved: "http://127.0.0.1:9464/metrics".
  const std::string& url() const { return url_; }

 private:
  MetricsServer();
  std::shared_ptr<const MetricsSnapshot> Latest();

  std::unique_ptr<httplib::Server> server_;
  std::thread listener_;
  std::string url_;
  std::mutex mutex_;
  std::shared_ptr<const MetricsSnapshot> latest_;  // guarded by mutex_
  JobCounts job_counts_;
  std::mutex job_counts_mutex_;  // one read at a time: its connection is not shared
};

}  // namespace benchfleet
