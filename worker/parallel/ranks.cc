#include "worker/parallel/ranks.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "worker/measure/stats.h"
#include "worker/models/workload.h"

namespace benchfleet::worker {

std::string ErrorMessage(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  return c10_error ? c10_error->what_without_backtrace() : e.what();
}

RankGroup JoinRanks(const DistributedSpec& d) {
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(d.timeout_s * 1e3));
  try {
    RankGroup ranks;
    ranks.store = c10d_compat::OpenTcpStore(d.store_host, static_cast<std::uint16_t>(d.store_port),
                                            d.rank == 0, d.world_size, timeout);
    ranks.group = c10d_compat::OpenGlooGroup(ranks.store, d.rank, d.world_size, d.address, timeout);
    // In the worker's log (the agent keeps it for a failed job): the gang formed.
    std::cerr << "benchfleet-worker: rank " << d.rank << " of " << d.world_size
              << " met the others at " << d.store_host << ":" << d.store_port << " from "
              << d.address << std::endl;
    return ranks;
  } catch (const std::exception& e) {
    throw WorkloadError("rank " + std::to_string(d.rank) + " of " + std::to_string(d.world_size) +
                        " could not meet the others at the store " + d.store_host + ":" +
                        std::to_string(d.store_port) + " from address " + d.address +
                        " within distributed.timeout_s (" + nlohmann::json(d.timeout_s).dump() +
                        " s): " + ErrorMessage(e));
  }
}

double MedianMsAlone(const std::function<void()>& iteration, const TimingSpec& timing,
                     const std::function<void()>& block_end, double min_block_s) {
  TimingOptions options{timing.warmup_s, timing.min_time_s, timing.max_time_s, timing.target_ci};
  options.min_block_s = min_block_s;
  const Measurement m = MeasureWorkload(iteration, options, SystemClock(), block_end);
  std::vector<double> sorted = m.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  return Quantile(sorted, 0.5);
}

Agree RankZeroDecides(const c10d_compat::ProcessGroupPtr& group) {
  auto decision =
      std::make_shared<at::Tensor>(at::zeros({1}, at::TensorOptions().dtype(at::kDouble)));
  return [group, decision](double mine) {
    decision->fill_(mine);
    c10d_compat::Broadcast(group, *decision, 0);
    return decision->item<double>();
  };
}

}  // namespace benchfleet::worker
