// bench_stock_reference: the MLP forward pass as a user's own LibTorch program runs it,
// the independent reference the worker's medians are held against
// (bench/stock_reference.sh, bench/README.md).
//
// Nothing of benchfleet is linked or included: the model, the int8 conversion and the
// timing loop are written here from LibTorch's public API alone, and the process runs in
// whatever environment it is started with, the quantized engine LibTorch picks by default, (the
// script starts it with none of the OMP_* / OPENBLAS_* variables the agent sets). The only setting
// made is the one a user makes, torch::set_num_threads. Timing is torch.utils.benchmark's
// blocked_autorange in C++, without Python's per-call overhead: blocks of k forward passes, k
// chosen so a block lasts at least 1 ms, each block's time / k a sample, their median reported.
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// One Linear layer in fp32, bf16 or as torch.ao.nn.quantized.dynamic.Linear: weights
// per-tensor symmetric qint8 (MinMaxObserver: scale = max|w| / 127.5), activations
// quantized per call with reduce_range, as quantize_dynamic's default qconfig does.
struct Layer {
  torch::nn::Linear fp32{nullptr};
  c10::IValue packed;  // int8: quantized::linear_prepack's result

  torch::Tensor Forward(const torch::Tensor& x, bool int8) {
    if (!int8) return fp32->forward(x);
    static const c10::OperatorHandle op =
        c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
    torch::jit::Stack stack{x, packed, /*reduce_range=*/true};
    op.callBoxed(&stack);
    return stack.at(0).toTensor();
  }
};

void QuantizeDynamic(Layer& layer) {
  static const c10::OperatorHandle prepack =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  const torch::Tensor w = layer.fp32->weight.detach();
  const double scale = std::max(w.abs().max().item<double>() / 127.5, 1.1920928955078125e-07);
  torch::jit::Stack stack{torch::quantize_per_tensor(w, scale, 0, torch::kQInt8),
                          c10::optional<torch::Tensor>(layer.fp32->bias.detach())};
  prepack.callBoxed(&stack);
  layer.packed = stack.at(0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The mlp forward pass in a plain LibTorch loop; prints {median_ms, ...} as JSON.",
               "bench_stock_reference"};
  std::vector<std::int64_t> layers = {1024, 1024, 10};
  std::string dtype = "fp32";
  std::int64_t batch = 1;
  int threads = 1;
  double warmup_s = 0.2;
  double time_s = 2;
  app.add_option("--layers", layers, "feature sizes, input first")->delimiter(',');
  app.add_option("--dtype", dtype, "fp32, bf16 or int8")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  app.add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "torch::set_num_threads")->check(CLI::PositiveNumber);
  app.add_option("--warmup-s", warmup_s, "untimed forward passes for this long");
  app.add_option("--time-s", time_s, "timed blocks for this long")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (layers.size() < 2) {
    std::cerr << "--layers needs at least two sizes\n";
    return 1;
  }

  torch::set_num_threads(threads);
  torch::manual_seed(0);
  const bool int8 = dtype == "int8";
  const bool bf16 = dtype == "bf16";
  std::vector<Layer> net;
  for (size_t i = 0; i + 1 < layers.size(); ++i) {
    Layer layer;
    layer.fp32 = torch::nn::Linear(layers[i], layers[i + 1]);
    layer.fp32->eval();
    if (bf16) layer.fp32->to(torch::kBFloat16);
    if (int8) QuantizeDynamic(layer);
    net.push_back(std::move(layer));
  }
  torch::Tensor input = torch::randn({batch, layers.front()});
  if (bf16) input = input.to(torch::kBFloat16);

  c10::InferenceMode inference;
  auto forward = [&] {
    torch::Tensor x = input;
    for (size_t i = 0; i < net.size(); ++i) {
      x = net[i].Forward(x, int8);
      if (i + 1 < net.size()) x = torch::relu(x);
    }
    return x;
  };

  const auto warmup_end = Clock::now() + std::chrono::duration<double>(warmup_s);
  double last_s = 0;
  do {
    const auto before = Clock::now();
    forward();
    last_s = Seconds(before, Clock::now());
  } while (Clock::now() < warmup_end);

  constexpr double kMinBlockS = 1e-3;
  std::int64_t k =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(kMinBlockS / last_s)));
  std::vector<double> samples_ms;
  const auto start = Clock::now();
  while (Seconds(start, Clock::now()) < time_s) {
    const auto before = Clock::now();
    for (std::int64_t i = 0; i < k; ++i) forward();
    const double block_s = Seconds(before, Clock::now());
    if (block_s < kMinBlockS) {  // the guess was too small: grow the block, start over
      k *= 2;
      samples_ms.clear();
      continue;
    }
    samples_ms.push_back(block_s * 1e3 / static_cast<double>(k));
  }
  if (samples_ms.empty()) {
    std::cerr << "no block completed within --time-s\n";
    return 1;
  }
  std::vector<double> sorted = samples_ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  nlohmann::json out = {{"median_ms", median},
                        {"n", n},
                        {"iters_per_block", k},
                        {"min_ms", sorted.front()},
                        {"dtype", dtype},
                        {"batch", batch},
                        {"threads", threads},
                        {"intraop_threads", at::get_num_threads()},
                        {"qengine", int8 ? c10::toString(at::globalContext().qEngine()) : "none"}};
  std::cout << out.dump() << std::endl;
  return 0;
}
