// Magnitude (unstructured) and structured pruning of the built-in models. Structured
// pruning keeps every tensor dense and only makes it smaller, so the kernels that time
// it are the ones an unpruned model of that size would use.
#include "worker/models/prune.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "worker/models/workload.h"

namespace benchfleet::worker {
namespace {

namespace nn = torch::nn;
using nlohmann::json;

// Every module below `root`, pre-order (registration order), `root` excluded.
std::vector<nn::Module*> Below(nn::Module& root) {
  std::vector<nn::Module*> all;
  for (const auto& m : root.modules(/*include_self=*/false)) all.push_back(m.get());
  return all;
}

// The weights pruning applies to: those of every Linear and Conv2d layer.
std::vector<torch::Tensor> LayerWeights(nn::Module& root) {
  std::vector<torch::Tensor> weights;
  for (nn::Module* m : Below(root)) {
    if (auto* linear = m->as<nn::LinearImpl>()) weights.push_back(linear->weight);
    if (auto* conv = m->as<nn::Conv2dImpl>()) weights.push_back(conv->weight);
  }
  return weights;
}

// Sets the round(sparsity x size) entries of `w` with the smallest |w| to zero.
void ZeroSmallest(torch::Tensor& w, double sparsity) {
  const auto k = static_cast<std::int64_t>(std::llround(sparsity * static_cast<double>(w.numel())));
  if (k == 0) return;
  torch::Tensor flat = w.data().view({-1});  // the weights are contiguous fp32 here
  const torch::Tensor smallest = std::get<1>(flat.abs().topk(k, /*dim=*/0, /*largest=*/false));
  flat.index_fill_(0, smallest, 0.0);
}

// The rows (dim 0) of `w` to keep: the n - round(ratio x n) (at least one) with the
// largest L1 norm, in their original order.
torch::Tensor KeptRows(const torch::Tensor& w, double ratio) {
  const std::int64_t n = w.size(0);
  const std::int64_t keep = std::max<std::int64_t>(
      1, n - static_cast<std::int64_t>(std::llround(ratio * static_cast<double>(n))));
  const torch::Tensor l1 = w.abs().reshape({n, -1}).sum(1);
  return std::get<0>(std::get<1>(l1.topk(keep, /*dim=*/0, /*largest=*/true)).sort());
}

// Replaces `t` (a parameter or buffer) by its entries `index` along `dim`.
void Keep(torch::Tensor& t, std::int64_t dim, const torch::Tensor& index) {
  if (t.defined()) t.set_data(t.data().index_select(dim, index).contiguous());
}

// mlp: the outputs of every Linear but the last, and the matching inputs of the next.
int PruneMlp(nn::Module& root, double ratio) {
  std::vector<nn::LinearImpl*> layers;
  for (nn::Module* m : Below(root)) {
    if (auto* linear = m->as<nn::LinearImpl>()) layers.push_back(linear);
  }
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) {
    nn::LinearImpl& layer = *layers[i];
    nn::LinearImpl& next = *layers[i + 1];
    const torch::Tensor kept = KeptRows(layer.weight, ratio);
    Keep(layer.weight, 0, kept);
    Keep(layer.bias, 0, kept);
    Keep(next.weight, 1, kept);
    layer.options.out_features(kept.size(0));
    next.options.in_features(kept.size(0));
  }
  return static_cast<int>(layers.size()) - 1;
}

// cnn: the channels between the two convolutions of each residual block (conv1's
// outputs, bn1, conv2's inputs); what enters and leaves a block, and so the residual
// sums, keep their shape.
int PruneCnnBlocks(nn::Module& root, double ratio) {
  int blocks = 0;
  for (nn::Module* m : Below(root)) {
    const auto children = m->named_children();
    const auto* conv1 = children.find("conv1");
    const auto* bn1 = children.find("bn1");
    const auto* conv2 = children.find("conv2");
    if (conv1 == nullptr || bn1 == nullptr || conv2 == nullptr) continue;
    auto* c1 = (*conv1)->as<nn::Conv2dImpl>();
    auto* bn = (*bn1)->as<nn::BatchNorm2dImpl>();
    auto* c2 = (*conv2)->as<nn::Conv2dImpl>();
    if (c1 == nullptr || bn == nullptr || c2 == nullptr) continue;
    const torch::Tensor kept = KeptRows(c1->weight, ratio);
    Keep(c1->weight, 0, kept);
    Keep(c1->bias, 0, kept);
    for (torch::Tensor* t : {&bn->weight, &bn->bias, &bn->running_mean, &bn->running_var})
      Keep(*t, 0, kept);
    Keep(c2->weight, 1, kept);
    c1->options.out_channels(kept.size(0));
    bn->options.num_features(kept.size(0));
    c2->options.in_channels(kept.size(0));
    ++blocks;
  }
  return blocks;
}

}  // namespace

std::int64_t CountParameters(Model& model) {
  std::int64_t n = 0;
  for (const torch::Tensor& p : model.Parameters()) n += p.numel();
  return n;
}

json PruneModel(Model& model, const JobSpec& spec) {
  nn::Module* root = model.Root();
  if (root == nullptr)
    throw WorkloadError("prune: model " + spec.model + " has no layers the worker can prune");
  const PruneSpec& prune = *spec.prune;
  const std::int64_t before = CountParameters(model);
  torch::NoGradGuard no_grad;
  int layers = 0;
  if (prune.kind == "magnitude") {
    for (torch::Tensor& w : LayerWeights(*root)) {
      ZeroSmallest(w, prune.sparsity);
      ++layers;
    }
  } else if (spec.model == "mlp") {
    layers = PruneMlp(*root, prune.ratio);
  } else {
    layers = PruneCnnBlocks(*root, prune.ratio);
  }
  if (layers == 0) throw WorkloadError("prune: model " + spec.model + " has no layer to prune");
  std::int64_t zeros = 0, weights = 0;
  for (const torch::Tensor& w : LayerWeights(*root)) {
    zeros += w.numel() - w.count_nonzero().item<std::int64_t>();
    weights += w.numel();
  }
  json out = {{"kind", prune.kind},
              {"params_unpruned", before},
              {"weight_sparsity",
               weights == 0 ? 0.0 : static_cast<double>(zeros) / static_cast<double>(weights)},
              {"layers", layers}};
  if (prune.kind == "magnitude") {
    out["sparsity"] = prune.sparsity;
  } else {
    out["ratio"] = prune.ratio;
  }
  return out;
}

}  // namespace benchfleet::worker
