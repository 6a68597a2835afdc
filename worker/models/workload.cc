// Turns a validated job into a timed closure: model, dtype, device, mode.
#include "worker/models/workload.h"

#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "worker/host/torch_runtime.h"
#include "worker/models/aoti_model.h"
#include "worker/models/compiled_model.h"
#include "worker/models/cuda_graph.h"
#include "worker/models/model.h"
#include "worker/models/prune.h"
#include "worker/models/reference.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// Throws a LibTorch error as a message the job's author can act on: OutOfMemory when
// the memory ran out, else a WorkloadError.
bool IsOutOfMemory(const c10::Error& e) {
  // c10::OutOfMemoryError: the CUDA caching allocator's; the messages: the CPU
  // allocator's ("can't allocate memory" when posix_memalign fails, as past RLIMIT_AS).
  const std::string message = e.what_without_backtrace();
  return dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr ||
         message.find("not enough memory") != std::string::npos ||
         message.find("can't allocate memory") != std::string::npos ||
         message.find("out of memory") != std::string::npos;
}

[[noreturn]] void ThrowExplained(const std::string& stage, const JobSpec& spec,
                                 const c10::Error& e) {
  const std::string message = e.what_without_backtrace();
  if (IsOutOfMemory(e)) {
    throw OutOfMemory("out of memory while " + stage + " (batch_size " +
                      std::to_string(spec.batch_size) +
                      "); reduce batch_size or the model's size (model_args): " + message);
  }
  throw WorkloadError("LibTorch failed while " + stage + ": " + message);
}

// The last line of a TorchScript error is the failing operation's own message; the
// lines above it are the interpreter's traceback.
std::string LastLine(const std::string& text) {
  const std::size_t end = text.find_last_not_of(" \n");
  if (end == std::string::npos) return text;
  const std::size_t newline = text.rfind('\n', end);
  const std::size_t start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, end + 1 - start);
}

// One untimed fp32 forward pass in eval mode: checks that the inputs fit and gives
// the reference output of the accuracy check.
torch::Tensor FirstForward(Model& model, const std::vector<torch::Tensor>& inputs,
                           const JobSpec& spec) {
  try {
    c10::InferenceMode guard;
    return model.Forward(inputs);
  } catch (const WorkloadError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    if (!IsModelFile(spec.model)) throw;
    // The TorchScript interpreter may rethrow an operator's c10::Error as another
    // exception type; both carry the operator's message last.
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    if (c10_error != nullptr && IsOutOfMemory(*c10_error))
      ThrowExplained("running the model", spec, *c10_error);
    const std::string message = c10_error ? c10_error->what_without_backtrace() : e.what();
    const json shapes = spec.file.inputs;
    throw WorkloadError("model_args.inputs: the input shape " + shapes.dump() + " (batch_size " +
                        std::to_string(spec.batch_size) +
                        " prepended) does not fit the model: " + LastLine(message));
  }
}

// `out` against `reference`, both reduced to doubles on the CPU.
json Accuracy(const torch::Tensor& reference, const torch::Tensor& out, bool classifier) {
  const torch::Tensor ref = reference.detach().to(torch::kCPU, torch::kDouble);
  const torch::Tensor got = out.detach().to(torch::kCPU, torch::kDouble);
  const torch::Tensor diff = got - ref;
  json accuracy = {{"max_abs_err", diff.abs().max().item<double>()},
                   {"mean_abs_err", diff.abs().mean().item<double>()},
                   {"rel_err", (diff.norm() / ref.norm()).item<double>()},
                   {"top1_agreement", nullptr}};
  if (classifier) {
    accuracy["top1_agreement"] =
        got.argmax(-1).eq(ref.argmax(-1)).to(torch::kDouble).mean().item<double>();
  }
  return accuracy;
}

std::function<void()> TrainStep(const std::shared_ptr<Model>& model,
                                const std::shared_ptr<std::vector<torch::Tensor>>& inputs,
                                const JobSpec& spec) {
  std::vector<torch::Tensor> params = model->Parameters();
  if (params.empty()) {
    throw WorkloadError("mode \"train\" needs a model with parameters to update; " +
                        (spec.model == "torchscript" ? spec.file.path : spec.model) + " has none");
  }
  for (torch::Tensor& p : params) p.requires_grad_(true);
  model->SetTraining(true);
  auto optimizer =
      std::make_shared<torch::optim::SGD>(params, torch::optim::SGDOptions(kTrainLearningRate));
  // The loss is the MSE to a fixed random target of the output's shape.
  auto target = std::make_shared<torch::Tensor>();
  {
    torch::NoGradGuard no_grad;
    *target = torch::randn_like(model->Forward(*inputs));
  }
  return [model, inputs, optimizer, target, spec]() {
    try {
      optimizer->zero_grad();
      const torch::Tensor loss = (model->Forward(*inputs) - *target).pow(2).mean();
      loss.backward();
      optimizer->step();
    } catch (const c10::Error& e) {
      ThrowExplained("training the model", spec, e);
    }
  };
}

}  // namespace

PreparedWorkload PrepareWorkload(const JobSpec& spec) {
  try {
    // The outputs everything is compared with are true fp32, on a GPU too.
    ApplyCudaMath(/*allow_tf32=*/false);
    torch::manual_seed(spec.seed);
    BuiltModel built = spec.model == "torchscript" ? LoadTorchScriptModel(spec)
                       : spec.model == "aoti"      ? LoadAotiModel(spec)
                                                   : BuildZooModel(spec);
    const torch::Device device(spec.device);
    std::shared_ptr<Model> model = std::move(built.model);
    auto inputs = std::make_shared<std::vector<torch::Tensor>>();
    model->To(device, torch::kFloat);
    // A package runs in the dtype it was compiled for: its inputs are given in the job's
    // from the start, and its outputs have no fp32 model to be held against.
    const bool package = spec.model == "aoti";
    for (const torch::Tensor& input : built.inputs) {
      inputs->push_back(package && spec.dtype == "bf16" ? input.to(device, torch::kBFloat16)
                                                        : input.to(device));
    }
    torch::Tensor reference = FirstForward(*model, *inputs, spec);
    bool classifier = built.classifier;

    PreparedWorkload workload;
    // Pruning and a reference model change what the accuracy is measured against
    // (prune.h, reference.h); the result reports both next to the parameter count.
    json techniques = json::object();
    if (spec.prune) techniques["prune"] = PruneModel(*model, spec);
    if (spec.reference) {
      ReferenceOutput ref = RunReference(*spec.reference, *inputs, reference);
      reference = ref.output;
      classifier = ref.classifier;
      techniques["reference"] = std::move(ref.report);
    }
    // A package's weights are constants inside it, not parameters it could count.
    if (!package) techniques["params"] = CountParameters(*model);
    // From here the model runs in its dtype; "tf32" keeps fp32 tensors and lets cuBLAS
    // and cuDNN use TF32 tensor-core math (its accuracy below is against true fp32).
    if (spec.dtype == "tf32") ApplyCudaMath(/*allow_tf32=*/true);
    const bool compiled = spec.technique != "eager";
    if (spec.dtype == "bf16" && !package) {
      model->To(device, torch::kBFloat16);
      for (torch::Tensor& input : *inputs) input = input.to(torch::kBFloat16);
    } else if (spec.dtype == "int8" && !compiled) {
      if (model->QuantizeDynamicInt8() == 0) {
        throw WorkloadError("int8 dynamic quantization needs Linear layers; model " + spec.model +
                            " has none");
      }
      // The eager API's path (torch.ao.quantization's quantize_dynamic); PT2E is technique aoti's.
      techniques["quantization"] = kEagerInt8Path;
    }
    workload.param_bytes = model->WeightBytes();
    // NHWC: every 4-d weight and input (the cnn's convolutions) in channels-last order.
    if (spec.model == "cnn" && spec.cnn.memory_format == "channels_last") {
      for (torch::Tensor& p : model->Parameters()) {
        if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
      }
      for (torch::Tensor& input : *inputs) {
        if (input.dim() == 4) input = input.contiguous(at::MemoryFormat::ChannelsLast);
      }
    }
    if (spec.model == "torchscript") model->CompileForInference(spec.file.jit);
    if (package) techniques["compile"] = {{"technique", "aoti"}};
    std::optional<CapturedStep> graph;
    if (spec.technique == "cuda_graph") {
      graph = CaptureForward(model, inputs);
      techniques["compile"] = {{"technique", "cuda_graph"}};
    } else if (compiled) {
      // The same model, weights and inputs, compiled by the python of this torch (cached
      // by content); timed in the eager model's place.
      CompiledModel made = CompileZooModel(spec, *model);
      model = std::move(made.model);
      techniques["compile"] = std::move(made.report);
      if (!made.quantization.empty()) techniques["quantization"] = made.quantization;
    }
    // What the dtype or the compilation changed in the outputs, against the fp32 model.
    if (graph) {
      graph->replay();
      workload.accuracy = Accuracy(reference, graph->output, classifier);
    } else if (!package &&
               (spec.dtype != "fp32" || (spec.model == "torchscript" && spec.file.jit != "none") ||
                compiled || spec.prune || spec.reference)) {
      c10::InferenceMode guard;
      workload.accuracy = Accuracy(reference, model->Forward(*inputs), classifier);
    }
    workload.report = [techniques](const Measurement&, double) { return techniques; };

    if (graph) {
      workload.iteration = graph->replay;
    } else if (spec.mode == "train") {
      workload.iteration = TrainStep(model, inputs, spec);
    } else {
      workload.iteration = [model, inputs, spec]() {
        try {
          // Thread-local and cheap; holding it per call keeps the closure
          // correct whichever thread runs it.
          c10::InferenceMode guard;
          model->Forward(*inputs);
        } catch (const c10::Error& e) {
          ThrowExplained("running the model", spec, e);
        }
      };
    }
    if (device.is_cuda()) {
      // Kernels run asynchronously: a block is over when the GPU is done with it.
      const std::int64_t index = device.has_index() ? device.index() : -1;
      workload.block_end = [index]() { torch::cuda::synchronize(index); };
    }
    return workload;
  } catch (const c10::Error& e) {
    ThrowExplained("building the model", spec, e);
  }
}

}  // namespace benchfleet::worker
