#include "worker/measure/paired_sampler.h"

#include "worker/measure/side_sampler.h"

namespace benchfleet::worker {

PairedMeasurement MeasurePair(const std::function<void()>& a, const std::function<void()>& b,
                              const TimingOptions& options, bool b_first, Clock& clock,
                              const std::function<void()>& block_end) {
  // Wall time runs for both sides at once: each side's own minimum and maximum are
  // twice as long on the clock they read.
  TimingOptions shared = options;
  shared.min_time_s *= 2;
  shared.max_time_s *= 2;
  SideSampler side_a(a, block_end, shared), side_b(b, block_end, shared);
  SideSampler& first = b_first ? side_b : side_a;
  SideSampler& second = b_first ? side_a : side_b;

  double last_first = 0, last_second = 0;
  while (first.measurement().warmup_s < options.warmup_s ||
         second.measurement().warmup_s < options.warmup_s) {
    last_first = first.WarmUpOnce(clock);
    last_second = second.WarmUpOnce(clock);
  }
  first.SizeBlocks(last_first);
  second.SizeBlocks(last_second);

  PairedMeasurement out;
  const double region_wall_start = clock.WallSeconds();
  const double region_cpu_start = clock.ProcessCpuSeconds();
  const std::optional<HostCpuTimes> host_start = clock.HostCpu();
  for (;;) {
    first.RunBlock(clock);
    second.RunBlock(clock);
    second.RunBlock(clock);
    const double after = first.RunBlock(clock);
    ++out.groups;
    // Both sides' rules are read every group (each may drop an earlier regime of its own).
    const bool first_done = first.Done(after, region_wall_start);
    const bool second_done = second.Done(after, region_wall_start);
    if (first_done && second_done) break;
  }
  const double region_s = clock.WallSeconds() - region_wall_start;
  const double cpu_s = clock.ProcessCpuSeconds() - region_cpu_start;
  const std::optional<HostCpuTimes> host_end = clock.HostCpu();
  for (SideSampler* side : {&side_a, &side_b}) {
    Measurement& m = side->measurement();
    m.cpu_s = cpu_s;
    m.effective_threads = region_s > 0 ? cpu_s / region_s : 0;
    if (host_start && host_end)
      m.host_load = ComputeHostLoad(*host_start, *host_end, cpu_s, region_s);
    side->Finish();
  }
  out.a = std::move(side_a.measurement());
  out.b = std::move(side_b.measurement());
  return out;
}

}  // namespace benchfleet::worker
