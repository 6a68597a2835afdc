#include "worker/models/reference.h"

#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/utils.h>

#include <string>
#include <utility>

#include "worker/models/prune.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

std::string Shape(const torch::Tensor& t) { return json(t.sizes().vec()).dump(); }

std::string Shapes(const std::vector<torch::Tensor>& tensors) {
  json shapes = json::array();
  for (const torch::Tensor& t : tensors) shapes.push_back(t.sizes().vec());
  return shapes.dump();
}

std::string Describe(const JobSpec& reference) {
  return reference.model == "torchscript" ? "reference " + reference.file.path
                                          : "reference model " + reference.model;
}

}  // namespace

ReferenceOutput RunReference(const JobSpec& reference, const std::vector<torch::Tensor>& inputs,
                             const torch::Tensor& job_output) {
  const bool torchscript = reference.model == "torchscript";
  BuiltModel built;
  try {
    torch::manual_seed(reference.seed);
    built = torchscript ? LoadTorchScriptModel(reference) : BuildZooModel(reference);
  } catch (const WorkloadError& e) {
    throw WorkloadError(std::string("reference.") + e.what());
  } catch (const c10::Error& e) {
    throw WorkloadError(Describe(reference) + " could not be built: " + e.what_without_backtrace());
  }
  // A built-in model says what it takes: its own input's shape.
  if (!torchscript) {
    bool same = built.inputs.size() == inputs.size();
    for (std::size_t i = 0; same && i < inputs.size(); ++i)
      same = built.inputs[i].sizes() == inputs[i].sizes();
    if (!same) {
      throw WorkloadError(
          "reference: " + Describe(reference) + " takes inputs of shape " + Shapes(built.inputs) +
          ", the job's are " + Shapes(inputs) +
          "; a reference must take the same inputs (set reference.model_args to match)");
    }
  }
  Model& model = *built.model;
  model.To(inputs.at(0).device(), torch::kFloat);
  model.SetTraining(false);
  if (torchscript) model.CompileForInference(reference.file.jit);
  const std::int64_t params = CountParameters(model);
  torch::Tensor output;
  try {
    c10::InferenceMode guard;
    output = model.Forward(inputs);
  } catch (const WorkloadError& e) {
    throw WorkloadError(std::string("reference: ") + e.what());
  } catch (const std::exception& e) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw WorkloadError("reference: " + Describe(reference) + " failed on the job's inputs " +
                        Shapes(inputs) + ": " +
                        (c10_error ? c10_error->what_without_backtrace() : e.what()));
  }
  if (output.sizes() != job_output.sizes()) {
    throw WorkloadError("reference: " + Describe(reference) + " gives outputs of shape " +
                        Shape(output) + ", the job's model " + Shape(job_output) +
                        "; they must match to be compared");
  }
  ReferenceOutput out;
  out.output = output.to(torch::kFloat);
  out.classifier = built.classifier;
  out.report = {{"model", reference.model}, {"params", params}};
  if (torchscript) out.report["path"] = reference.file.path;
  return out;
}

}  // namespace benchfleet::worker
