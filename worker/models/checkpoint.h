// Activation checkpointing (LibTorch has no torch.utils.checkpoint): a block runs
// forward without keeping its activations, and backward runs it again, with grad, to
// get them back. Memory for time: a model's saved activations shrink to each block's
// input, and every block runs forward twice per training step.
#ifndef BENCHFLEET_WORKER_MODELS_CHECKPOINT_H_
#define BENCHFLEET_WORKER_MODELS_CHECKPOINT_H_

#include <torch/nn/modules/container/sequential.h>

#include <functional>

namespace benchfleet::worker {

using Block = std::function<torch::Tensor(const torch::Tensor&)>;

// block(x), keeping only x for backward. Backward recomputes block(x) with grad enabled
// and back-propagates through it: the gradients of the block's parameters accumulate
// in their .grad, as without checkpointing, and x's gradient flows on. The block must
// compute the same function when run again (no dropout: the zoo has none; BatchNorm in
// training mode recomputes the same batch statistics). Outside grad mode it is block(x).
torch::Tensor Checkpoint(const Block& block, const torch::Tensor& x);

// Runs `sequence` with each of its units checkpointed: a unit starts at every module
// that is not an activation (ReLU, GELU), so a Linear and the activation after it are
// one unit (the mlp's layers), and an encoder layer is one (the transformer's).
torch::Tensor CheckpointedSequence(torch::nn::Sequential& sequence, const torch::Tensor& x);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MODELS_CHECKPOINT_H_
