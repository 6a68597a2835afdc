// benchfleet-coordinator: parses flags and runs the coordinator until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>
#include <csignal>

#include "common/cli_parse.h"
#include "common/log.h"
#include "coordinator/coordinator.h"
#include "metrics/metrics_flag.h"

namespace {
std::atomic<bool> stop_requested{false};
std::atomic<bool> reload_requested{false};
void RequestStop(int) { stop_requested = true; }
void RequestReload(int) { reload_requested = true; }
}  // namespace

int main(int argc, char** argv) {
  benchfleet::CoordinatorOptions options;
  CLI::App app{
      "benchfleet-coordinator: queues benchmark sweeps, dispatches jobs to agents and "
      "stores results in SQLite"};
  app.add_option("--db", options.db_path, "SQLite database file (created if missing)")
      ->capture_default_str();
  app.add_option(
      "--models", options.models_dir,
      "directory users' model files are kept in by their SHA-256 (default: models/ beside --db)");
  app.add_option("--agents", options.agents_endpoint, "ZeroMQ endpoint agents connect to")
      ->capture_default_str();
  app.add_option("--clients", options.clients_endpoint, "ZeroMQ endpoint clients connect to")
      ->capture_default_str();
  app.add_option("--heartbeat-ms", options.heartbeat_ms, "heartbeat interval in milliseconds")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  app.add_option("--liveness", options.liveness,
                 "missed heartbeats before an agent is taken for dead")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--max-attempts", options.max_attempts,
                 "hand-outs of a job before it fails for good")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--processes", options.default_processes,
                 "fresh worker processes each job of a sweep naming neither `processes` nor "
                 "`precision` runs in; its interval is the one across them")
      ->check(CLI::Range(int64_t{1}, benchfleet::kMaxJobProcesses))
      ->capture_default_str();
  app.add_flag("--share-machines", options.share_machines,
               "let agents on the same machine run jobs at the same time");
  app.add_option("--ready-file", options.ready_file,
                 "write bound endpoints as JSON to this file once serving");
  app.add_option("--curve-key", options.curve_key_path,
                 "the coordinator's CURVE key pair file (benchfleet keygen); turns CURVE on");
  app.add_option("--allow", options.allow_list_path,
                 "allow-list: one '<public key> <role> [name]' line per key, role agent, viewer, "
                 "operator or admin (re-read on SIGHUP)");
  app.add_option("--calibration-max-age-h", options.calibration_max_age_h,
                 "hours after which a machine's calibration is taken again")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  benchfleet::AddMetricsFlag(app, &options.metrics_address, "the coordinator's health");
  app.add_flag("--insecure", options.insecure,
               "serve plain TCP beyond loopback: anyone who reaches the port gets in");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log debug messages");
  if (const int exit_status = benchfleet::ParseCommandLine(app, argc, argv); exit_status >= 0)
    return exit_status;

  benchfleet::SetLogComponent("coordinator");
  if (verbose) benchfleet::SetLogLevel(benchfleet::LogLevel::kDebug);
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  std::signal(SIGHUP, RequestReload);

  benchfleet::Coordinator coordinator(options);
  benchfleet::Status started = coordinator.Start();
  if (!started.ok()) {
    LOG_ERROR(started.message());
    return 1;
  }
  benchfleet::Status done = coordinator.Run(&stop_requested, &reload_requested);
  if (!done.ok()) {
    LOG_ERROR(done.message());
    return 1;
  }
  return 0;
}
