// What an agent says of its host when it registers (schemas/protocol.md "register"), as
// one struct for both sides: the agent fills it from its host probe and its worker's
// --probe and sends ToJson(); the coordinator reads it with FromJson. Matching, the store
// and the fingerprint read these fields, never the JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/job_needs.h"
#include "common/status.h"
#include "common/thread_placement.h"

namespace benchfleet {

// Longest text accepted for a capability (a CPU model name, a host name), in bytes.
inline constexpr size_t kMaxCapabilityText = 1024;
// Most workers an agent carries (`--worker` given more than once): a handful of LibTorch
// versions side by side; more is a mistake.
inline constexpr size_t kMaxAgentWorkers = 16;
// Longest `torch.parallel_info` accepted, in bytes: LibTorch's several-line account of
// its thread pools and libraries, some 600 bytes.
inline constexpr size_t kMaxParallelInfoText = 16 * 1024;

// A text member that may be sent as null, where null says something that leaving the
// member out does not ("nvidia_driver": null is a host with no driver loaded; a missing
// one, an agent that did not look). The two are kept apart so that a document read and
// written back is unchanged.
struct NullableText {
  bool sent = false;                // present, as a text or as null
  std::optional<std::string> text;  // nullopt when sent as null, or not sent

  // Sent: the text, or null when there is none.
  static NullableText Of(std::optional<std::string> text) { return {true, std::move(text)}; }
  bool operator==(const NullableText& other) const;
};

// A GPU the agent's worker can use, as LibTorch's process sees it.
struct GpuInfo {
  int64_t index = 0;
  std::string name;
  std::optional<double> memory_mb;

  bool operator==(const GpuInfo& other) const;
  nlohmann::json ToJson() const;
  // `where` names the entry ("capabilities.gpus[1]"); an entry without an index is the
  // GPU at `position` in its list.
  static StatusOr<GpuInfo> FromJson(const nlohmann::json& gpu, const std::string& where,
                                    int64_t position);
};

// capabilities.host: what the agent's host probe found (agent/host_probe.h). Each member
// is written when it is set.
struct HostFacts {
  std::optional<std::string> hostname;
  // /etc/machine-id: agents with the same one share a machine. None or empty: the agent
  // is a machine of its own.
  std::optional<std::string> machine_id;
  std::optional<std::string> cpu_model;  // empty where /proc/cpuinfo names none
  std::optional<int64_t> logical_cpus;
  std::optional<std::string> allowed_cpus;  // the CPUs the agent process may use, "0-3"
  std::optional<int64_t> memory_mb;
  std::optional<std::string> kernel;  // "Linux 6.1.0"
  std::optional<std::string> arch;    // "x86_64"
  std::optional<std::string> os;      // /etc/os-release's PRETTY_NAME
  NullableText nvidia_driver;         // /proc/driver/nvidia/version; null: no driver loaded
  std::optional<std::string> benchfleet_version;

  bool operator==(const HostFacts& other) const;
  nlohmann::json ToJson() const;
  // `where` names the object ("capabilities.host").
  static StatusOr<HostFacts> FromJson(const nlohmann::json& host, const std::string& where);
};

// capabilities.torch: what `benchfleet-worker --probe` printed of its LibTorch
// (worker/host/torch_runtime.h, ProbeInfo). Each member is written when it is set.
struct TorchFacts {
  std::optional<std::string> torch_version;
  std::optional<std::string> blas;  // "openblas", "unknown"
  NullableText blas_config;         // openblas_get_config(); null for another BLAS
  NullableText blas_threading;      // "sequential", "pthreads", "openmp"; null for another BLAS
  std::optional<bool> onednn;
  std::optional<bool> openmp;
  std::optional<std::string> parallel_info;  // at::get_parallel_info()
  std::optional<bool> cuda_available;
  std::optional<int64_t> cuda_device_count;
  NullableText cuda_version;   // of the CUDA runtime LibTorch runs with, "13.0"; null: none
  NullableText cudnn_version;  // "9.10.2"; null: none
  std::optional<std::vector<GpuInfo>> gpus;
  std::optional<std::vector<std::string>> quantized_engines;  // "fbgemm", "qnnpack", ...
  // The versions of the libraries its kernels come from, as LibTorch reports them
  // (at::show_config): the BLAS ("0.3.21" of OpenBLAS, "2024.2" of MKL), MKL where it is
  // built in, oneDNN ("3.13.3"); each null where there is none.
  NullableText blas_version;
  NullableText mkl_version;
  NullableText onednn_version;
  // The code path MKL's dispatch took on this CPU, as MKL names it ("Intel(R)
  // Architecture processors", its generic path, on AMD CPUs); null without MKL.
  NullableText mkl_path;
  // How it can run a zoo model (common/job_spec.h, KnownTechniques): "eager" always;
  // "torchscript" and "aoti" where the worker has its torch's python to compile with and
  // loads AOTInductor packages.
  std::optional<std::vector<std::string>> techniques;
  // Where the agent found this worker (its --worker).
  std::optional<std::string> worker_path;

  bool operator==(const TorchFacts& other) const;
  nlohmann::json ToJson() const;
  // `where` names the object ("capabilities.torch"). The agent reads its worker's probe
  // with this too: a worker is a peer, and what it printed is sent on.
  static StatusOr<TorchFacts> FromJson(const nlohmann::json& torch, const std::string& where);
};

struct Capabilities {
  HostFacts host;
  // The agent's first worker: the one a job that names no `torch` runs on.
  TorchFacts torch;
  // Every worker of the agent, the first one first (`benchfleet-agent --worker A
  // --worker B`), each built against its own LibTorch; empty when the agent sent only
  // `torch` (Workers() then gives that one).
  std::vector<TorchFacts> workers;
  // GPUs this agent's worker can use (LibTorch's view); a cuda:N job needs more than N.
  std::vector<GpuInfo> gpus;
  std::string cpus;  // the CPU list jobs run on, "0-3"; empty when not said
  // The cores, SMT and NUMA nodes of those CPUs, as far as placing a job's threads needs
  // them (common/thread_placement.h): a sweep whose thread_placement no agent can give
  // is refused at submit. None from an agent that did not say.
  std::optional<CpuShape> cpu_shape;

  // The document as FromJson received it, with the members this version does not know
  // (a newer agent's): what the hosts table stores. Nothing reads a field out of it;
  // ToJson does not write it.
  nlohmann::json raw = nlohmann::json::object();

  // The agent's workers: `workers`, or `torch` alone when it sent no list.
  std::vector<TorchFacts> Workers() const;
  // {host, torch, workers, gpus, cpus, cpu_shape}: the register message's `capabilities`.
  nlohmann::json ToJson() const;
  // Refuses a member of the wrong type, or a text too long, naming its path:
  // "capabilities.host.machine_id: must be a string, got 1".
  static StatusOr<Capabilities> FromJson(const nlohmann::json& capabilities);
};

// The first of `workers` (an agent's, in order) that satisfies `needs`; nullopt when none
// does. A worker whose probe named no techniques runs eager only. The agent runs a job on
// this worker, and the coordinator offers the job only to an agent that has one.
std::optional<size_t> PickWorker(const std::vector<TorchFacts>& workers, const WorkerNeeds& needs);

// "1.13.1, 2.15.0": the torch versions of `workers`, for messages.
std::string DescribeTorchVersions(const std::vector<TorchFacts>& workers);

}  // namespace benchfleet
