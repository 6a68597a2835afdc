// A user's TorchScript module, run as saved.
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "worker/models/model.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {
namespace {

class TorchScriptModel : public Model {
 public:
  explicit TorchScriptModel(torch::jit::Module module) : module_(std::move(module)) {}

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    const c10::IValue out = module_.forward(std::vector<c10::IValue>(inputs.begin(), inputs.end()));
    if (out.isTensor()) return out.toTensor();
    // A model returning several outputs is measured on all of them; the first
    // tensor stands for them in the loss and the accuracy check.
    if (out.isTuple()) {
      for (const c10::IValue& element : out.toTupleRef().elements()) {
        if (element.isTensor()) return element.toTensor();
      }
    }
    throw WorkloadError("the TorchScript module's forward() returned " + out.tagKind() +
                        "; the worker needs a tensor (or a tuple holding one)");
  }
  std::vector<torch::Tensor> Parameters() override {
    std::vector<torch::Tensor> params;
    for (const torch::Tensor& p : module_.parameters()) params.push_back(p);
    return params;
  }
  void SetTraining(bool on) override { module_.train(on); }
  void To(const torch::Device& device, torch::ScalarType dtype) override {
    module_.to(device, dtype);
  }
  int QuantizeDynamicInt8() override { return 0; }
  void CompileForInference(const std::string& jit) override {
    if (jit == "none") return;
    module_.eval();
    // freeze inlines the weights and attributes as constants (and folds conv-batchnorm);
    // optimize_for_inference then applies the inference passes of torch.jit's own.
    module_ = torch::jit::freeze(module_);
    if (jit == "optimize") module_ = torch::jit::optimize_for_inference(module_);
  }
  std::int64_t WeightBytes() override {
    std::int64_t bytes = 0;
    for (const torch::Tensor& p : module_.parameters()) bytes += TensorBytes(p);
    return bytes;
  }

 private:
  torch::jit::Module module_;
};

}  // namespace

std::unique_ptr<Model> LoadTorchScriptFile(const std::string& path, const std::string& field) {
  if (!std::ifstream(path)) {
    throw WorkloadError(field + ": cannot read TorchScript file " + path + ": " +
                        std::strerror(errno));
  }
  torch::jit::Module module;
  try {
    module = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw WorkloadError(field + ": " + path +
                        " is not a TorchScript file this LibTorch can load (save it with "
                        "torch.jit.save): " +
                        e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw WorkloadError(field + ": " + path + " could not be loaded: " + e.what());
  }
  auto model = std::make_unique<TorchScriptModel>(std::move(module));
  model->SetTraining(false);
  return model;
}

const std::string& PlacedModelFile(const JobSpec& spec) {
  if (spec.file.path.empty()) {
    // A job names its file by sha256 or agent_path; the agent that runs it puts the
    // file's place here (schemas/sweep.md, Models by content).
    throw WorkloadError(
        "model_args.path: missing: the worker loads the file the agent placed for model_args." +
        std::string(spec.file.sha256.empty() ? "agent_path" : "sha256") +
        "; run the job through an agent");
  }
  return spec.file.path;
}

std::vector<torch::Tensor> ModelFileInputs(const JobSpec& spec) {
  std::vector<torch::Tensor> inputs;
  for (const std::vector<std::int64_t>& shape : spec.file.inputs) {
    std::vector<std::int64_t> batched = {spec.batch_size};
    batched.insert(batched.end(), shape.begin(), shape.end());
    inputs.push_back(torch::randn(batched));
  }
  return inputs;
}

BuiltModel LoadTorchScriptModel(const JobSpec& spec) {
  BuiltModel built;
  built.model = LoadTorchScriptFile(PlacedModelFile(spec), "model_args.path");
  built.inputs = ModelFileInputs(spec);
  return built;
}

}  // namespace benchfleet::worker
