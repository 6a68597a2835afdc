#include "agent/agent_metrics.h"

#include "metrics/exposition_writer.h"

namespace benchfleet {

const char* JobOutcome(const nlohmann::json& result) {
  const bool ok = result.is_object() && result.contains("ok") && result["ok"].is_boolean() &&
                  result["ok"].get<bool>();
  return ok ? "ok" : "failed";
}

std::string RenderAgentExposition(const AgentHealth& health) {
  ExpositionWriter out;
  const std::string p = "benchfleet_agent_";
  out.Family(p + "jobs_total", "counter",
             "Jobs this agent took that ended, by outcome: ok (its result says so), failed (the "
             "worker's error, or a job this agent could not run) or stopped (by the coordinator).");
  for (const auto& [outcome, count] : health.jobs) {
    out.Sample(p + "jobs_total", {{"outcome", outcome}}, count);
  }
  out.Gauge(p + "spooled_results",
            "Results in the agent's spool that the coordinator has not acknowledged yet.",
            static_cast<double>(health.spooled_results));
  out.Gauge(p + "connected",
            "1 while a connection to the coordinator is open, 0 while the agent backs off "
            "before making a new one.",
            health.connected ? 1.0 : 0.0);
  out.Gauge(p + "registered", "1 while the coordinator has taken this agent's registration.",
            health.registered ? 1.0 : 0.0);
  out.Gauge(p + "busy", "1 while a job runs, or waits for its models or its host check.",
            health.busy ? 1.0 : 0.0);
  out.Gauge(p + "last_heartbeat_timestamp_seconds",
            "When the coordinator last answered (its heartbeat, or any message) while this agent "
            "was registered, in Unix seconds; 0 until it first did.",
            health.last_heartbeat_s);
  out.Counter(p + "reconnects_total",
              "Connections to the coordinator this agent dropped because the coordinator was "
              "silent past its liveness, each followed by a new one.",
              health.reconnects);
  out.Gauge(p + "start_time_seconds", "When the agent started, in Unix seconds.",
            health.start_time_s);
  out.Gauge(p + "build_info", "The agent's name (--name) and build; the value is always 1.", 1.0,
            {{"agent", health.agent}, {"version", health.version}});
  return out.text();
}

StatusOr<std::unique_ptr<AgentMetrics>> AgentMetrics::Start(const std::string& address) {
  ASSIGN_OR_RETURN(const MetricsAddress parsed, ParseMetricsAddress(address));
  auto latest = std::make_shared<LatestSnapshot<AgentHealth>>();
  MetricsServer::Render render = [latest]() -> std::optional<std::string> {
    const std::shared_ptr<const AgentHealth> health = latest->Latest();
    if (!health) return std::nullopt;
    return RenderAgentExposition(*health);
  };
  ASSIGN_OR_RETURN(auto server, MetricsServer::Start(parsed, std::move(render)));
  return std::unique_ptr<AgentMetrics>(new AgentMetrics(std::move(latest), std::move(server)));
}

void AgentMetrics::Publish(const AgentHealth& health) {
  latest_->Publish(std::make_shared<const AgentHealth>(health));
}

}  // namespace benchfleet
