// Int8 dynamic quantization of Linear layers from C++. LibTorch 1.13 has no C++
// quantize_dynamic; the quantized operators it is built from are registered with
// the dispatcher and called here boxed, without their (internal) C++ types.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "worker/models/model.h"

namespace benchfleet::worker {
namespace {

// torch.ao.quantization's MinMaxObserver with qint8 and per_tensor_symmetric maps
// [-max|w|, max|w|] onto (quant_max - quant_min) / 2 = (127 - (-128)) / 2 steps.
constexpr double kQint8SymmetricSteps = 127.5;

// As torch.ao.nn.quantized.dynamic.Linear: activations are quantized to 7 bits so
// that int8 x int8 products cannot saturate the int16 accumulators of CPUs without
// VNNI.
constexpr bool kReduceRange = true;

// Looked up once; operator handles stay valid for the life of the process.
const c10::OperatorHandle& LinearPrepack() {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  return op;
}

const c10::OperatorHandle& LinearDynamic() {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
  return op;
}

// Every module of the tree, `root` included (Module::modules(true) would need root
// to be owned by a shared_ptr).
std::vector<torch::nn::Module*> AllModules(torch::nn::Module& root) {
  std::vector<torch::nn::Module*> all = {&root};
  for (const auto& m : root.modules(/*include_self=*/false)) all.push_back(m.get());
  return all;
}

}  // namespace

DenseImpl::DenseImpl(std::int64_t in_features, std::int64_t out_features)
    : linear(register_module("linear", torch::nn::Linear(in_features, out_features))) {}

torch::Tensor DenseImpl::forward(const torch::Tensor& x) {
  // ATen's linear, as Python's nn.Linear calls it: it folds a contiguous [batch, seq,
  // features] input into rows and adds the bias in the GEMM (cuBLASLt's bias epilogue).
  // The C++ frontend's LinearImpl::forward fuses only 2-D inputs; for a transformer's
  // 3-D ones it ran a GEMM and then a separate add per layer, which made a bf16
  // transformer step at batch 64 on an H200 31% slower than Python's (docs/gpu.md).
  if (!quantized()) return at::linear(x, linear->weight, linear->bias);
  // The quantized kernel takes [rows, features]. A contiguous 2-D input (an mlp's) goes
  // as it is: folding it anyway costs three more operators per layer, 6% of an int8
  // mlp's 0.1 ms forward pass against a plain LibTorch loop (bench/README.md).
  if (x.dim() == 2 && x.is_contiguous()) {
    torch::jit::Stack stack{x, packed_, kReduceRange};
    LinearDynamic().callBoxed(&stack);
    return stack.at(0).toTensor();
  }
  // Any leading dimensions (a transformer's [batch, seq, hidden]) are folded into rows.
  std::vector<std::int64_t> out_shape = x.sizes().vec();
  out_shape.back() = linear->options.out_features();
  torch::jit::Stack stack{x.reshape({-1, x.size(-1)}).contiguous(), packed_, kReduceRange};
  LinearDynamic().callBoxed(&stack);
  return stack.at(0).toTensor().view(out_shape);
}

void DenseImpl::QuantizeDynamicInt8() {
  torch::NoGradGuard no_grad;
  const torch::Tensor w = linear->weight.detach().to(torch::kFloat);
  const double amax = w.abs().max().item<double>();
  // The observer's floor for the scale, so that an all-zero weight still quantizes.
  const double scale =
      std::max(amax / kQint8SymmetricSteps, double{std::numeric_limits<float>::epsilon()});
  const torch::Tensor q = torch::quantize_per_tensor(w, scale, /*zero_point=*/0, torch::kQInt8);
  torch::jit::Stack stack{q, c10::optional<torch::Tensor>(linear->bias.detach().to(torch::kFloat))};
  LinearPrepack().callBoxed(&stack);
  packed_ = stack.at(0);
}

int QuantizeDenseLayers(torch::nn::Module& root) {
  int count = 0;
  for (torch::nn::Module* module : AllModules(root)) {
    if (auto* dense = module->as<DenseImpl>()) {
      dense->QuantizeDynamicInt8();
      ++count;
    }
  }
  return count;
}

std::int64_t TensorBytes(const torch::Tensor& t) {
  return t.numel() * static_cast<std::int64_t>(t.element_size());
}

std::int64_t ModuleWeightBytes(torch::nn::Module& root) {
  std::int64_t bytes = 0;
  for (const auto& p : root.parameters()) bytes += TensorBytes(p);
  for (torch::nn::Module* module : AllModules(root)) {
    auto* dense = module->as<DenseImpl>();
    if (dense == nullptr || !dense->quantized()) continue;
    // The forward pass reads the packed copy, one byte per weight; the fp32
    // original stays in memory unread.
    bytes += dense->linear->weight.numel() - TensorBytes(dense->linear->weight);
  }
  return bytes;
}

}  // namespace benchfleet::worker
