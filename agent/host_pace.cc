#include "agent/host_pace.h"

#include <sched.h>

#include <array>
#include <chrono>

namespace benchfleet {
namespace {

constexpr int kN = 64;
using Matrix = std::array<float, kN * kN>;

// C = A x B, the i-k-j order (the compiler vectorizes the inner loop the same way on
// every build of the agent).
void Multiply(const Matrix& a, const Matrix& b, Matrix& c) {
  c.fill(0.0F);
  for (int i = 0; i < kN; ++i) {
    for (int k = 0; k < kN; ++k) {
      const float aik = a[i * kN + k];
      for (int j = 0; j < kN; ++j) c[i * kN + j] += aik * b[k * kN + j];
    }
  }
}

// The reference on the calling thread, where it now may run: ms per product.
double RunReference() {
  Matrix a, b, c;
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

}  // namespace

nlohmann::json HostPace::ToJson() const {
  return {{"ms", ms},
          {"cpus", cpus},
          {"cpu_ms", cpu_ms},
          {"reference", "64x64x64 fp32 matrix product, plain C++, one thread per CPU in turn"}};
}

HostPace MeasureHostPace(const std::vector<int>& cpus) {
  HostPace pace;
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
      pace.cpus.push_back(cpus[i]);
      pace.cpu_ms.push_back(RunReference());
    }
    sched_setaffinity(0, sizeof original, &original);
  }
  if (pace.cpu_ms.empty()) pace.cpu_ms.push_back(RunReference());
  double sum = 0;
  for (double ms : pace.cpu_ms) sum += ms;
  pace.ms = sum / static_cast<double>(pace.cpu_ms.size());
  return pace;
}

}  // namespace benchfleet
