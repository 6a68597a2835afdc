// Checks what the triad computes and reports; how fast it runs is a
// property of the host, measured by --calibrate, not asserted here.
#include "worker/host/stream_triad.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <vector>

namespace benchfleet::worker {
namespace {

std::vector<int> FirstAllowedCpus(std::size_t count) {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < count; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

TEST(StreamTriadTest, ComputesTheTriadOnEveryThreadSlice) {
  for (std::size_t threads : {1u, 2u}) {
    const std::vector<int> cpus = FirstAllowedCpus(threads);
    ASSERT_FALSE(cpus.empty());
    // 1 MiB per array, an odd element count so slices differ in size.
    const TriadResult r = RunStreamTriad({(1 << 20) + 8 * 3, cpus, 3});
    EXPECT_TRUE(r.error.empty()) << r.error;
    EXPECT_EQ(r.elements, ((1 << 20) + 8 * 3) / 8);
    EXPECT_EQ(r.threads, static_cast<int>(cpus.size()));
    EXPECT_TRUE(r.pinned);
    EXPECT_TRUE(r.verified);
    EXPECT_GT(r.best_seconds, 0);
    EXPECT_DOUBLE_EQ(r.best_gbps, static_cast<double>(kTriadBytesPerElement) *
                                      static_cast<double>(r.elements) / r.best_seconds / 1e9);
  }
}

TEST(StreamTriadTest, RejectsImpossibleOptions) {
  EXPECT_FALSE(RunStreamTriad({1 << 20, {}, 3}).error.empty());
  EXPECT_FALSE(RunStreamTriad({8, {0, 0}, 3}).error.empty());  // fewer elements than threads
  const std::vector<int> cpus = FirstAllowedCpus(1);
  EXPECT_FALSE(RunStreamTriad({1 << 20, cpus, 0}).error.empty());
}

}  // namespace
}  // namespace benchfleet::worker
