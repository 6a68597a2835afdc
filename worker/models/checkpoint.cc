#include "worker/models/checkpoint.h"

#include <ATen/core/ivalue.h>
#include <torch/autograd.h>
#include <torch/custom_class.h>
#include <torch/nn/modules/activation.h>

#include <memory>
#include <utility>
#include <vector>

namespace benchfleet::worker {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The block travels in the autograd context as a capsule: saved_data holds IValues.
struct BlockHolder : torch::CustomClassHolder {
  explicit BlockHolder(Block b) : block(std::move(b)) {}
  Block block;
};

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  // `anchor` is an empty tensor that requires grad: it keeps the node in the graph when
  // x does not need a gradient (the mlp's first layer reads the raw input), so the
  // block's own parameters still get theirs.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& anchor, const Block& block) {
    (void)anchor;
    ctx->save_for_backward({x});
    ctx->saved_data["block"] = c10::IValue::make_capsule(c10::make_intrusive<BlockHolder>(block));
    // Function::apply runs forward with grad off: nothing inside the block is kept.
    return block(x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const torch::Tensor saved = ctx->get_saved_variables()[0];
    const auto holder = ctx->saved_data["block"].toCapsule();
    const Block& block = static_cast<BlockHolder*>(holder.get())->block;
    const torch::Tensor x = saved.detach().requires_grad_(saved.requires_grad());
    torch::Tensor y;
    {
      torch::AutoGradMode grad(true);
      y = block(x);
    }
    // Re-entrant: the block's graph is walked now, its parameters' gradients accumulate.
    torch::autograd::backward({y}, {grad_outputs[0]});
    return {x.requires_grad() ? x.grad() : torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

bool IsActivation(const std::shared_ptr<torch::nn::Module>& m) {
  return std::dynamic_pointer_cast<torch::nn::ReLUImpl>(m) != nullptr ||
         std::dynamic_pointer_cast<torch::nn::GELUImpl>(m) != nullptr;
}

}  // namespace

torch::Tensor Checkpoint(const Block& block, const torch::Tensor& x) {
  if (!torch::GradMode::is_enabled()) return block(x);
  return CheckpointFunction::apply(x, torch::empty({0}).requires_grad_(true), block);
}

torch::Tensor CheckpointedSequence(torch::nn::Sequential& sequence, const torch::Tensor& x) {
  std::vector<std::vector<torch::nn::AnyModule*>> units;
  for (torch::nn::AnyModule& m : *sequence) {
    if (units.empty() || !IsActivation(m.ptr())) units.emplace_back();
    units.back().push_back(&m);
  }
  torch::Tensor y = x;
  for (const auto& unit : units) {
    y = Checkpoint(
        [unit](const torch::Tensor& in) {
          torch::Tensor out = in;
          for (torch::nn::AnyModule* m : unit) out = m->forward<torch::Tensor>(out);
          return out;
        },
        y);
  }
  return y;
}

}  // namespace benchfleet::worker
