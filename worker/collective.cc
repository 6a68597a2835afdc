#include "worker/collective.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "worker/c10d_compat.h"

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
  c10d_compat::StorePtr store;
  c10d_compat::ProcessGroupPtr group;
  at::Tensor buffer;                // this rank's input (and output, but for allgather)
  std::vector<at::Tensor> gathered;  // allgather: one per rank
  at::Tensor decision;              // one float64, for the timing decisions

  void Call(const std::string& op) {
    if (op == "allreduce") {
      c10d_compat::AllReduceSum(group, buffer);
    } else if (op == "broadcast") {
      c10d_compat::Broadcast(group, buffer, 0);
    } else {
      c10d_compat::AllGather(group, gathered, buffer);
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
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(d.timeout_s * 1e3));
  auto c = std::make_shared<Collective>();
  try {
    c->store = c10d_compat::OpenTcpStore(d.store_host, static_cast<std::uint16_t>(d.store_port),
                                         d.rank == 0, d.world_size, timeout);
    c->group = c10d_compat::OpenGlooGroup(c->store, d.rank, d.world_size, d.address, timeout);
  } catch (const std::exception& e) {
    // c10's own errors carry a backtrace; the job's author needs the first line.
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw WorkloadError("rank " + std::to_string(d.rank) + " of " + std::to_string(d.world_size) +
                        " could not meet the others at the store " + d.store_host + ":" +
                        std::to_string(d.store_port) + " from address " + d.address +
                        " within distributed.timeout_s (" + json(d.timeout_s).dump() +
                        " s): " + (c10_error ? c10_error->what_without_backtrace() : e.what()));
  }
  const std::int64_t element = spec.dtype == "fp32" ? 4 : 2;
  const auto options = at::TensorOptions().dtype(ElementType(spec));
  c->buffer = at::zeros({spec.collective.bytes / element}, options);
  if (spec.model == "allgather") {
    for (std::int64_t j = 0; j < d.world_size; ++j) c->gathered.push_back(at::zeros_like(c->buffer));
  }
  c->decision = at::zeros({1}, at::TensorOptions().dtype(at::kDouble));
  try {
    CheckOnce(*c, spec);
  } catch (const c10::Error& e) {
    throw WorkloadError("the " + spec.model + " check failed on rank " + std::to_string(d.rank) +
                        ": " + e.what_without_backtrace());
  }

  PreparedWorkload workload;
  const std::string op = spec.model;
  workload.iteration = [c, op] { c->Call(op); };
  workload.agree = [c](double mine) {
    c->decision.fill_(mine);
    c10d_compat::Broadcast(c->group, c->decision, 0);
    return c->decision.item<double>();
  };
  const double call_bytes = CallBytes(spec);
  const double bus_factor = BusBandwidthFactor(op, d.world_size);
  workload.report = [c, spec, call_bytes, bus_factor](double median_ms) {
    const DistributedSpec& rank = *spec.distributed;
    const double algbw_gbps = median_ms > 0 ? call_bytes / (median_ms * 1e-3) / 1e9 : 0;
    return json{{"collective",
                 {{"op", spec.model},
                  {"backend", "gloo"},
                  {"bytes", spec.collective.bytes},
                  {"call_bytes", call_bytes},
                  {"world_size", rank.world_size},
                  {"rank", rank.rank},
                  {"store", rank.store_host + ":" + std::to_string(rank.store_port)},
                  {"address", rank.address},
                  {"checked", true},
                  {"algbw_gbps", algbw_gbps},
                  {"busbw_gbps", algbw_gbps * bus_factor}}}};
  };
  return workload;
}

}  // namespace benchfleet::worker
