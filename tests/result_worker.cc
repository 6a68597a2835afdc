// benchfleet-result-worker: a worker for the tests of dispatch, leases, spools and faults,
// which are about what the daemons do with a job and its result, not about what LibTorch
// measures. It takes the real worker's command line (schemas/worker.md), parses the job
// with the same rules (common/job_spec.h), and writes a well-formed result after the
// job's own time (timing.warmup_s + timing.min_time_s), sleeping instead of computing:
// it starts in milliseconds and leaves the CPUs to the daemons under test. Its samples
// are the measured lengths of its sleeps.
//
// What it does is told by the environment it inherits from the agent,
// BENCHFLEET_RESULT_WORKER: a comma-separated list of BEHAVIOUR or BEHAVIOUR@BATCH (only
// the job of that batch_size), BEHAVIOUR one of
//   ok     write the result (the default);
//   fail   write an "ok": false result naming the reason, exit 2;
//   crash  abort (SIGABRT) once the job's time is up, writing nothing;
//   hang   never finish (the agent's timeout must kill it).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "common/job_spec.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitJobFailed = 2;
// The samples of one job: enough for a median and its interval, few enough to be cheap.
constexpr int kSamples = 40;

// The behaviour BENCHFLEET_RESULT_WORKER gives the job of `batch_size`; "ok" by default.
std::string BehaviourFor(int64_t batch_size) {
  const char* told = std::getenv("BENCHFLEET_RESULT_WORKER");
  std::string behaviour = "ok";
  if (told == nullptr) return behaviour;
  std::stringstream list(told);
  std::string item;
  while (std::getline(list, item, ',')) {
    const size_t at = item.find('@');
    if (at == std::string::npos) {
      behaviour = item;
    } else if (std::strtoll(item.c_str() + at + 1, nullptr, 10) == batch_size) {
      return item.substr(0, at);  // a job named by its batch comes first
    }
  }
  return behaviour;
}

int WriteResult(const std::string& path, const json& result, int code) {
  if (!benchfleet::WriteFileAtomically(path, result.dump() + "\n").ok()) {
    std::cerr << "benchfleet-result-worker: cannot write " << path << "\n";
    return kExitInternal;
  }
  return code;
}

// A failed result; the ids are echoed only when the job holds them as integers (a job
// refused for its ids must not throw here).
json Failure(const json& job, const std::string& error) {
  auto id = [&](const char* key, int64_t absent) {
    return job.contains(key) && job[key].is_number_integer() ? job[key].get<int64_t>() : absent;
  };
  return {
      {"ok", false}, {"job_id", id("job_id", 0)}, {"attempt", id("attempt", 1)}, {"error", error}};
}

// Sleeps `seconds` in kSamples slices and returns each slice's measured length in ms.
std::vector<double> TimedSleeps(double seconds) {
  std::vector<double> samples;
  const auto slice = std::chrono::duration<double>(seconds / kSamples);
  for (int i = 0; i < kSamples; ++i) {
    const auto start = Clock::now();
    std::this_thread::sleep_for(slice);  // the job's time, slept: a sample
    samples.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return samples;
}

json Stats(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  return {{"n", n},
          {"median_ms", median},
          {"mean_ms", mean},
          {"min_ms", samples.front()},
          {"max_ms", samples.back()},
          {"noisy", false}};
}

int RunJob(const std::string& job_path, const std::string& result_path) {
  std::ifstream in(job_path);
  const json job = json::parse(in, nullptr, false);
  if (!job.is_object())
    return WriteResult(result_path, Failure(json::object(), "job: not a JSON object"),
                       kExitJobFailed);
  benchfleet::JobSpecError error;
  const std::optional<benchfleet::JobSpec> spec = benchfleet::ParseJobSpec(job, &error);
  if (!spec)
    return WriteResult(result_path, Failure(job, error.field + ": " + error.message),
                       kExitJobFailed);
  if (!benchfleet::RunsInOneProcess(*spec)) {
    return WriteResult(result_path, Failure(job, "the result worker runs jobs of one process only"),
                       kExitJobFailed);
  }
  const std::string behaviour = BehaviourFor(spec->batch_size);
  if (behaviour == "hang") {
    for (;;) pause();
  }
  // The job's warm-up and timed span, slept through.
  std::this_thread::sleep_for(std::chrono::duration<double>(spec->timing.warmup_s));
  const std::vector<double> samples = TimedSleeps(spec->timing.min_time_s);
  if (behaviour == "crash") std::abort();
  if (behaviour == "fail")
    return WriteResult(result_path, Failure(job, "told to fail"), kExitJobFailed);
  if (behaviour != "ok") {
    std::cerr << "benchfleet-result-worker: unknown behaviour \"" << behaviour << "\"\n";
    return kExitInternal;
  }
  json result = {{"ok", true},
                 {"job_id", spec->job_id},
                 {"attempt", spec->attempt},
                 {"model", spec->model},
                 {"mode", spec->mode},
                 {"dtype", spec->dtype},
                 {"device", spec->device},
                 {"batch_size", spec->batch_size},
                 {"threads", spec->threads},
                 {"interop_threads", spec->interop_threads},
                 {"stats", Stats(samples)},
                 {"samples_ms", samples}};
  return WriteResult(result_path, result, kExitOk);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args == std::vector<std::string>{"--probe"}) {
    // What the agent sends on as capabilities.torch: no LibTorch, eager jobs only.
    std::cout << json{{"torch_version", "none (benchfleet-result-worker)"},
                      {"cuda_available", false},
                      {"cuda_device_count", 0},
                      {"gpus", json::array()},
                      {"techniques", {"eager"}}}
                     .dump()
              << "\n";
    return kExitOk;
  }
  if (args.size() == 4 && args[0] == "--job" && args[2] == "--out") return RunJob(args[1], args[3]);
  std::cerr << "usage: benchfleet-result-worker --job JOB.json --out RESULT.json | --probe\n";
  return kExitInternal;
}
