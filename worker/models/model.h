// The models the worker times, behind one interface. LibTorch types appear here, so
// only the worker's LibTorch translation units include this header.
#ifndef BENCHFLEET_WORKER_MODELS_MODEL_H_
#define BENCHFLEET_WORKER_MODELS_MODEL_H_

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/job_spec.h"

namespace benchfleet::worker {

// Sums a tensor over the ranks of a data-parallel job, differentiably: the gradient
// that flows back is the sum over the ranks of theirs (data_parallel.cc).
using RankSum = std::function<torch::Tensor(const torch::Tensor&)>;

// A model as the measurement sees it: a forward pass, its parameters, and the
// conversions a job's dtype and device ask for.
class Model {
 public:
  virtual ~Model() = default;
  virtual torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) = 0;
  virtual std::vector<torch::Tensor> Parameters() = 0;
  virtual void SetTraining(bool on) = 0;
  virtual void To(const torch::Device& device, torch::ScalarType dtype) = 0;
  // Replaces the weights of every Linear layer by int8 ones (dynamic quantization:
  // activations stay fp32 and are quantized per call). Returns how many layers were
  // quantized; 0 when the model has none it can replace.
  virtual int QuantizeDynamicInt8() = 0;
  // Bytes of the weights the forward pass reads (an int8 weight counts one byte).
  virtual std::int64_t WeightBytes() = 0;
  // Makes every BatchNorm layer normalise a training batch by the statistics of the
  // global batch, summed over the ranks with `rank_sum` (SyncBatchNorm). Returns how
  // many layers; 0 when the model has none.
  virtual int SynchronizeBatchNorm(const RankSum& /*rank_sum*/) { return 0; }
  // Compiles the model for inference as model_args.jit asks ("freeze", "optimize"):
  // only a TorchScript module can be; the job rules refuse the key elsewhere.
  virtual void CompileForInference(const std::string& /*jit*/) {}
  // The module tree of a built-in model (what pruning walks); null for a TorchScript
  // module.
  virtual torch::nn::Module* Root() { return nullptr; }
};

struct BuiltModel {
  std::unique_ptr<Model> model;
  std::vector<torch::Tensor> inputs;  // fp32 on the CPU, batch dimension first
  bool classifier = false;            // output is [batch, classes]
};

// A Linear layer that can switch to int8 dynamic quantization through the
// quantized::linear_prepack / quantized::linear_dynamic operators (quantize.cc),
// which is what torch.ao.quantization.quantize_dynamic does in Python.
class DenseImpl : public torch::nn::Module {
 public:
  DenseImpl(std::int64_t in_features, std::int64_t out_features);
  torch::Tensor forward(const torch::Tensor& x);
  // Quantizes the weight symmetrically per tensor to qint8 (Python's default dynamic
  // qconfig) and packs it for the current quantized engine.
  void QuantizeDynamicInt8();
  bool quantized() const { return !packed_.isNone(); }

  torch::nn::Linear linear{nullptr};

 private:
  c10::IValue packed_;  // LinearPackedParamsBase once quantized
};
TORCH_MODULE(Dense);

// Quantizes every Dense below `root`; returns how many.
int QuantizeDenseLayers(torch::nn::Module& root);

// WeightBytes() of a module tree that may hold quantized Dense layers.
std::int64_t ModuleWeightBytes(torch::nn::Module& root);

std::int64_t TensorBytes(const torch::Tensor& t);

// The built-in models of schemas/worker.md (zoo.cc): weights and inputs are drawn
// from the current torch seed (on the CPU). The cnn comes back already on spec.device,
// where its BatchNorm statistics were calibrated; the others on the CPU; callers move
// the model with Model::To either way. Throws c10::Error when LibTorch fails.
BuiltModel BuildZooModel(const JobSpec& spec);

// A built-in model that is a stack of layers (mlp, transformer) as the units a
// pipeline splits between its stages: one Dense with the ReLU after it, or one encoder
// layer. Run in order, the units are the model BuildZooModel builds, with the same
// weights and input from the same seed.
struct LayerStack {
  std::vector<torch::nn::Sequential> units;
  torch::Tensor input;  // fp32 on the CPU, batch dimension first
};
LayerStack BuildZooLayerStack(const JobSpec& spec);

// The TorchScript module at spec.file.path with random fp32 inputs of the
// shapes given (torchscript_model.cc). Throws WorkloadError naming the file when it
// cannot be read or loaded.
BuiltModel LoadTorchScriptModel(const JobSpec& spec);
// The file the agent placed for a model that is one (torchscript, aoti: model_args.path);
// throws WorkloadError when there is none (a job run without an agent).
const std::string& PlacedModelFile(const JobSpec& spec);
// Such a model's inputs: randn([batch_size] + shape) in fp32 for each of model_args.inputs.
std::vector<torch::Tensor> ModelFileInputs(const JobSpec& spec);
// The TorchScript module at `path`, in eval mode; throws WorkloadError naming `field`
// when it cannot be read or loaded.
std::unique_ptr<Model> LoadTorchScriptFile(const std::string& path, const std::string& field);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MODELS_MODEL_H_
