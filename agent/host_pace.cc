#include "agent/host_pace.h"

#include <sched.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>

namespace benchfleet {
namespace {

constexpr int kN = 64;
constexpr size_t kMatrixBytes = kN * kN * sizeof(float);
// Where the three matrices lie in their one page-aligned block: 1 KiB apart beyond their
// 16 KiB, so that no row of one is 4 KiB (a page) away from the row of another that the
// same step reads or writes. Matrices on the agent's stack, as the reference had them,
// lay wherever that process's stack did, 16 KiB apart: the loads of B then aliased the
// stores of C (4K aliasing), and how much depended on the process; the same binary read
// 0.030 to 0.045 ms a product from one fresh agent to the next on a quiet 2-vCPU Xeon
// (docs/performance.md, The host's pace).
constexpr size_t kStride = kMatrixBytes + 1024;
// Whole pages: aligned_alloc takes a size that is a multiple of its alignment (glibc lets
// another pass; AddressSanitizer, as the standard, refuses it).
constexpr size_t kPage = 4096;
constexpr size_t kBlockBytes = (3 * kStride + kPage - 1) / kPage * kPage;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// C = A x B, one row of C at a time accumulated in a local array the compiler keeps in
// vector registers: the inner loop only loads (A's element, B's row), so its speed does
// not hinge on store-to-load forwarding, and the compiler vectorizes it the same way on
// every build of the agent.
__attribute__((noinline)) void Multiply(const float* __restrict a, const float* __restrict b,
                                        float* __restrict c) {
  for (int i = 0; i < kN; ++i) {
    float row[kN] = {};
    for (int k = 0; k < kN; ++k) {
      const float aik = a[i * kN + k];
      for (int j = 0; j < kN; ++j) row[j] += aik * b[k * kN + j];
    }
    for (int j = 0; j < kN; ++j) c[i * kN + j] = row[j];
  }
}

// The reference on the calling thread, where it now may run: ms per product.
double RunReference() {
  std::unique_ptr<char, FreeDeleter> block(
      static_cast<char*>(std::aligned_alloc(kPage, kBlockBytes)));
  if (!block) return 0;
  float* a = reinterpret_cast<float*>(block.get());
  float* b = reinterpret_cast<float*>(block.get() + kStride);
  float* c = reinterpret_cast<float*>(block.get() + 2 * kStride);
  for (int i = 0; i < kN * kN; ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25F;
    b[i] = static_cast<float>(i % 5) * 0.5F;
  }
  volatile float sink = 0;  // keeps the products from being optimized away
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < kHostPaceReps; ++rep) {
    a[rep % (kN * kN)] += 1.0F;  // each product's input differs from the last's
    Multiply(a, b, c);
    sink = sink + c[rep % (kN * kN)];
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s * 1000 / kHostPaceReps;
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

}  // namespace

nlohmann::json HostPace::ToJson() const {
  nlohmann::json out = {
      {"ms", ms},
      {"before_ms", before_ms},
      {"cpus", cpus},
      {"cpu_ms", cpu_ms},
      {"reference",
       "64x64x64 fp32 matrix product, plain C++, one thread per CPU in turn, before and "
       "after the worker"}};
  if (after_ms) {
    out["after_ms"] = *after_ms;
    out["after_cpu_ms"] = after_cpu_ms;
  }
  return out;
}

HostPace MeasureHostPace(const std::vector<int>& cpus) {
  HostPace pace;
  pace.cpu_ms = RunOnEach(cpus, &pace.cpus);
  pace.before_ms = Mean(pace.cpu_ms);
  pace.ms = pace.before_ms;
  return pace;
}

void MeasureHostPaceAfter(HostPace* pace) {
  std::vector<int> measured;
  pace->after_cpu_ms = RunOnEach(pace->cpus, &measured);
  pace->after_ms = Mean(pace->after_cpu_ms);
  if (pace->before_ms > 0 && *pace->after_ms > 0)
    pace->ms = std::sqrt(pace->before_ms * *pace->after_ms);
}

std::vector<double> RunOnEach(const std::vector<int>& cpus, std::vector<int>* measured) {
  std::vector<double> out;
  measured->clear();
  cpu_set_t original;
  CPU_ZERO(&original);
  const bool pinnable = !cpus.empty() && sched_getaffinity(0, sizeof original, &original) == 0;
  if (pinnable) {
    for (size_t i = 0; i < cpus.size() && i < kHostPaceMaxCpus; ++i) {
      if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[i], &one);
      if (sched_setaffinity(0, sizeof one, &one) != 0) continue;
      measured->push_back(cpus[i]);
      out.push_back(RunReference());
    }
    sched_setaffinity(0, sizeof original, &original);
  }
  if (out.empty()) out.push_back(RunReference());
  return out;
}

}  // namespace benchfleet
