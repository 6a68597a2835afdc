// The coordinator at fleet scale: starts a real benchfleet-coordinator on a fresh
// SQLite file (loopback TCP, no CURVE), simulates N agents on real DEALER sockets
// (one socket each, all served by this one thread through zmq_poll), submits M tiny
// jobs as sweeps of placement `any` and answers every job with a valid result at once
// (or after --job-delay-ms). Reports throughput, the coordinator's CPU per job and peak
// RSS, dispatch latency (job committed -> received, from the offer's committed_at_us;
// and an agent's result sent -> its next job received), reply times,
// and the simulator's own CPU, so that it is seen not to be the bottleneck.
// With --idle-s S: N registered agents heartbeat for S seconds, nothing submitted; the
// coordinator's CPU fraction of one core over that window.
// usage: bench_fleet_load [--agents N] [--jobs M] [--job-delay-ms D] [--job-delay-jitter J]
//                         [--idle-s S] [--coordinator PATH] [--timeout-s T] [--keep-dir]
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "bench/fleet_process.h"
#include "bench/fleet_sim.h"
#include "common/status_reply.h"

namespace benchfleet::fleet_load {
namespace {

// The jobs of our sweeps by state.
json SweepTotals(const StatusOr<benchfleet::StatusReply>& status) {
  SweepJobCounts totals;
  if (status.ok()) {
    for (const SweepOverview& sweep : status->sweeps) {
      if (sweep.name.rfind("fleet-load-", 0) != 0) continue;
      totals.total += sweep.jobs.total;
      totals.queued += sweep.jobs.queued;
      totals.running += sweep.jobs.running;
      totals.done += sweep.jobs.done;
      totals.failed += sweep.jobs.failed;
      totals.cancelled += sweep.jobs.cancelled;
    }
  }
  json out = totals.ToJson();
  out.erase("storing");
  return out;
}

json Round(double value, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

int Run(const Options& options) {
  RaiseDescriptorLimit();
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "bench-fleet-load-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::cerr << "cannot create a temporary directory\n";
    return 1;
  }
  const std::string dir = dir_template;
  struct RemoveDir {
    std::string path;
    bool keep;
    ~RemoveDir() {
      std::error_code ec;
      if (!keep) std::filesystem::remove_all(path, ec);
    }
  } remove_dir{dir, options.keep_dir};

  CoordinatorProcess coordinator;
  const std::vector<std::string> argv = {
      options.coordinator, "--db", dir + "/results.db", "--agents", "tcp://127.0.0.1:*",
      "--clients", "tcp://127.0.0.1:*", "--heartbeat-ms", std::to_string(options.heartbeat_ms),
      "--liveness", std::to_string(options.liveness), "--ready-file", dir + "/coordinator.ready",
      // Each job one hand-out: the dispatch is what is
      // measured, not repeats in processes.
      "--processes", "1"};
  if (Status started =
          coordinator.Start(argv, dir + "/coordinator.log", dir + "/coordinator.ready");
      !started.ok()) {
    // The directory goes away with the run (unless --keep-dir): show the log now.
    const std::string log = ReadFile(dir + "/coordinator.log");
    std::cerr << started.message() << "\n" << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    return 1;
  }
  const pid_t pid = coordinator.pid();
  Simulator simulator(options, coordinator.agents_endpoint(), coordinator.clients_endpoint());
  const auto register_start = Clock::now();
  Status serving = simulator.Connect();
  if (serving.ok()) serving = simulator.RegisterAll();
  if (!serving.ok()) {
    std::cerr << serving.message() << "; coordinator log: " << dir
              << "/coordinator.log (--keep-dir keeps it)\n";
    return 1;
  }
  const double register_s = Seconds(Clock::now() - register_start);

  const bool idle = options.idle_s > 0;
  const double cpu_before = ProcessCpuSeconds(pid);
  const double own_before = OwnCpuSeconds();
  const auto start = Clock::now();
  Status ran = Status::Ok();
  if (idle) {
    simulator.Idle(options.idle_s);
  } else {
    ran = simulator.RunJobs();
  }
  const double wall_s = Seconds(Clock::now() - start);
  const double cpu_s = ProcessCpuSeconds(pid) - cpu_before;
  const double own_s = OwnCpuSeconds() - own_before;
  const auto status = simulator.StatusReply();
  // What the SQLite file holds, read back through the coordinator.
  const json stored_rows = idle ? json() : simulator.QueryValue("SELECT COUNT(*) FROM results");
  const double peak_rss_mb = PeakRssMb(pid);
  coordinator.Stop();

  const Tally& tally = simulator.tally();
  const json counters = status.ok() ? status->counters.ToJson() : json::object();
  const json totals = SweepTotals(status);
  json report = {{"mode", idle ? "idle" : "jobs"},
                 {"agents", options.agents},
                 {"wall_s", Round(wall_s, 3)},
                 {"coordinator_cpu_s", Round(cpu_s, 3)},
                 {"coordinator_cpu_fraction", Round(cpu_s / wall_s, 4)},
                 {"coordinator_peak_rss_mb", Round(peak_rss_mb, 1)},
                 {"simulator_cpu_s", Round(own_s, 3)},
                 {"status_reply_max_ms", Round(Percentile(simulator.status_ms(), 1.0), 2)},
                 {"status_reply_p50_ms", Round(Percentile(simulator.status_ms(), 0.5), 2)},
                 {"status_reply_p99_ms", Round(Percentile(simulator.status_ms(), 0.99), 2)},
                 {"status_replies", static_cast<int64_t>(simulator.status_ms().size())},
                 {"coordinator_heartbeats", tally.coordinator_heartbeats},
                 {"register_s", Round(register_s, 3)},
                 {"registers_sent", tally.registers_sent},
                 {"simulator_heartbeat_late_max_ms", Round(tally.heartbeat_late_max_ms, 2)},
                 {"reregistrations", tally.reregistrations},
                 {"coordinator_silences", tally.coordinator_silences},
                 {"errors", tally.errors},
                 {"counters", counters}};
  if (!idle) {
    report["jobs"] = options.jobs;
    report["job_delay_ms"] = options.job_delay_ms;
    report["job_delay_jitter"] = options.job_delay_jitter;
    report["sweeps"] = simulator.sweeps();
    report["jobs_done"] = totals["done"];
    report["result_rows_in_db"] = stored_rows;
    report["jobs_per_s"] = Round(totals["done"].get<double>() / wall_s, 1);
    report["coordinator_cpu_ms_per_job"] =
        Round(1000 * cpu_s / std::max<double>(1, options.jobs), 3);
    auto spread = [](const std::vector<double>& ms) {
      return json{{"n", ms.size()},
                  {"p50", Round(Percentile(ms, 0.5), 3)},
                  {"p99", Round(Percentile(ms, 0.99), 3)},
                  {"max", Round(Percentile(ms, 1.0), 3)}};
    };
    report["dispatch_latency_ms"] = spread(tally.dispatch_latency_ms);
    // Job committed -> received: each agent's first job apart (the whole fleet idle at
    // once gets one burst of offers as large as the fleet), then every later job.
    report["commit_to_received_first_job_ms"] = spread(tally.commit_to_received_first_ms);
    report["commit_to_received_ms"] = spread(tally.commit_to_received_ms);
    report["submit_reply_max_ms"] = Round(simulator.max_submit_ms(), 2);
    const std::vector<double>& probes = simulator.probe_submit_ms();
    report["small_submit_reply_ms"] = {{"n", probes.size()},
                                       {"p50", Round(Percentile(probes, 0.5), 2)},
                                       {"max", Round(Percentile(probes, 1.0), 2)}};
    report["jobs_failed"] = totals["failed"];
    report["attempts_lost"] = counters.value("requeued_jobs", int64_t{0});
    report["duplicate_answers"] = tally.duplicate_answers;
    report["results_sent"] = tally.results_sent;
    report["result_resends"] = tally.result_resends;
    report["offers_while_busy"] = tally.offers_while_busy;
    report["acks"] = tally.acks;
  }
  std::cout << report.dump() << std::endl;

  std::cerr << "fleet load: " << options.agents << " agents, "
            << (idle ? "idle for " + std::to_string(options.idle_s) + " s"
                     : std::to_string(options.jobs) + " jobs")
            << "\n";
  auto row = [](const std::string& what, const json& value) {
    std::cerr << "  " << what << std::string(what.size() < 38 ? 38 - what.size() : 1, ' ')
              << (value.is_string() ? value.get<std::string>() : value.dump()) << "\n";
  };
  row("fleet registered in s", report["register_s"]);
  row("wall s", report["wall_s"]);
  if (!idle) {
    row("jobs done / failed", json(totals["done"].dump() + " / " + totals["failed"].dump()));
    row("result rows in the database", report["result_rows_in_db"]);
    row("jobs/s", report["jobs_per_s"]);
    row("coordinator CPU ms per job", report["coordinator_cpu_ms_per_job"]);
    row("job committed -> received p50 / p99 ms",
        json(report["commit_to_received_ms"]["p50"].dump() + " / " +
             report["commit_to_received_ms"]["p99"].dump()));
    row("  agents' first jobs p50 / p99 ms",
        json(report["commit_to_received_first_job_ms"]["p50"].dump() + " / " +
             report["commit_to_received_first_job_ms"]["p99"].dump()));
    row("result sent -> next job p50 / p99 ms",
        json(report["dispatch_latency_ms"]["p50"].dump() + " / " +
             report["dispatch_latency_ms"]["p99"].dump()));
    row("submit reply max ms", report["submit_reply_max_ms"]);
    row("1-job submit at full load p50 / max ms",
        json(report["small_submit_reply_ms"]["p50"].dump() + " / " +
             report["small_submit_reply_ms"]["max"].dump()));
    row("attempts lost", report["attempts_lost"]);
    row("duplicate answers", report["duplicate_answers"]);
    row("result resends", report["result_resends"]);
  }
  row("coordinator CPU s", report["coordinator_cpu_s"]);
  row("coordinator CPU, fraction of a core", report["coordinator_cpu_fraction"]);
  row("coordinator peak RSS MiB", report["coordinator_peak_rss_mb"]);
  row("status reply p50 / p99 / max ms",
      json(report["status_reply_p50_ms"].dump() + " / " + report["status_reply_p99_ms"].dump() +
           " / " + report["status_reply_max_ms"].dump()));
  row("simulator CPU s", report["simulator_cpu_s"]);
  row("simulator heartbeat lateness max ms", report["simulator_heartbeat_late_max_ms"]);
  for (const std::string& text : tally.error_texts) row("error", json(text));
  if (options.keep_dir) row("kept", json(dir));
  if (!ran.ok()) {
    std::cerr << ran.message() << "; coordinator log: " << dir
              << "/coordinator.log (--keep-dir keeps it)\n";
    return 2;
  }
  return 0;
}

}  // namespace
}  // namespace benchfleet::fleet_load

int main(int argc, char** argv) {
  benchfleet::fleet_load::Options options;
  options.coordinator = BENCHFLEET_COORDINATOR_BIN;
  CLI::App app{"bench_fleet_load: a real coordinator under N simulated agents and M jobs"};
  app.add_option("--agents", options.agents, "simulated agents, one DEALER socket each")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--jobs", options.jobs, "jobs to submit (sweeps of at most 100000)")
      ->check(CLI::Range(int64_t{1}, int64_t{2000000}))
      ->capture_default_str();
  app.add_option("--job-delay-ms", options.job_delay_ms,
                 "how long an agent holds a job before its result")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--job-delay-jitter", options.job_delay_jitter,
                 "each job's delay is the delay x U(1 - J, 1 + J) (fixed seed); 0: all in step")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option(
         "--idle-s", options.idle_s,
         "submit nothing; heartbeat this many seconds and report the coordinator's idle CPU")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout-s", options.timeout_s, "give up when the jobs are not done by then")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--heartbeat-ms", options.heartbeat_ms, "the coordinator's heartbeat interval")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  app.add_option("--liveness", options.liveness, "the coordinator's liveness")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--coordinator", options.coordinator, "benchfleet-coordinator to run")
      ->capture_default_str();
  app.add_flag("--keep-dir", options.keep_dir,
               "keep the temporary directory (database, coordinator log)");
  CLI11_PARSE(app, argc, argv);
  return benchfleet::fleet_load::Run(options);
}
