#include <c10/util/Exception.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <memory>
#include <string>

#include "worker/workload.h"

namespace benchfleet::worker {
namespace {

// Turns a LibTorch error into a message the job's author can act on.
WorkloadError Explain(const std::string& stage, const JobSpec& spec, const c10::Error& e) {
  std::string message = e.what_without_backtrace();
  if (message.find("not enough memory") != std::string::npos ||
      message.find("out of memory") != std::string::npos) {
    return WorkloadError("out of memory while " + stage + " (batch_size " +
                         std::to_string(spec.batch_size) +
                         "); reduce batch_size or model_args.layers: " + message);
  }
  return WorkloadError("LibTorch failed while " + stage + ": " + message);
}

torch::nn::Sequential BuildMlp(const JobSpec& spec) {
  torch::nn::Sequential net;
  for (std::size_t i = 0; i + 1 < spec.layers.size(); ++i) {
    net->push_back(torch::nn::Linear(spec.layers[i], spec.layers[i + 1]));
    if (i + 2 < spec.layers.size()) net->push_back(torch::nn::ReLU());
  }
  net->eval();
  return net;
}

}  // namespace

PreparedWorkload PrepareWorkload(const JobSpec& spec) {
  try {
    torch::manual_seed(spec.seed);
    torch::nn::Sequential net = BuildMlp(spec);
    std::int64_t param_bytes = 0;
    for (const auto& p : net->parameters()) {
      param_bytes += p.numel() * static_cast<std::int64_t>(p.element_size());
    }
    auto input = std::make_shared<torch::Tensor>(torch::randn({spec.batch_size, spec.layers[0]}));

    PreparedWorkload workload;
    workload.param_bytes = param_bytes;
    workload.iteration = [net, input, spec]() mutable {
      try {
        // Thread-local and cheap; holding it per call keeps the closure
        // correct whichever thread runs it.
        c10::InferenceMode guard;
        net->forward(*input);
      } catch (const c10::Error& e) {
        throw Explain("running the model", spec, e);
      }
    };
    return workload;
  } catch (const c10::Error& e) {
    throw Explain("building the model", spec, e);
  }
}

}  // namespace benchfleet::worker
