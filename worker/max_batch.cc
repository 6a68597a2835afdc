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

#include "worker/workload.h"

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
  const auto probe = [&spec](std::int64_t batch) { return ProbeBatch(spec, batch); };
  if (IsCudaDevice(spec.device)) {
    // The device's memory is the limit: the caching allocator frees what it caches and
    // retries before it throws, so an OutOfMemoryError means the batch does not fit.
    out.limit = "device";
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
    throw WorkloadError("search.max_batch: not even batch_size 1 fits within " +
                        (out.limit == "device"
                             ? std::string("the device's memory")
                             : "memory_mb " + std::to_string(out.memory_mb) + " MiB") +
                        ": " + out.probes.back().reason);
  }
  return out;
}

}  // namespace benchfleet::worker
