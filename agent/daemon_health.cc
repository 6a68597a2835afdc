// AgentDaemon's side of --metrics and --ready-file: what the loop tells of itself, kept
// out of agent.cc. agent/agent_metrics.h renders the health and serves it.
#include <unistd.h>

#include "agent/agent.h"
#include "common/files.h"
#include "common/log.h"

namespace benchfleet {

Status AgentDaemon::StartMetrics() {
  health_.agent = options_.name;
  health_.version = BENCHFLEET_VERSION;
  health_.start_time_s = static_cast<double>(UnixMicrosNow()) / 1e6;
  if (options_.metrics_address.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(metrics_, AgentMetrics::Start(options_.metrics_address));
  PublishHealth();
  return Status::Ok();
}

void AgentDaemon::PublishHealth() {
  if (!metrics_) return;
  health_.connected = connected();
  health_.registered = registered_;
  health_.busy = Busy();
  health_.spooled_results = static_cast<int64_t>(spool_->size());
  if (registered_) {
    // last_heard_ is on the protocol's clock (a test's may stand still): the Unix time
    // is now less the time since, on that clock.
    const double since_s = std::chrono::duration<double>(Now() - last_heard_).count();
    health_.last_heartbeat_s = static_cast<double>(UnixMicrosNow()) / 1e6 - since_s;
  }
  metrics_->Publish(health_);
}

void AgentDaemon::WriteReadyFile() {
  if (options_.ready_file.empty()) return;
  PublishHealth();  // whoever reads the file and then scrapes sees the registration
  nlohmann::json ready = {{"agent", options_.name}, {"pid", getpid()}};
  if (metrics_) ready["metrics"] = metrics_->url();
  // The agent goes on without it: it serves the coordinator either way, and whoever
  // waits for the file sees its absence (and this line in the log).
  const Status written = WriteFileAtomically(options_.ready_file, ready.dump());
  if (!written.ok()) LOG_ERROR("--ready-file: " << written.message());
}

}  // namespace benchfleet
