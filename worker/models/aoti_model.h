// AOTInductor packages (`.pt2`, from torch._inductor.aoti_compile_and_package): checked
// against the job and this host, then run through LibTorch's AOTIModelPackageLoader.
#ifndef BENCHFLEET_WORKER_MODELS_AOTI_MODEL_H_
#define BENCHFLEET_WORKER_MODELS_AOTI_MODEL_H_

#include <memory>
#include <string>

#include "common/job_spec.h"
#include "worker/models/model.h"

namespace benchfleet::worker {

// True where this worker's LibTorch has the package loader (2.6 and newer).
bool AotiSupported();

struct AotiPackageCheck {
  std::string torch_version;  // of the torch that made it, as its metadata says; empty: not said
};

// Checks the package at `path` before anything of it is loaded: it is a package (a zip
// with an AOTInductor model), compiled for `device`'s kind and this host's architecture,
// by a torch no newer than this worker's. Throws WorkloadError naming `field` and saying
// what to do.
AotiPackageCheck CheckAotiPackage(const std::string& path, const std::string& device,
                                  const std::string& field);

// Loads a checked package; throws WorkloadError naming `field` when its compiled
// library does not load here. The package then checks every input it is given (shape,
// the dynamic batch dimension it allows, dtype, device) and a mismatch is an error of
// the first forward pass.
std::unique_ptr<Model> LoadAotiPackage(const std::string& path, const std::string& field);

// Model "aoti": the user's package at spec.file.path with random fp32 inputs of the
// shapes given (batch first; the workload converts them to the job's dtype).
BuiltModel LoadAotiModel(const JobSpec& spec);

}  // namespace benchfleet::worker

#endif  // BENCHFLEET_WORKER_MODELS_AOTI_MODEL_H_
