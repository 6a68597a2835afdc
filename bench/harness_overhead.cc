// bench_harness_overhead: the MLP forward pass timed by the plainest loop
// possible, as the reference the worker's median is compared with
// (bench/harness_overhead.sh). Builds the model exactly as the worker does —
// Linear layers with ReLU between, torch::manual_seed(seed) before the
// weights, input randn(batch, layers[0]), InferenceMode — and sizes the same
// pools: ATen intra-op threads, one inter-op thread, OpenBLAS's pool.
// OMP_WAIT_POLICY and CPU affinity come from the caller's environment
// (the script sets them as the agent does), since libgomp reads the policy
// before main() runs.
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <dlfcn.h>
#include <sched.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<int> Affinity() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times an MLP forward pass with a plain loop; prints JSON.",
               "bench_harness_overhead"};
  std::vector<std::int64_t> layers = {1024, 1024, 10};
  std::int64_t batch = 64;
  int threads = 1;
  std::uint64_t seed = 0;
  double warmup_s = 0.5;
  double window_s = 1.0;
  int windows = 10;
  app.add_option("--layers", layers, "feature sizes, input first")->delimiter(',');
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "intra-op and OpenBLAS threads")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "torch::manual_seed before the weights");
  app.add_option("--warmup", warmup_s, "untimed seconds first");
  app.add_option("--window", window_s, "seconds per timed window");
  app.add_option("--windows", windows, "timed windows")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (layers.size() < 2) {
    std::cerr << "--layers needs at least two sizes\n";
    return 1;
  }

  at::set_num_threads(threads);
  at::set_num_interop_threads(1);
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(threads);
  }

  torch::manual_seed(seed);
  torch::nn::Sequential net;
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) {
    net->push_back(torch::nn::Linear(layers[i], layers[i + 1]));
    if (i + 2 < layers.size()) net->push_back(torch::nn::ReLU());
  }
  net->eval();
  const torch::Tensor input = torch::randn({batch, layers[0]});

  c10::InferenceMode guard;
  const double warmup_start = Now();
  do {
    net->forward(input);
  } while (Now() - warmup_start < warmup_s);

  // Each window's mean per-iteration time, and every iteration's own time:
  // the clock is read once per iteration anyway, to know when the window
  // ends. On a loaded host the window means absorb time slices lost to other
  // processes while the median of single iterations mostly does not, so the
  // two bracket the worker's median of short blocks.
  std::vector<double> means_ms;
  std::vector<double> iterations_ms;
  for (int w = 0; w < windows; ++w) {
    std::int64_t iterations = 0;
    const double start = Now();
    double now = start;
    do {
      const double before = now;
      net->forward(input);
      ++iterations;
      now = Now();
      iterations_ms.push_back((now - before) * 1e3);
    } while (now - start < window_s);
    means_ms.push_back((now - start) * 1e3 / static_cast<double>(iterations));
  }
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  nlohmann::json out = {{"median_ms", Median(means_ms)},
                        {"median_iteration_ms", Median(iterations_ms)},
                        {"window_means_ms", means_ms},
                        {"threads", threads},
                        {"batch_size", batch},
                        {"layers", layers},
                        {"omp_wait_policy", policy != nullptr ? policy : nullptr},
                        {"affinity", Affinity()}};
  std::cout << out.dump() << std::endl;
  return 0;
}
