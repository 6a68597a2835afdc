#include "worker/host/stream_triad.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <new>
#include <thread>

namespace benchfleet::worker {
namespace {

// STREAM's values: with these every a[i] stays exactly representable, so
// the result can be checked with ==.
constexpr double kInitialA = 1.0;
constexpr double kInitialB = 2.0;
constexpr double kInitialC = 0.5;
constexpr double kScalar = 3.0;

// All participants arrive before any leaves. Waiters spin with a yield:
// each thread owns its CPU, and a futex wake-up (tens of microseconds)
// would show up in the timing of a short pass.
class SpinBarrier {
 public:
  explicit SpinBarrier(int count) : count_(count), remaining_(count) {}

  void Wait() {
    const int generation = generation_.load(std::memory_order_acquire);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      remaining_.store(count_, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    while (generation_.load(std::memory_order_acquire) == generation) std::this_thread::yield();
  }

 private:
  const int count_;
  std::atomic<int> remaining_;
  std::atomic<int> generation_{0};
};

void Triad(double* __restrict a, const double* __restrict b, const double* __restrict c,
           double scalar, std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) a[i] = b[i] + scalar * c[i];
}

bool PinCallingThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

TriadResult RunStreamTriad(const TriadOptions& options) {
  TriadResult result;
  const auto threads = static_cast<int>(options.cpus.size());
  const std::int64_t elements = options.array_bytes / static_cast<std::int64_t>(sizeof(double));
  if (threads == 0 || elements < threads || options.timed_passes < 1) {
    result.error = "stream triad needs at least one CPU, one element per thread and one pass";
    return result;
  }
  // Default-initialised: no page is touched until its thread writes it.
  std::unique_ptr<double[]> a(new (std::nothrow) double[elements]);
  std::unique_ptr<double[]> b(new (std::nothrow) double[elements]);
  std::unique_ptr<double[]> c(new (std::nothrow) double[elements]);
  if (!a || !b || !c) {
    result.error = "cannot allocate 3 arrays of " + std::to_string(options.array_bytes) + " bytes";
    return result;
  }

  SpinBarrier barrier(threads);
  std::vector<double> pass_seconds(static_cast<std::size_t>(options.timed_passes) + 1);
  std::atomic<int> pinned{0};
  std::atomic<int> verified{0};
  auto body = [&](int t) {
    if (PinCallingThread(options.cpus[static_cast<std::size_t>(t)])) ++pinned;
    const std::int64_t begin = elements * t / threads;
    const std::int64_t end = elements * (t + 1) / threads;
    for (std::int64_t i = begin; i < end; ++i) {
      a[i] = kInitialA;
      b[i] = kInitialB;
      c[i] = kInitialC;
    }
    for (std::size_t pass = 0; pass < pass_seconds.size(); ++pass) {
      barrier.Wait();
      const double start = t == 0 ? Now() : 0;
      Triad(a.get(), b.get(), c.get(), kScalar, begin, end);
      barrier.Wait();
      if (t == 0) pass_seconds[pass] = Now() - start;
    }
    const double expected = kInitialB + kScalar * kInitialC;
    if (std::all_of(a.get() + begin, a.get() + end, [&](double x) { return x == expected; })) {
      ++verified;
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (auto& thread : pool) thread.join();

  // Pass 0 warms the TLB and page tables and is not counted, as in STREAM.
  result.best_seconds = *std::min_element(pass_seconds.begin() + 1, pass_seconds.end());
  result.elements = elements;
  result.threads = threads;
  result.pinned = pinned == threads;
  result.verified = verified == threads;
  result.best_gbps = result.best_seconds > 0
                         ? static_cast<double>(kTriadBytesPerElement) *
                               static_cast<double>(elements) / result.best_seconds / 1e9
                         : 0;
  return result;
}

}  // namespace benchfleet::worker
