#include "coordinator/core/fingerprint.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace benchfleet {
namespace {

using nlohmann::json;

json TextOrNull(const std::optional<std::string>& text) {
  return text ? json(*text) : json(nullptr);
}

// cpu_model and torch_version: an empty one is no more said than a missing one.
json NonEmptyOrNull(const std::optional<std::string>& text) {
  return text && !text->empty() ? json(*text) : json(nullptr);
}

}  // namespace

HostFingerprint FingerprintOf(const Capabilities& c) { return FingerprintOf(c, c.torch); }

HostFingerprint FingerprintOf(const Capabilities& c, const TorchFacts& torch) {
  std::vector<std::string> gpu_models;
  for (const GpuInfo& gpu : c.gpus) gpu_models.push_back(gpu.name);
  std::sort(gpu_models.begin(), gpu_models.end());
  HostFingerprint f;
  f.parts = {{"cpu_model", NonEmptyOrNull(c.host.cpu_model)},
             {"logical_cpus", c.host.logical_cpus ? json(*c.host.logical_cpus) : json(nullptr)},
             // Whole GiB: MemTotal moves by a few MB between kernels and firmware settings.
             {"memory_gib", c.host.memory_mb
                                ? json(std::llround(static_cast<double>(*c.host.memory_mb) / 1024))
                                : json(nullptr)},
             {"gpu_models", gpu_models},
             {"gpu_count", gpu_models.size()},
             {"nvidia_driver", TextOrNull(c.host.nvidia_driver.text)},
             {"cuda", TextOrNull(torch.cuda_version.text)},
             {"torch_version", NonEmptyOrNull(torch.torch_version)},
             {"blas", TextOrNull(torch.blas)},
             {"blas_config", TextOrNull(torch.blas_config.text)},
             {"benchfleet_version", TextOrNull(c.host.benchfleet_version)}};
  // nlohmann's objects keep their keys sorted: the text is canonical.
  f.sha256 = Sha256Hex(f.parts.dump());
  return f;
}

std::string SeriesOf(const std::string& fingerprint, const json& job_spec) {
  // A slowdown dialled on purpose is not what a result is keyed on (schemas/worker.md,
  // Slowdown): the slowed job is judged against its own series.
  if (job_spec.is_object() && job_spec.contains("slowdown")) {
    json keyed = job_spec;
    keyed.erase("slowdown");
    return Sha256Hex(fingerprint + "\n" + keyed.dump());
  }
  return Sha256Hex(fingerprint + "\n" + job_spec.dump());
}

std::optional<int64_t> SeriesKeyOf(const std::string& series) {
  constexpr size_t kHexDigits = 15;  // 60 bits: as schemas/legacy_upgrade.sql computes it
  if (series.size() < kHexDigits) return std::nullopt;
  int64_t key = 0;
  for (size_t i = 0; i < kHexDigits; ++i) {
    const char c = series[i];
    int digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else
      return std::nullopt;
    key = (key << 4) | digit;
  }
  return key;
}

}  // namespace benchfleet
