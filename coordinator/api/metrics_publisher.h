// MetricsPublisher: the loop's side of --metrics (docs/metrics.md). It owns the HTTP
// server (metrics/), times each pass of the loop and each commit into histograms, and at
// most every kMetricsPublishMs copies the coordinator's health into a fresh snapshot
// (coordinator/metrics/) the server renders on its own threads: the loop never waits
// for a scrape, and a scrape never reads the loop's state.
#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "coordinator/fleet/dispatcher.h"
#include "coordinator/loop/context.h"
#include "coordinator/metrics/exposition.h"
#include "metrics/histogram.h"
#include "metrics/latest_snapshot.h"
#include "metrics/metrics_server.h"

namespace benchfleet {

class JobCountReader;  // metrics_publisher.cc

// How often the loop copies its state for scrapes: Prometheus scrapes every 15 s or so,
// and a copy walks the agents and the requirements (in memory; the job counts are read
// by the scrape itself, off the loop).
inline constexpr int kMetricsPublishMs = 1000;

class MetricsPublisher {
 public:
  // Checks `address` (--metrics HOST:PORT), starts the HTTP server there and publishes
  // a first snapshot. InvalidArgument for a malformed address, Unavailable when it
  // cannot be bound.
  static StatusOr<std::unique_ptr<MetricsPublisher>> Start(const std::string& address,
                                                           const CoordinatorContext& context,
                                                           Dispatcher& dispatcher);

  // Where scrapes go: "http://127.0.0.1:9464/metrics".
  const std::string& url() const { return server_->url(); }
  // The histogram Round times its commits into.
  LatencyHistogram& store_commit() { return store_commit_; }
  // A pass of the loop ran from `started` to `ended`: recorded, and a snapshot published
  // when the last one is kMetricsPublishMs old.
  void LoopPassDone(MonoTime started, MonoTime ended);

 private:
  MetricsPublisher(const CoordinatorContext& context, Dispatcher& dispatcher,
                   std::shared_ptr<LatestSnapshot<MetricsSnapshot>> latest,
                   std::shared_ptr<JobCountReader> job_counts,
                   std::unique_ptr<MetricsServer> server);
  void Publish(MonoTime now);

  const CoordinatorContext& ctx_;
  Dispatcher& dispatcher_;  // its cached answers of which agent can run what
  // Shared with the server's scrapes, which render what it holds.
  std::shared_ptr<LatestSnapshot<MetricsSnapshot>> latest_;
  // The scrapes' reads of the job counts, which also tell which requirements have queued
  // jobs: those the loop counts matching agents for.
  std::shared_ptr<JobCountReader> job_counts_;
  std::unique_ptr<MetricsServer> server_;
  LatencyHistogram loop_iteration_;
  LatencyHistogram store_commit_;
  const double start_time_s_;
  MonoTime next_publish_;
};

}  // namespace benchfleet
