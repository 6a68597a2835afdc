// The built-in models: matmul, mlp, cnn (ResNet-18 style), transformer (BERT-style
// encoder). Their FLOP counts live in flops.cc; keep the two in step.
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>

#include "worker/models/checkpoint.h"
#include "worker/models/model.h"

namespace benchfleet::worker {
namespace {

namespace nn = torch::nn;

// batch_size independent (m x k) . (k x n) products; B is the parameter.
class MatmulImpl : public nn::Module {
 public:
  MatmulImpl(const MatmulArgs& a, std::int64_t batch) {
    b_ = register_parameter(
        "b", batch == 1 ? torch::randn({a.k, a.n}) : torch::randn({batch, a.k, a.n}));
  }
  torch::Tensor forward(const torch::Tensor& a) {
    return a.dim() == 2 ? torch::mm(a, b_) : torch::matmul(a, b_);
  }

 private:
  torch::Tensor b_;
};
TORCH_MODULE(Matmul);

nn::Sequential BuildMlp(const MlpArgs& args) {
  nn::Sequential net;
  for (std::size_t i = 0; i + 1 < args.layers.size(); ++i) {
    net->push_back(Dense(args.layers[i], args.layers[i + 1]));
    if (i + 2 < args.layers.size()) net->push_back(nn::ReLU());
  }
  return net;
}

nn::Conv2d Conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// BatchNorm2d that, once given a RankSum (Model::SynchronizeBatchNorm), normalises a
// training batch by the statistics of the whole global batch, summed over the ranks of
// a data-parallel job, as torch.nn.SyncBatchNorm does; without one it is BatchNorm2d.
// One sum over the ranks forward (and so one backward) per layer: each rank's count,
// sum and sum of squares about its own mean (Chan's parallel variance), in double so
// that the variance's subtraction loses nothing. The ranks then train as one process
// on the whole batch would, within float rounding.
class SyncedBatchNorm2dImpl : public nn::BatchNorm2dImpl {
 public:
  using nn::BatchNorm2dImpl::BatchNorm2dImpl;

  torch::Tensor forward(const torch::Tensor& x) {
    if (!is_training() || !rank_sum_) return nn::BatchNorm2dImpl::forward(x);
    const std::int64_t channels = x.size(1);
    const std::vector<std::int64_t> reduced = {0, 2, 3};  // every dimension but the channels
    const std::vector<std::int64_t> per_channel = {1, channels, 1, 1};
    // This rank's shard: [count, count * mean, squares about its mean + count * mean^2]
    // per channel. The count travels with the sums: shards need not be equal.
    const double local_count = static_cast<double>(x.numel() / channels);
    const torch::Tensor local_mean = x.mean(reduced);
    const torch::Tensor local_squares =
        (x - local_mean.view(per_channel)).pow(2).sum(reduced).to(torch::kDouble);
    const torch::Tensor mean_d = local_mean.to(torch::kDouble);
    const torch::Tensor sums =
        rank_sum_(torch::cat({torch::full({1}, local_count, mean_d.options()), mean_d * local_count,
                              local_squares + mean_d.pow(2) * local_count}));
    const torch::Tensor count = sums.narrow(0, 0, 1);
    const torch::Tensor global_mean = sums.narrow(0, 1, channels) / count;
    const torch::Tensor global_var =
        (sums.narrow(0, 1 + channels, channels) / count - global_mean.pow(2)).clamp_min(0);
    const torch::Tensor mean = global_mean.to(x.scalar_type());
    const torch::Tensor var = global_var.to(x.scalar_type());
    torch::Tensor y =
        (x - mean.view(per_channel)) * torch::rsqrt(var + options.eps()).view(per_channel);
    if (options.affine()) y = y * weight.view(per_channel) + bias.view(per_channel);
    if (options.track_running_stats()) {
      torch::NoGradGuard no_grad;
      const double momentum = options.momentum().value_or(0.1);
      const double n = count.item<double>();
      running_mean.mul_(1 - momentum).add_(mean.detach() * momentum);
      // The running variance is the unbiased one, as BatchNorm2d keeps it.
      running_var.mul_(1 - momentum).add_(var.detach() * (momentum * n / std::max(n - 1, 1.0)));
      num_batches_tracked.add_(1);
    }
    return y;
  }

  void SetRankSum(RankSum rank_sum) { rank_sum_ = std::move(rank_sum); }

  // LibTorch does not export its base's, which the vtable of a subclass needs.
  void pretty_print(std::ostream& stream) const override {
    stream << "SyncedBatchNorm2d(" << options.num_features() << ")";
  }

 private:
  RankSum rank_sum_;
};
TORCH_MODULE(SyncedBatchNorm2d);

// BatchNorm whose running statistics are replaced by those of the last
// training-mode batch (momentum 1); see CalibrateBatchNorm.
SyncedBatchNorm2d Norm(std::int64_t channels) {
  return SyncedBatchNorm2d(nn::BatchNorm2dOptions(channels).momentum(1.0));
}

// ResNet's BasicBlock: two 3x3 convolutions and a residual connection, with a 1x1
// projection on the shortcut where the shape changes.
class BasicBlockImpl : public nn::Module {
 public:
  BasicBlockImpl(std::int64_t in, std::int64_t out, std::int64_t stride)
      : conv1_(register_module("conv1", Conv(in, out, 3, stride))),
        bn1_(register_module("bn1", Norm(out))),
        conv2_(register_module("conv2", Conv(out, out, 3, 1))),
        bn2_(register_module("bn2", Norm(out))) {
    if (stride != 1 || in != out) {
      shortcut_ = register_module("shortcut", nn::Sequential(Conv(in, out, 1, stride), Norm(out)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    return torch::relu(y + (shortcut_ ? shortcut_->forward(x) : x));
  }

 private:
  nn::Conv2d conv1_;
  SyncedBatchNorm2d bn1_;
  nn::Conv2d conv2_;
  SyncedBatchNorm2d bn2_;
  nn::Sequential shortcut_{nullptr};
};
TORCH_MODULE(BasicBlock);

class CnnImpl : public nn::Module {
 public:
  explicit CnnImpl(const CnnArgs& c)
      : stem_(register_module("stem", Conv(c.channels, c.width, 7, 2))),
        stem_bn_(register_module("stem_bn", Norm(c.width))),
        stages_(register_module("stages", nn::Sequential())) {
    std::int64_t in = c.width;
    for (std::size_t stage = 0; stage < c.blocks.size(); ++stage) {
      const std::int64_t out = c.width << stage;
      for (std::int64_t b = 0; b < c.blocks[stage]; ++b) {
        stages_->push_back(BasicBlock(in, out, (stage > 0 && b == 0) ? 2 : 1));
        in = out;
      }
    }
    fc_ = register_module("fc", Dense(in, c.classes));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(stem_bn_(stem_(x)));
    y = torch::max_pool2d(y, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
    y = checkpointing_ ? CheckpointedSequence(stages_, y) : stages_->forward(y);
    return fc_(torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1));
  }
  void SetCheckpointing(bool on) { checkpointing_ = on; }

 private:
  nn::Conv2d stem_;
  SyncedBatchNorm2d stem_bn_;
  nn::Sequential stages_;
  Dense fc_{nullptr};
  bool checkpointing_ = false;  // each residual block checkpointed (checkpoint.h)
};
TORCH_MODULE(Cnn);

// A BERT encoder layer (post-norm): multi-head self-attention with its projections
// as Dense layers (so int8 reaches them too), then a GELU feed-forward block. No
// dropout: it would only add noise to the timing.
class EncoderLayerImpl : public nn::Module {
 public:
  explicit EncoderLayerImpl(const TransformerArgs& t)
      : heads_(t.heads),
        qkv_(register_module("qkv", Dense(t.hidden, 3 * t.hidden))),
        out_(register_module("out", Dense(t.hidden, t.hidden))),
        norm1_(register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({t.hidden})))),
        ffn1_(register_module("ffn1", Dense(t.hidden, t.ffn))),
        ffn2_(register_module("ffn2", Dense(t.ffn, t.hidden))),
        norm2_(register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({t.hidden})))) {}

  torch::Tensor forward(const torch::Tensor& x) {  // [batch, seq, hidden]
    const std::int64_t batch = x.size(0), seq = x.size(1), hidden = x.size(2);
    const std::int64_t head_dim = hidden / heads_;
    // [3, batch, heads, seq, head_dim]
    const torch::Tensor qkv =
        qkv_(x).view({batch, seq, 3, heads_, head_dim}).permute({2, 0, 3, 1, 4});
    const torch::Tensor scores =
        torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
    const torch::Tensor context = torch::matmul(torch::softmax(scores, -1), qkv[2])
                                      .transpose(1, 2)
                                      .reshape({batch, seq, hidden});
    const torch::Tensor y = norm1_(x + out_(context));
    return norm2_(y + ffn2_(torch::gelu(ffn1_(y))));
  }

 private:
  std::int64_t heads_;
  Dense qkv_, out_;
  nn::LayerNorm norm1_;
  Dense ffn1_, ffn2_;
  nn::LayerNorm norm2_;
};
TORCH_MODULE(EncoderLayer);

// Adapts a module holder whose forward takes one tensor.
template <typename Holder>
class ModuleModel : public Model {
 public:
  ModuleModel(Holder module, bool checkpointing)
      : module_(std::move(module)), checkpointing_(checkpointing) {}
  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    // A stack of layers (mlp, transformer): each layer a checkpointed unit.
    if constexpr (std::is_same_v<Holder, nn::Sequential>) {
      if (checkpointing_) return CheckpointedSequence(module_, inputs.at(0));
    }
    return module_->forward(inputs.at(0));
  }
  std::vector<torch::Tensor> Parameters() override { return module_->parameters(); }
  void SetTraining(bool on) override { module_->train(on); }
  void To(const torch::Device& device, torch::ScalarType dtype) override {
    module_->to(device, dtype);
  }
  int QuantizeDynamicInt8() override { return QuantizeDenseLayers(*module_); }
  nn::Module* Root() override { return module_.get(); }
  std::int64_t WeightBytes() override { return ModuleWeightBytes(*module_); }
  int SynchronizeBatchNorm(const RankSum& rank_sum) override {
    int layers = 0;
    for (const std::shared_ptr<nn::Module>& m : module_->modules()) {
      if (auto norm = std::dynamic_pointer_cast<SyncedBatchNorm2dImpl>(m)) {
        norm->SetRankSum(rank_sum);
        ++layers;
      }
    }
    return layers;
  }

 private:
  Holder module_;
  bool checkpointing_;
};

template <typename Holder>
BuiltModel Wrap(Holder module, torch::Tensor input, bool classifier, bool checkpointing = false) {
  module->eval();
  BuiltModel built;
  built.model = std::make_unique<ModuleModel<Holder>>(std::move(module), checkpointing);
  built.inputs = {std::move(input)};
  built.classifier = classifier;
  return built;
}

// Random weights leave BatchNorm's running statistics at mean 0, variance 1, so in
// eval mode activations would drift in scale from block to block, unlike a trained
// network. One training-mode pass over the input batch sets them to what the
// layers really produce. The pass runs where the job runs: `net` is moved to `device`
// first, so a GPU job's model_build_s holds a GPU pass, not a ResNet pass on the CPU
// at the full batch (which every probe of a GPU max-batch search would repeat). The
// statistics are the same up to float rounding on either device.
void CalibrateBatchNorm(Cnn& net, const torch::Tensor& input, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  net->to(device);
  net->train();
  net->forward(input.to(device));
  net->eval();
}

}  // namespace

LayerStack BuildZooLayerStack(const JobSpec& spec) {
  // Units built in the order BuildZooModel builds the layers, then the input: the same
  // seed draws the same weights and input.
  LayerStack stack;
  if (spec.model == "mlp") {
    const std::vector<std::int64_t>& layers = spec.mlp.layers;
    for (std::size_t i = 0; i + 1 < layers.size(); ++i) {
      nn::Sequential unit;
      unit->push_back(Dense(layers[i], layers[i + 1]));
      if (i + 2 < layers.size()) unit->push_back(nn::ReLU());
      stack.units.push_back(unit);
    }
    stack.input = torch::randn({spec.batch_size, layers.front()});
  } else {
    const TransformerArgs& t = spec.transformer;
    for (std::int64_t i = 0; i < t.layers; ++i) {
      nn::Sequential unit;
      unit->push_back(EncoderLayer(t));
      stack.units.push_back(unit);
    }
    stack.input = torch::randn({spec.batch_size, t.seq_len, t.hidden});
  }
  return stack;
}

BuiltModel BuildZooModel(const JobSpec& spec) {
  const std::int64_t batch = spec.batch_size;
  if (spec.model == "matmul") {
    const MatmulArgs& a = spec.matmul;
    Matmul net(a, batch);
    return Wrap(net, batch == 1 ? torch::randn({a.m, a.k}) : torch::randn({batch, a.m, a.k}),
                false);
  }
  if (spec.model == "mlp") {
    nn::Sequential net = BuildMlp(spec.mlp);
    return Wrap(net, torch::randn({batch, spec.mlp.layers.front()}), true, spec.checkpointing);
  }
  if (spec.model == "cnn") {
    const CnnArgs& c = spec.cnn;
    Cnn net(c);
    torch::Tensor input = torch::randn({batch, c.channels, c.image_size, c.image_size});
    CalibrateBatchNorm(net, input, torch::Device(spec.device));
    net->SetCheckpointing(spec.checkpointing);
    return Wrap(net, std::move(input), true);
  }
  const TransformerArgs& t = spec.transformer;
  nn::Sequential net;
  for (std::int64_t i = 0; i < t.layers; ++i) net->push_back(EncoderLayer(t));
  return Wrap(net, torch::randn({batch, t.seq_len, t.hidden}), false, spec.checkpointing);
}

}  // namespace benchfleet::worker
