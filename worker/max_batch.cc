#include "worker/max_batch.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>

#include "worker/cuda_allocator_compat.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// A probe's reason keeps the head of the allocator's message (which names the bytes
// asked for); LibTorch appends a long hint after it.
constexpr std::size_t kReasonChars = 240;

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

// RLIMIT_AS's soft limit lowered to `bytes` for this scope (never raised: a lower limit
// the worker was started with stays), then put back. Only the soft limit moves, so it
// can be restored.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(double bytes) {
    if (getrlimit(RLIMIT_AS, &saved_) != 0)
      throw WorkloadError("search.max_batch: getrlimit(RLIMIT_AS) failed");
    rlimit lowered = saved_;
    const auto wanted = static_cast<rlim_t>(bytes);
    lowered.rlim_cur = std::min({saved_.rlim_cur, saved_.rlim_max, wanted});
    if (setrlimit(RLIMIT_AS, &lowered) != 0)
      throw WorkloadError("search.max_batch: setrlimit(RLIMIT_AS) failed");
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

 private:
  rlimit saved_{};
};

// One iteration at `batch`: the model built (weights, inputs, the reference pass) and run
// once more as timed iterations run it (train: forward, backward, the SGD step).
BatchProbe ProbeBatch(const JobSpec& spec, std::int64_t batch) {
  JobSpec probe = spec;
  probe.batch_size = batch;
  probe.max_batch.reset();
  try {
    const PreparedWorkload workload = PrepareWorkload(probe);
    workload.iteration();
    if (workload.block_end) workload.block_end();
    return {batch, true, ""};
  } catch (const OutOfMemory& e) {
    return {batch, false, std::string(e.what()).substr(0, kReasonChars)};
  } catch (const std::bad_alloc&) {
    return {batch, false, "std::bad_alloc: an allocation past the limit failed"};
  }
}

// The CUDA caching allocator of one GPU capped at `bytes` of its `total_bytes` for this
// scope, then uncapped and its cache emptied: the timed run starts from a clean cache.
// The cap counts what the allocator holds, cached blocks too: empty the cache first.
class DeviceMemoryLimit {
 public:
  DeviceMemoryLimit(int device, double bytes, double total_bytes) : device_(device) {
    cuda_allocator_compat::SetMemoryFraction(std::clamp(bytes / total_bytes, 0.0, 1.0), device_);
  }
  ~DeviceMemoryLimit() {
    try {
      cuda_allocator_compat::SetMemoryFraction(1.0, device_);
      cuda_allocator_compat::EmptyCache();
    } catch (...) {  // a destructor must not throw; a broken device fails the next call
    }
  }
  DeviceMemoryLimit(const DeviceMemoryLimit&) = delete;
  DeviceMemoryLimit& operator=(const DeviceMemoryLimit&) = delete;

 private:
  int device_;
};

// The GPU index of a "cuda" or "cuda:N" device.
int CudaDeviceIndex(const std::string& device) {
  const std::size_t colon = device.find(':');
  return colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1));
}

// What the worker reserves once and keeps, whatever the batch: the thread pools' stacks
// and malloc arenas, the BLAS buffers, oneDNN's kernels, LibTorch's own state. All of
// it is in the baseline the limit is counted from, so memory_mb is what the model, its
// inputs and its activations may take. Batch 1 without a limit also shows the job runs
// at all before any probe is limited.
void WarmRuntime(const JobSpec& spec) {
  at::parallel_for(0, at::get_num_threads(), 1, [](std::int64_t, std::int64_t) {
    void* touched = std::malloc(1024);  // this thread's arena
    std::free(touched);
  });
  {
    c10::InferenceMode guard;
    const at::Tensor a = at::randn({512, 512});
    (void)at::mm(a, a);  // every BLAS thread's buffer
  }
  const BatchProbe one = ProbeBatch(spec, 1);
  if (!one.fits) {
    throw WorkloadError("search.max_batch: batch 1 does not fit in this host's memory: " +
                        one.reason);
  }
}

}  // namespace

std::vector<BatchProbe> SearchLargestBatch(std::int64_t start, std::int64_t cap,
                                           const std::function<BatchProbe(std::int64_t)>& probe) {
  std::vector<BatchProbe> probes;
  cap = std::max<std::int64_t>(cap, 1);
  std::int64_t fit = 0;   // the largest batch known to fit (0: none yet)
  std::int64_t fail = 0;  // the smallest known not to (0: none yet)
  for (std::int64_t batch = std::clamp<std::int64_t>(start, 1, cap);;) {
    probes.push_back(probe(batch));
    if (!probes.back().fits) {
      fail = batch;
      break;
    }
    fit = batch;
    if (batch >= cap) return probes;
    batch = std::min(cap, batch * 2);
  }
  // Between the last that fit and the first that did not (below `start` when even it
  // did not fit).
  while (fail - fit > 1) {
    const std::int64_t middle = fit + (fail - fit) / 2;
    probes.push_back(probe(middle));
    (probes.back().fits ? fit : fail) = middle;
  }
  return probes;
}

std::int64_t LargestFitting(const std::vector<BatchProbe>& probes) {
  std::int64_t largest = 0;
  for (const BatchProbe& p : probes) {
    if (p.fits) largest = std::max(largest, p.batch_size);
  }
  return largest;
}

std::optional<double> AddressSpaceMiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmSize:", 0) != 0) continue;
    std::istringstream fields(line.substr(7));
    double kib = 0;
    if (fields >> kib) return kib / 1024.0;
  }
  return std::nullopt;
}

json MaxBatchResult::Json() const {
  json tried = json::array();
  for (const BatchProbe& p : probes) {
    json entry = {{"batch_size", p.batch_size}, {"fits", p.fits}};
    if (!p.fits) entry["reason"] = p.reason;
    tried.push_back(std::move(entry));
  }
  return {{"max_batch", max_batch},
          {"memory_mb", memory_mb},
          {"limit", limit},
          {"baseline_mb", baseline_mb ? json(*baseline_mb) : json(nullptr)},
          {"limit_mb", limit_mb ? json(*limit_mb) : json(nullptr)},
          {"probes", std::move(tried)},
          {"search_s", search_s}};
}

MaxBatchResult SearchMaxBatch(const JobSpec& spec) {
  const auto begin = std::chrono::steady_clock::now();
  MaxBatchResult out;
  out.memory_mb = spec.max_batch->memory_mb;
  const auto probe = [&spec](std::int64_t batch) {
    const BatchProbe tried = ProbeBatch(spec, batch);
    // Each probe counts from the baseline: what the last one freed goes back to the
    // system, or glibc keeps it (heap fragments past its trim threshold) and the next
    // probe is charged for it. Without this a probe that failed left enough behind that
    // every smaller one failed too, and how much depended on the binary's own layout.
    malloc_trim(0);
    return tried;
  };
  if (IsCudaDevice(spec.device)) {
    // memory_mb MiB of the GPU above what the warm worker's allocator holds: the caching
    // allocator capped (setMemoryFraction) frees what it caches and retries before it
    // throws, so an OutOfMemoryError means the batch does not fit within the cap.
    if (!cuda_allocator_compat::kCanLimit) {
      throw WorkloadError(
          "search.max_batch.memory_mb: this worker was built against a LibTorch without CUDA "
          "(no libc10_cuda), so it cannot cap the CUDA caching allocator at memory_mb; build "
          "it against a CUDA LibTorch, or search on device \"cpu\"");
    }
    out.limit = "device";
    const int device = CudaDeviceIndex(spec.device);
    // Batch 1 unlimited: the CUDA context, the BLAS handles and their workspaces (which
    // the allocator keeps) exist before the baseline is read, and the job runs at all.
    const BatchProbe one = ProbeBatch(spec, 1);
    if (!one.fits) {
      throw WorkloadError("search.max_batch: batch 1 does not fit in " + spec.device +
                          "'s memory: " + one.reason);
    }
    cuda_allocator_compat::EmptyCache();
    const double total_bytes = static_cast<double>(cuda_allocator_compat::DeviceTotalBytes(device));
    out.baseline_mb =
        static_cast<double>(cuda_allocator_compat::ReservedBytes(device)) / kBytesPerMiB;
    out.limit_mb =
        std::min(*out.baseline_mb + static_cast<double>(out.memory_mb), total_bytes / kBytesPerMiB);
    const DeviceMemoryLimit limit(device, *out.limit_mb * kBytesPerMiB, total_bytes);
    out.probes = SearchLargestBatch(spec.batch_size, kMaxSearchBatch, probe);
  } else {
    out.limit = "address_space";
    WarmRuntime(spec);
    malloc_trim(0);  // hand back what the warm-up freed, so the baseline is what stays
    out.baseline_mb = AddressSpaceMiB();
    if (!out.baseline_mb) {
      throw WorkloadError(
          "search.max_batch: cannot read this process's address space "
          "(/proc/self/status VmSize) to count memory_mb from");
    }
    out.limit_mb = *out.baseline_mb + static_cast<double>(out.memory_mb);
    const AddressSpaceLimit limit(*out.limit_mb * kBytesPerMiB);
    out.probes = SearchLargestBatch(spec.batch_size, kMaxSearchBatch, probe);
  }
  out.max_batch = LargestFitting(out.probes);
  out.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  if (out.max_batch == 0) {
    throw WorkloadError("search.max_batch: not even batch_size 1 fits within memory_mb " +
                        std::to_string(out.memory_mb) + " MiB" +
                        (out.limit == "device" ? " of " + spec.device : std::string()) + ": " +
                        out.probes.back().reason);
  }
  return out;
}

}  // namespace benchfleet::worker
