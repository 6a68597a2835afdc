// An AOTInductor package (a `.pt2`), run through LibTorch's AOTIModelPackageLoader: a
// user's (model "aoti") or one the worker compiled from a zoo model (technique "aoti",
// compiled_model.cc). A LibTorch without the loader (before 2.6: Debian's 1.13) builds
// this file too and refuses such jobs with its version.
#if __has_include(<torch/csrc/inductor/aoti_package/model_package_loader.h>)
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#define BENCHFLEET_HAS_AOTI 1
#else
#define BENCHFLEET_HAS_AOTI 0
#endif
#include <sys/utsname.h>
#include <torch/version.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "common/aoti_package.h"
#include "common/job_spec.h"
#include "worker/models/aoti_model.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {
namespace {

#if BENCHFLEET_HAS_AOTI
class AotiModel : public Model {
 public:
  explicit AotiModel(std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader)
      : loader_(std::move(loader)) {}

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs) override {
    std::vector<torch::Tensor> outputs = loader_->run(inputs);
    if (outputs.empty()) throw WorkloadError("the AOTInductor package returned no output");
    // A model returning several outputs is measured on all of them; the first stands
    // for them in the accuracy check.
    return outputs.front();
  }
  // The weights are constants inside the package: nothing to train or convert.
  std::vector<torch::Tensor> Parameters() override { return {}; }
  void SetTraining(bool /*on*/) override {}
  void To(const torch::Device& /*device*/, torch::ScalarType /*dtype*/) override {}
  int QuantizeDynamicInt8() override { return 0; }
  std::int64_t WeightBytes() override { return 0; }

 private:
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
};
#endif

std::string HostMachine() {
  utsname name{};
  return uname(&name) == 0 ? std::string(name.machine) : std::string();
}

}  // namespace

bool AotiSupported() { return BENCHFLEET_HAS_AOTI != 0; }

AotiPackageCheck CheckAotiPackage(const std::string& path, const std::string& device,
                                  const std::string& field) {
  if (!AotiSupported()) {
    throw WorkloadError(
        field + ": this worker's LibTorch (" + std::string(TORCH_VERSION) +
        ") has no AOTInductor package loader (LibTorch 2.6 or newer has); run the job on a "
        "worker of a newer torch (the sweep's torch axis)");
  }
  if (!std::ifstream(path)) {
    throw WorkloadError(field + ": cannot read the package " + path + ": " + std::strerror(errno));
  }
  StatusOr<AotiPackageFacts> facts = ReadAotiPackage(path);
  if (!facts.ok()) throw WorkloadError(field + ": " + facts.status().message());
  const std::string kind = device.substr(0, device.find(':'));
  if (facts->device != kind) {
    throw WorkloadError(field + ": the package was compiled for " + facts->device +
                        ", not for device " + device + "; compile it for " + kind +
                        " or run the job on a " + facts->device + " device");
  }
  const std::string machine = HostMachine();
  if (!facts->machine.empty() && !machine.empty() && facts->machine != machine) {
    throw WorkloadError(field + ": the package was compiled for " + facts->machine +
                        " and this host is " + machine +
                        "; compile it on (or for) a host of this architecture");
  }
  if (!facts->torch_version.empty() &&
      CompareTorchVersions(facts->torch_version, TORCH_VERSION) > 0) {
    throw WorkloadError(field + ": the package was made by torch " + facts->torch_version +
                        ", newer than this worker's LibTorch " + TORCH_VERSION +
                        "; run it on a worker of that torch or newer (the sweep's torch axis)");
  }
  return {facts->torch_version};
}

std::unique_ptr<Model> LoadAotiPackage(const std::string& path, const std::string& field) {
#if BENCHFLEET_HAS_AOTI
  // The package's own checks of every input (shape, dynamic dimensions, dtype, strides,
  // device) are compiled in but run only where this is set; a few comparisons per input
  // and call. Read once, at the package's first run.
  setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", /*overwrite=*/0);
  try {
    return std::make_unique<AotiModel>(
        std::make_unique<torch::inductor::AOTIModelPackageLoader>(path));
  } catch (const std::exception& e) {
    const std::string message = e.what();
    throw WorkloadError(field +
                        ": the package's compiled library does not load in this worker (LibTorch " +
                        std::string(TORCH_VERSION) + "): " + message.substr(0, message.find('\n')));
  }
#else
  (void)path;
  throw WorkloadError(field + ": this worker's LibTorch has no AOTInductor package loader");
#endif
}

BuiltModel LoadAotiModel(const JobSpec& spec) {
  const std::string& path = PlacedModelFile(spec);
  CheckAotiPackage(path, spec.device, "model_args.path");
  BuiltModel built;
  built.model = LoadAotiPackage(path, "model_args.path");
  built.inputs = ModelFileInputs(spec);
  return built;
}

}  // namespace benchfleet::worker
