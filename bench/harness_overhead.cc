// bench_harness_overhead: what the worker's harness adds to a forward pass's
// median (bench/harness_overhead.sh). It reads the worker's job file and sets
// the process up with the worker's own code — ApplyThreadSettings,
// ApplyBackendSettings, the OpenMP wait policy it is started under, the seed and the
// model build — then alternates, in this one process, two ways of timing the
// same forward pass:
//  * plain: the model's Forward called in a bare loop under one InferenceMode
//    guard, the clock read after every iteration;
//  * worker: the worker's PrepareWorkload closure (an identical model built
//    from the same seed, InferenceMode per call) timed by its MeasureWorkload
//    sampler (blocks, regime and convergence checks), summarized by Summarize.
// Alternating in one process (plain, worker; then worker, plain; ...) gives
// both the same threads, CPUs and allocator, so that what differs is the
// harness, not the process; separate processes on this VM differ by up to 20%
// from run to run on their own.
//
// The plain side reports the statistic the worker reports: the median over
// consecutive blocks of k iterations, k by the worker's block rule (blocks of
// at least kMinBlockSeconds, aimed kBlockTargetMargin above it); and also the
// median of single iterations, which is lower whenever iteration times are
// skewed to the right (a slow iteration lifts its block's mean, not a single
// iteration's median): that gap is the workload's distribution, not the
// harness.
#include <c10/core/InferenceMode.h>
#include <torch/utils.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/median.h"
#include "worker/host/torch_runtime.h"
#include "worker/measure/clock.h"
#include "worker/measure/sampler.h"
#include "worker/measure/stats.h"
#include "worker/models/model.h"
#include "worker/models/workload.h"

namespace {

using benchfleet::Median;
using benchfleet::worker::kBlockTargetMargin;
using benchfleet::worker::kMinBlockSeconds;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Alternates a plain timing loop and the worker's sampler over a job's "
      "forward pass, set up as the worker does; prints JSON.",
      "bench_harness_overhead"};
  std::string job_path;
  double warmup_s = 0.5;
  double time_s = 1.0;
  int pairs = 10;
  app.add_option("--job", job_path, "the worker's job file (fp32 CPU inference)")->required();
  app.add_option("--warmup", warmup_s, "untimed seconds first");
  app.add_option("--time", time_s, "seconds each side is timed, per pair")
      ->check(CLI::PositiveNumber);
  app.add_option("--pairs", pairs, "plain/worker pairs, alternating which goes first")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  nlohmann::json job;
  try {
    std::ifstream in(job_path);
    job = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::cerr << job_path << ": " << e.what() << "\n";
    return 1;
  }
  benchfleet::JobSpecError error;
  const std::optional<benchfleet::JobSpec> spec = benchfleet::ParseJobSpec(job, &error);
  if (!spec) {
    std::cerr << job_path << ": " << error.message << "\n";
    return 1;
  }
  if (spec->device != "cpu" || spec->dtype != "fp32" || spec->mode != "inference" ||
      spec->model == "torchscript") {
    std::cerr << "the reference loop times fp32 CPU inference of a zoo model only\n";
    return 1;
  }
  if (std::string e = benchfleet::worker::ApplyThreadSettings(spec->threads, spec->interop_threads);
      !e.empty()) {
    std::cerr << e << "\n";
    return 1;
  }
  if (std::string e = benchfleet::worker::ApplyBackendSettings(spec->onednn, false); !e.empty()) {
    std::cerr << e << "\n";
    return 1;
  }
  torch::manual_seed(spec->seed);
  benchfleet::worker::BuiltModel built = benchfleet::worker::BuildZooModel(*spec);
  built.model->To(torch::Device(torch::kCPU), torch::kFloat);
  benchfleet::worker::Model& model = *built.model;
  const std::vector<torch::Tensor>& inputs = built.inputs;
  const benchfleet::worker::PreparedWorkload workload = benchfleet::worker::PrepareWorkload(*spec);

  // The warm-up's pace sizes the plain loop's buffer, so no reallocation lands in its
  // timed region (each warm-up turn runs the model twice).
  double seconds_per_forward = 0;
  {
    c10::InferenceMode guard;
    const double warmup_start = Now();
    std::size_t turns = 0;
    double elapsed = 0;
    do {
      model.Forward(inputs);
      workload.iteration();
      ++turns;
      elapsed = Now() - warmup_start;
    } while (elapsed < warmup_s);
    seconds_per_forward = elapsed / (2.0 * static_cast<double>(turns));
  }
  const auto expected_iterations =
      static_cast<std::size_t>(2.0 * time_s / std::max(seconds_per_forward, 1e-7)) + 64;

  struct PlainSide {
    double block_median_ms;
    double iteration_median_ms;
    std::size_t iters_per_block;
  };
  auto run_plain = [&]() {
    c10::InferenceMode guard;
    std::vector<double> iterations_ms;
    iterations_ms.reserve(expected_iterations);  // twice the warm-up's pace
    const double start = Now();
    double now = start;
    do {
      const double before = now;
      model.Forward(inputs);
      now = Now();
      iterations_ms.push_back((now - before) * 1e3);
    } while (now - start < time_s);
    const double single_median_ms = Median(iterations_ms);
    const auto k = static_cast<std::size_t>(
        std::max(1.0, std::ceil(kMinBlockSeconds * kBlockTargetMargin * 1e3 / single_median_ms)));
    std::vector<double> blocks_ms;
    for (std::size_t i = 0; i + k <= iterations_ms.size(); i += k) {
      double sum = 0;
      for (std::size_t j = i; j < i + k; ++j) sum += iterations_ms[j];
      blocks_ms.push_back(sum / static_cast<double>(k));
    }
    if (blocks_ms.empty()) blocks_ms.push_back(single_median_ms);
    return PlainSide{Median(blocks_ms), single_median_ms, k};
  };
  // The worker's sampler for exactly time_s (its minimum and maximum), with the
  // job's IQR target; the shortest warm-up it allows, as both sides are warm.
  const benchfleet::worker::TimingOptions timing{1e-9, time_s, time_s, spec->timing.target_ci};
  auto run_worker = [&]() {
    const benchfleet::worker::Measurement m = benchfleet::worker::MeasureWorkload(
        workload.iteration, timing, benchfleet::worker::SystemClock(), workload.block_end);
    return std::make_pair(
        benchfleet::worker::Summarize(m.samples_ms, spec->timing.target_ci).median_ms,
        m.iters_per_sample);
  };

  nlohmann::json rows = nlohmann::json::array();
  std::vector<double> ratios;
  for (int pair = 0; pair < pairs; ++pair) {
    PlainSide plain{};
    std::pair<double, std::int64_t> worker;
    if (pair % 2 == 0) {
      plain = run_plain();
      worker = run_worker();
    } else {
      worker = run_worker();
      plain = run_plain();
    }
    ratios.push_back(worker.first / plain.block_median_ms - 1);
    rows.push_back({{"plain_block_median_ms", plain.block_median_ms},
                    {"plain_iteration_median_ms", plain.iteration_median_ms},
                    {"plain_iters_per_block", plain.iters_per_block},
                    {"worker_median_ms", worker.first},
                    {"worker_iters_per_sample", worker.second},
                    {"overhead", ratios.back()}});
  }
  nlohmann::json out = {{"overhead_median", Median(ratios)},
                        {"pairs", rows},
                        {"runtime", benchfleet::worker::RuntimeInfo(false)}};
  std::cout << out.dump() << std::endl;
  return 0;
}
