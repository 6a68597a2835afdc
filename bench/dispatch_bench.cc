// How long the coordinator takes to hand out a job when the queue is long: an
// in-process coordinator over a real SQLite file (WAL, synchronous=FULL) with N queued
// jobs no registered agent can run ahead of the jobs the agents can. Each round, as in
// the daemon's loop: the agents' results, stored in one group commit, then their next
// hand-outs. Reports wall time and CPU per job, and peak RSS.
// usage: bench_dispatch [--queued N] [--agents A] [--handouts H] [--dir DIR]
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <vector>

#include "common/messages.h"
#include "common/status_reply.h"
#include "coordinator/coordinator.h"

using benchfleet::json;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(p * (values.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_dispatch: hand-out time of the coordinator with a long queue"};
  int queued = 100000, agents = 10, handouts = 1000;
  std::string dir =
      std::filesystem::temp_directory_path() / ("bench-dispatch-" + std::to_string(getpid()));
  // Its sweeps and the matched one must all be among the 20 that `status` lists.
  app.add_option("--queued", queued, "queued jobs no agent can run (in sweeps of 100000)")
      ->check(CLI::Range(0, 1900000));
  app.add_option("--agents", agents, "registered CPU agents");
  app.add_option("--handouts", handouts, "jobs handed out and answered");
  app.add_option("--dir", dir, "directory for the database (removed afterwards)");
  CLI11_PARSE(app, argc, argv);
  std::filesystem::create_directories(dir);

  std::vector<json> offers;
  json last_status;
  bool refused = false;
  benchfleet::CoordinatorOptions options;
  options.default_processes = 1;  // each job runs once
  options.db_path = dir + "/results.db";
  options.heartbeat_ms = 3600 * 1000;
  benchfleet::Coordinator coordinator(options);
  auto started = coordinator.StartInProcess(
      [&](benchfleet::Side, const std::string& peer, const benchfleet::Message& message) {
        if (message.type == "job") offers.push_back({{"peer", peer}, {"body", message.body}});
        if (message.type == "status_reply") last_status = message.body;
        if (message.type == "error") {
          std::cerr << "coordinator: " << message.body.dump() << "\n";
          refused = true;
        }
        return benchfleet::Status::Ok();
      });
  if (!started.ok()) {
    std::cerr << started.ToString() << "\n";
    return 1;
  }
  // A client's request as the CLI frames it: the typed request's fields in the envelope.
  auto client_frame = [](const char* type, json fields, int request_id) {
    benchfleet::Message message = benchfleet::MakeMessage(type, std::move(fields));
    message.body["request_id"] = request_id;
    return benchfleet::Encode(message);
  };
  auto submit = [&](const json& sweep) {
    coordinator.HandleClient(
        {"bench", client_frame("submit", benchfleet::SubmitRequest{sweep, ""}.ToJson(), 1)});
  };
  Clock::time_point t0 = Clock::now();
  for (int done = 0; done < queued;) {
    int count = std::min(100000, queued - done);
    json batches = json::array();
    for (int b = 1; b <= count; ++b) batches.push_back(b);
    submit({{"name", "unmatched"},
            {"placement", "any"},
            {"select", {{"gpu_model", "H100"}}},
            {"matrix", {{"model", "mlp"}, {"batch_size", batches}}}});
    done += count;
  }
  json batches = json::array();
  for (int b = 1; b <= handouts; ++b) batches.push_back(b);
  submit({{"name", "matched"},
          {"placement", "any"},
          {"matrix", {{"model", "mlp"}, {"batch_size", batches}}}});
  // A sweep of more than 1,000 jobs is checked and stored a slice per round (Tick), so
  // the rounds go on until every job of every sweep is stored: until then the queue
  // is shorter than asked, and the matched jobs are not all there to hand out.
  const int64_t expected = static_cast<int64_t>(queued) + handouts;
  for (;;) {
    coordinator.BeginRound();
    coordinator.Tick();
    coordinator.EndRound();
    last_status = nullptr;
    coordinator.HandleClient(
        {"bench", client_frame("status", benchfleet::SweepRequest{}.ToJson(), 2)});
    if (!last_status.is_object()) {
      std::cerr << "no status reply from the coordinator\n";
      return 1;
    }
    auto status = benchfleet::StatusReply::FromJson(last_status);
    if (!status.ok()) {
      std::cerr << "status reply: " << status.status().message() << "\n";
      return 1;
    }
    int64_t stored = 0;
    for (const benchfleet::SweepOverview& sweep : status->sweeps)
      stored += sweep.jobs.total - sweep.jobs.storing;
    if (stored == expected) break;
    if (refused) return 1;  // a sweep was refused: the coordinator's error is printed above
  }
  double enqueue_s = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int a = 0; a < agents; ++a) {
    const std::string name = "cpu-" + std::to_string(a);
    coordinator.HandleAgent(
        {name + "/1", json({{"v", 1},
                            {"type", "register"},
                            {"agent", name},
                            {"tags", json::array()},
                            {"capabilities", {{"host", {{"machine_id", name}}}}}})
                          .dump()});
  }
  // As the daemon's loop does: the agents' messages of one round (here: the results of
  // every job offered in the previous one) in one group commit, offers sent after it.
  std::vector<double> tick_ms, round_ms_per_job;
  int handed = 0;
  const double cpu_start = CpuSeconds();
  Clock::time_point run_start = Clock::now();
  while (handed < handouts) {
    if (offers.empty()) {
      // Nothing offered since the last results: a Tick dispatches to the idle agents.
      Clock::time_point tick = Clock::now();
      coordinator.BeginRound();
      coordinator.Tick();
      coordinator.EndRound();
      if (offers.empty()) break;
      tick_ms.push_back(Ms(Clock::now() - tick) / static_cast<double>(offers.size()));
    }
    std::vector<json> round;
    round.swap(offers);
    Clock::time_point round_start = Clock::now();
    coordinator.BeginRound();
    for (const json& offer : round) {
      const json& body = offer["body"];
      json result = {{"ok", true},
                     {"stats",
                      {{"n", 10},
                       {"median_ms", 1.0},
                       {"mean_ms", 1.0},
                       {"min_ms", 0.9},
                       {"max_ms", 1.1},
                       {"noisy", false}}}};
      // Storing the result also dispatches the agent's next job.
      coordinator.HandleAgent({offer["peer"].get<std::string>(), json({{"v", 1},
                                                                       {"type", "result"},
                                                                       {"job_id", body["job_id"]},
                                                                       {"attempt", body["attempt"]},
                                                                       {"result", result}})
                                                                     .dump()});
      ++handed;
    }
    coordinator.EndRound();
    round_ms_per_job.push_back(Ms(Clock::now() - round_start) / static_cast<double>(round.size()));
  }
  double run_s = std::chrono::duration<double>(Clock::now() - run_start).count();
  double cpu_ms_per_job = (CpuSeconds() - cpu_start) * 1000 / std::max(handed, 1);
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  printf("queued unmatched: %d, agents: %d, jobs handed out and stored: %d (enqueued in %.1f s)\n",
         queued, agents, handed, enqueue_s);
  printf("dispatch to idle agents (Tick / offers, %zu ticks): median %.3f ms, p99 %.3f ms\n",
         tick_ms.size(), Percentile(tick_ms, 0.5), Percentile(tick_ms, 0.99));
  printf(
      "a round of results (store, one commit, acks, next hand-outs), per job: median %.3f ms, "
      "p99 %.3f ms\n",
      Percentile(round_ms_per_job, 0.5), Percentile(round_ms_per_job, 0.99));
  printf("CPU per job: %.3f ms\n", cpu_ms_per_job);
  printf("throughput: %.0f jobs/s\n", handed / run_s);
  printf("peak RSS: %.1f MiB\n", usage.ru_maxrss / 1024.0);
  std::filesystem::remove_all(dir);
  if (handed < handouts) {
    std::cerr << "only " << handed << " of " << handouts << " jobs were handed out\n";
    return 1;
  }
  return 0;
}
