#include "worker/parallel/collective.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "worker/parallel/ranks.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// The value rank 0 broadcasts in the check of broadcast.
constexpr double kBroadcastCheckValue = 7;

at::ScalarType ElementType(const JobSpec& spec) {
  return spec.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
}

// The bytes one call moves by nccl-tests' definition of the size: the buffer
// all-reduced or broadcast, or the whole gathered output of an all-gather.
double CallBytes(const JobSpec& spec) {
  const double bytes = static_cast<double>(spec.collective.bytes);
  return spec.model == "allgather" ? bytes * static_cast<double>(spec.distributed->world_size)
                                   : bytes;
}

// What the ranks share: the group and the buffers of the timed call.
struct Collective {
  RankGroup ranks;
  at::Tensor buffer;                 // this rank's input (and output, but for allgather)
  std::vector<at::Tensor> gathered;  // allgather: one per rank

  void Call(const std::string& op) {
    if (op == "allreduce") {
      c10d_compat::AllReduceSum(ranks.group, buffer);
    } else if (op == "broadcast") {
      c10d_compat::Broadcast(ranks.group, buffer, 0);
    } else {
      c10d_compat::AllGather(ranks.group, gathered, buffer);
    }
  }
};

// One call with values every rank can predict, compared elementwise: the collective
// moved what it should, between these ranks, before anything is timed.
void CheckOnce(Collective& c, const JobSpec& spec) {
  const std::int64_t rank = spec.distributed->rank;
  const std::int64_t n = spec.distributed->world_size;
  std::string what;
  bool same = true;
  if (spec.model == "allreduce") {
    c.buffer.fill_(static_cast<double>(rank + 1));
    c.Call(spec.model);
    const double expected = static_cast<double>(n * (n + 1) / 2);
    same = c.buffer.eq(expected).all().item<bool>();
    what = "every element the sum over ranks of rank + 1 = " + std::to_string(n * (n + 1) / 2);
  } else if (spec.model == "broadcast") {
    c.buffer.fill_(rank == 0 ? kBroadcastCheckValue : 0.0);
    c.Call(spec.model);
    same = c.buffer.eq(kBroadcastCheckValue).all().item<bool>();
    what = "every element rank 0's value " + std::to_string(kBroadcastCheckValue);
  } else {
    c.buffer.fill_(static_cast<double>(rank));
    c.Call(spec.model);
    for (std::int64_t j = 0; j < n && same; ++j) {
      same = c.gathered[static_cast<std::size_t>(j)].eq(static_cast<double>(j)).all().item<bool>();
    }
    what = "part j of the output all j, from rank j";
  }
  if (!same) {
    throw WorkloadError("the " + spec.model + " check failed on rank " + std::to_string(rank) +
                        ": expected " + what);
  }
  c.buffer.zero_();  // timed calls move zeros: sums stay finite however many run
}

}  // namespace

double BusBandwidthFactor(const std::string& op, std::int64_t world_size) {
  const double n = static_cast<double>(world_size);
  if (op == "allreduce") return 2 * (n - 1) / n;
  if (op == "allgather") return (n - 1) / n;
  return 1;
}

PreparedWorkload PrepareCollective(const JobSpec& spec) {
  const DistributedSpec& d = *spec.distributed;
  auto c = std::make_shared<Collective>();
  c->ranks = JoinRanks(d);
  const std::int64_t element = spec.dtype == "fp32" ? 4 : 2;
  const auto options = at::TensorOptions().dtype(ElementType(spec));
  c->buffer = at::zeros({spec.collective.bytes / element}, options);
  if (spec.model == "allgather") {
    for (std::int64_t j = 0; j < d.world_size; ++j)
      c->gathered.push_back(at::zeros_like(c->buffer));
  }
  try {
    CheckOnce(*c, spec);
  } catch (const WorkloadError&) {
    throw;
  } catch (const std::exception& e) {
    throw WorkloadError("the " + spec.model + " check failed on rank " + std::to_string(d.rank) +
                        ": " + ErrorMessage(e));
  }

  PreparedWorkload workload;
  const std::string op = spec.model;
  workload.iteration = [c, op, rank = d.rank] {
    try {
      c->Call(op);
    } catch (const std::exception& e) {  // Gloo's, when another rank went away mid-call
      throw WorkloadError("the " + op + " failed on rank " + std::to_string(rank) + ": " +
                          ErrorMessage(e));
    }
  };
  workload.agree = RankZeroDecides(c->ranks.group);
  const double call_bytes = CallBytes(spec);
  const double bus_factor = BusBandwidthFactor(op, d.world_size);
  workload.report = [c, spec, call_bytes, bus_factor](const Measurement&, double median_ms) {
    const double algbw_gbps = median_ms > 0 ? call_bytes / (median_ms * 1e-3) / 1e9 : 0;
    return json{{"collective",
                 {{"op", spec.model},
                  {"backend", "gloo"},
                  {"bytes", spec.collective.bytes},
                  {"call_bytes", call_bytes},
                  {"checked", true},
                  {"algbw_gbps", algbw_gbps},
                  {"busbw_gbps", algbw_gbps * bus_factor}}}};
  };
  return workload;
}

}  // namespace benchfleet::worker
