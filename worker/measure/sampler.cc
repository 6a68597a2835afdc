#include "worker/measure/sampler.h"

#include "worker/measure/side_sampler.h"

namespace benchfleet::worker {

Measurement MeasureWorkload(const std::function<void()>& iteration, const TimingOptions& options,
                            Clock& clock, const std::function<void()>& block_end,
                            const Agree& agree,
                            const std::function<void(bool start)>& region_edge) {
  SideSampler side(iteration, block_end, options, agree);
  auto agreed = [&](bool decision) { return agree ? agree(decision ? 1 : 0) != 0 : decision; };

  // Warm-up; the last iteration's duration gives the first guess of the block size.
  const double warmup_start = clock.WallSeconds();
  double last_iteration_s = 0;
  double now = warmup_start;
  do {
    last_iteration_s = side.WarmUpOnce(clock);
    // After an agreement (a collective call of its own) the clock is read again.
    now = clock.WallSeconds();
  } while (agreed(now - warmup_start < options.warmup_s));
  Measurement& m = side.measurement();
  m.warmup_s = now - warmup_start;

  // Sampling. The first blocks also confirm the block size: one warm-up iteration can
  // be slow for reasons of its own (a cold cache, a page fault, a preemption), so the
  // guess it gives is checked against a block of k before any sample counts.
  side.SizeBlocks(last_iteration_s);
  const double region_wall_start = clock.WallSeconds();
  const double region_cpu_start = clock.ProcessCpuSeconds();
  const std::optional<HostCpuTimes> host_start = clock.HostCpu();
  if (region_edge) region_edge(true);
  for (;;) {
    const double after = side.RunBlock(clock);
    if (agreed(side.Done(after, region_wall_start))) break;
  }
  if (region_edge) region_edge(false);
  m.timed_s = clock.WallSeconds() - region_wall_start;
  m.cpu_s = clock.ProcessCpuSeconds() - region_cpu_start;
  if (const std::optional<HostCpuTimes> host_end = clock.HostCpu(); host_start && host_end) {
    m.host_load = ComputeHostLoad(*host_start, *host_end, m.cpu_s, m.timed_s);
  }
  m.effective_threads = m.timed_s > 0 ? m.cpu_s / m.timed_s : 0;
  side.Finish();
  return std::move(m);
}

}  // namespace benchfleet::worker
