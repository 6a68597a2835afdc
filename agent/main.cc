// benchfleet-agent: parses flags and runs the agent until SIGINT/SIGTERM.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <csignal>
#include <filesystem>

#include "agent/agent.h"
#include "agent/allocation.h"
#include "common/cli_parse.h"
#include "common/curve.h"
#include "common/log.h"
#include "metrics/metrics_flag.h"

namespace {
std::atomic<bool> stop_requested{false};
void RequestStop(int) { stop_requested = true; }

std::string DefaultWorkerPath() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "benchfleet-worker";
  return (self.parent_path() / "benchfleet-worker").string();
}
}  // namespace

int main(int argc, char** argv) {
  benchfleet::AgentOptions options;
  char hostname[256] = {0};
  gethostname(hostname, sizeof hostname - 1);
  options.name = hostname;

  std::string tags, cpus;

  CLI::App app{"benchfleet-agent: runs benchmark jobs from a benchfleet coordinator on this host"};
  app.add_option("--coordinator", options.coordinator, "coordinator's agent endpoint")
      ->capture_default_str();
  app.add_option("--name", options.name, "agent name, unique in the fleet")->capture_default_str();
  app.add_option("--tags", tags, "comma-separated tags a sweep's select can match");
  app.add_option("--cpus", cpus, "CPUs jobs may use, e.g. 0-3,6 (default: all allowed)");
  app.add_option("--advertise-address", options.advertise_address,
                 "IPv4 address the ranks of a gang spread over agents reach this host at "
                 "(default: the address this host reaches the coordinator from)");
  app.add_option(
      "--worker", options.workers,
      "path of benchfleet-worker; give it once per LibTorch this agent carries (each built "
      "against its own), the first for jobs that name no torch (default: "
      "benchfleet-worker beside this program)");
  app.add_option(
      "--state-dir", options.state_dir,
      "directory for the result spool and job files (default /var/tmp/benchfleet-agent-NAME)");
  app.add_option("--models-dir", options.models_dir,
                 "a directory whose TorchScript files jobs may name by model_args.agent_path "
                 "(default: none; models come by their sha256 from the coordinator)");
  app.add_option(
      "--package-cache", options.package_cache,
      "where workers keep the TorchScript files and AOTInductor packages they compile for "
      "the technique axis, by content (default: STATE_DIR/packages); agents of one host "
      "may share one");
  int64_t model_cache_mb = benchfleet::kDefaultModelCacheBytes >> 20;
  app.add_option(
         "--model-cache-mb", model_cache_mb,
         "MiB of fetched models kept in STATE_DIR/models; the least recently used go beyond it")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--heartbeat-ms", options.heartbeat_ms, "heartbeat interval before registration")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  std::string curve_key, server_key;
  app.add_option("--curve-key", curve_key, "this agent's CURVE key pair file (benchfleet keygen)");
  app.add_option("--server-key", server_key,
                 "the coordinator's CURVE public key (40 Z85 characters, or a .pub file)");
  bool no_calibrate = false;
  app.add_flag("--no-calibrate", no_calibrate,
               "do not calibrate the host at start (benchfleet calibrate does it on demand)");
  std::optional<double> price_per_hour;
  std::string currency = benchfleet::kDefaultCurrency;
  app.add_option("--price-per-hour", price_per_hour,
                 "what an hour of this host costs, for the cost views (docs/results.md, Cost)");
  app.add_option("--currency", currency, "the price's ISO 4217 currency code")
      ->capture_default_str();
  benchfleet::AddMetricsFlag(app, &options.metrics_address, "the agent's health");
  app.add_option("--ready-file", options.ready_file,
                 "once registered with the coordinator, write {\"agent\", \"pid\", and with "
                 "--metrics \"metrics\"} as JSON to this file");
  std::optional<double> exit_when_idle_s;
  app.add_option("--exit-when-idle", exit_when_idle_s,
                 "leave (exit 0) once no job ran or was offered for SECONDS and every result is "
                 "acknowledged: a batch job (Slurm) gives its allocation back")
      ->check(CLI::Range(0.1, 31.0 * 24 * 3600));
  app.add_option("--max-jobs", options.exit.max_jobs,
                 "take no more jobs after N ended here, and leave (exit 0) once their results "
                 "are acknowledged")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log debug messages");
  if (const int exit_status = benchfleet::ParseCommandLine(app, argc, argv); exit_status >= 0)
    return exit_status;
  options.calibrate_at_start = !no_calibrate;
  if (exit_when_idle_s) {
    options.exit.when_idle = benchfleet::Millis(std::llround(*exit_when_idle_s * 1000));
  }
  if (options.workers.empty()) options.workers.push_back(DefaultWorkerPath());
  options.model_cache_bytes = model_cache_mb << 20;
  if (price_per_hour) {
    auto price = benchfleet::ParseHostPrice(*price_per_hour, currency, "--price-per-hour");
    if (!price.ok()) {
      std::cerr << "benchfleet-agent: " << price.status().message() << "\n";
      return 2;
    }
    options.price = *price;
  }
  if (curve_key.empty() != server_key.empty()) {
    std::cerr << "benchfleet-agent: --curve-key and --server-key go together\n";
    return 2;
  }
  if (!curve_key.empty()) {
    auto pair = benchfleet::ReadCurveKeyPair(curve_key);
    auto server = benchfleet::ReadCurvePublicKey(server_key);
    for (const benchfleet::Status& s : {pair.status(), server.status()}) {
      if (!s.ok()) {
        std::cerr << "benchfleet-agent: " << s.message() << "\n";
        return 2;
      }
    }
    options.curve = benchfleet::CurveClientKeys{*pair, *server};
  }

  benchfleet::SetLogComponent("agent " + options.name);
  if (verbose) benchfleet::SetLogLevel(benchfleet::LogLevel::kDebug);
  if (!tags.empty()) {
    std::stringstream in(tags);
    std::string tag;
    while (std::getline(in, tag, ',')) {
      if (!tag.empty()) options.tags.push_back(tag);
    }
  }
  // The CPUs (and, in a Slurm job, the GPUs) this agent takes as its own: refused with
  // the reason, which lands in a batch job's output file, when it has none it may use.
  auto sources = benchfleet::ReadAllocationSources();
  auto resources = sources.ok()
                       ? benchfleet::ResolveResources(*sources, cpus)
                       : benchfleet::StatusOr<benchfleet::AgentResources>(sources.status());
  if (!resources.ok()) {
    LOG_ERROR(resources.status().message());
    return resources.status().code() == benchfleet::StatusCode::kInvalidArgument ? 2 : 1;
  }
  options.cpus = resources->cpus;
  if (resources->slurm) {
    // The workers inherit it: their probe, and every job, see the allocated GPUs only.
    setenv("CUDA_VISIBLE_DEVICES", resources->slurm->visible_gpus.c_str(), 1);
    LOG_INFO(resources->slurm->Describe());
  }
  if (options.state_dir.empty()) options.state_dir = "/var/tmp/benchfleet-agent-" + options.name;
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);

  benchfleet::AgentDaemon agent(options);
  benchfleet::Status started = agent.Start();
  if (!started.ok()) {
    LOG_ERROR(started.message());
    return 1;
  }
  return agent.Run(&stop_requested).ok() ? 0 : 1;
}
