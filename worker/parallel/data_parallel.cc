#include "worker/parallel/data_parallel.h"

#include <c10/util/Exception.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "worker/measure/clock.h"
#include "worker/measure/stats.h"
#include "worker/models/model.h"
#include "worker/parallel/collective.h"
#include "worker/parallel/ranks.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// Steps trained before timing, by the ranks and by one process on the whole batch,
// whose parameters are then compared.
constexpr int kCheckSteps = 3;
// After kCheckSteps the ranks' parameters may differ from one process's by float
// rounding alone (the gradient is summed in another order): at most this much.
constexpr double kSingleProcessTolerance = 1e-5;

// Wall time, as the sampler reads it.
double Now() { return SystemClock().WallSeconds(); }

// One rank's model and its shard, and what its steps cost.
struct Rank {
  RankGroup ranks;
  Agree agree;  // rank 0 decides
  std::int64_t world_size = 1;
  std::shared_ptr<Model> model;
  std::vector<torch::Tensor> params;
  std::shared_ptr<torch::optim::SGD> optimizer;
  std::vector<torch::Tensor> inputs;  // this rank's shard of the global batch
  torch::Tensor target;               // and of the global target
  std::vector<std::vector<std::size_t>> buckets;
  std::int64_t bytes_per_step = 0;  // gradient bytes all-reduced per step
  // Accumulated over the steps since the last Reset(): for the communication share. With
  // overlap, comm_s is what the step still waits for after backward (the exposed part).
  // batchnorm_s is the BatchNorm layers' statistics summed over the ranks, in forward
  // and backward: never hidden, the layers wait for it.
  double comm_s = 0;
  double batchnorm_s = 0;
  double step_s = 0;
  int synced_norms = 0;  // BatchNorm layers normalising by the global batch (cnn)
  bool alone = false;    // the step in progress is the one-rank baseline

  // Overlap (parallel.overlap), as DDP's reducer does: each parameter's hook copies its
  // gradient into its bucket's flat buffer as backward produces it, and a bucket whose
  // gradients are all in is all-reduced at once, while backward goes on.
  bool overlap = false;
  bool hooks_armed = false;                    // only in an overlapped step
  std::vector<std::size_t> bucket_of;          // by parameter
  std::vector<std::int64_t> offset_in_bucket;  // by parameter, elements
  std::vector<torch::Tensor> flat;             // by bucket
  std::vector<std::size_t> pending;            // by bucket: gradients not yet in
  std::vector<c10d_compat::PendingWork> works;

  void Reset() { comm_s = batchnorm_s = step_s = 0; }

  // forward, backward, the gradients averaged over the ranks (unless `alone`), a step.
  void Step(bool alone_step) {
    const double start = Now();
    alone = alone_step;
    optimizer->zero_grad();
    const torch::Tensor loss = (model->Forward(inputs) - target).pow(2).mean();
    const bool overlapped = overlap && !alone;
    if (overlapped) ArmHooks();
    loss.backward();
    hooks_armed = false;
    const double reduce_start = Now();
    if (overlapped) {
      FinishOverlappedBuckets();
    } else if (!alone) {
      AverageGradients();
    }
    const double reduce_end = Now();
    optimizer->step();
    comm_s += reduce_end - reduce_start;
    step_s += Now() - start;
  }

  void AverageGradients() {
    torch::NoGradGuard no_grad;
    for (const std::vector<std::size_t>& bucket : buckets) {
      std::vector<torch::Tensor> flat_grads;
      for (std::size_t i : bucket) flat_grads.push_back(params[i].grad().reshape(-1));
      torch::Tensor joined = torch::cat(flat_grads);
      c10d_compat::AllReduceSum(ranks.group, joined);
      joined.div_(static_cast<double>(world_size));
      std::int64_t offset = 0;
      for (std::size_t i : bucket) {
        torch::Tensor grad = params[i].grad();
        grad.copy_(joined.narrow(0, offset, grad.numel()).view_as(grad));
        offset += grad.numel();
      }
    }
  }

  // The model's BatchNorm layers' RankSum: forward, the sum over the ranks; backward,
  // the gradient summed over the ranks as well, since every rank's loss depends on the
  // statistics of every rank's shard (torch.distributed.nn.functional.all_reduce's
  // rule). Each rank's averaged gradient is then that of the global batch's loss. In
  // the one-rank baseline, the identity: that rank normalises by its own shard.
  torch::Tensor SumOverRanks(const torch::Tensor& local) {
    if (alone) return local;
    torch::Tensor summed = local.detach().clone();
    TimedAllReduce(summed);
    if (!local.requires_grad()) return summed;
    // `through` carries the gradient back to `local`, summed over the ranks by its hook;
    // through - through.detach() is exactly 0, so the value is exactly the sum.
    torch::Tensor through = local.clone();
    through.register_hook([this](torch::Tensor grad) {
      torch::Tensor total = grad.clone();
      TimedAllReduce(total);
      return total;
    });
    return summed + (through - through.detach());
  }

  void TimedAllReduce(torch::Tensor& tensor) {
    torch::NoGradGuard no_grad;
    const double start = Now();
    c10d_compat::AllReduceSum(ranks.group, tensor);
    batchnorm_s += Now() - start;
  }

  // Once, before the first step: the buckets' buffers and a hook per parameter.
  void InstallOverlapHooks() {
    bucket_of.assign(params.size(), 0);
    offset_in_bucket.assign(params.size(), 0);
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      std::int64_t elements = 0;
      for (std::size_t i : buckets[b]) {
        bucket_of[i] = b;
        offset_in_bucket[i] = elements;
        elements += params[i].numel();
      }
      flat.push_back(
          torch::zeros({elements}, params[buckets[b].front()].options().requires_grad(false)));
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      // The hook runs on backward's thread with the parameter's whole gradient (the
      // engine sums every use first); it leaves the gradient as it is.
      params[i].register_hook([this, i](torch::Tensor grad) { GradientReady(i, grad); });
    }
  }

  void ArmHooks() {
    pending.clear();
    for (const auto& bucket : buckets) pending.push_back(bucket.size());
    works.assign(buckets.size(), c10d_compat::PendingWork());
    hooks_armed = true;
  }

  void GradientReady(std::size_t i, const torch::Tensor& grad) {
    if (!hooks_armed) return;
    torch::NoGradGuard no_grad;
    const std::size_t b = bucket_of[i];
    flat[b].narrow(0, offset_in_bucket[i], grad.numel()).copy_(grad.reshape(-1));
    if (--pending[b] == 0) works[b] = c10d_compat::StartAllReduceSum(ranks.group, flat[b]);
  }

  // After backward: wait for every bucket's all-reduce, then each gradient is its
  // bucket's average.
  void FinishOverlappedBuckets() {
    torch::NoGradGuard no_grad;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      if (!works[b]) {
        throw WorkloadError("bucket " + std::to_string(b) + " of the data-parallel step had " +
                            std::to_string(pending[b]) + " gradients missing after backward");
      }
      works[b]->wait();
      flat[b].div_(static_cast<double>(world_size));
      for (std::size_t i : buckets[b]) {
        torch::Tensor grad = params[i].grad();
        grad.copy_(flat[b].narrow(0, offset_in_bucket[i], grad.numel()).view_as(grad));
      }
    }
  }

  // Every rank takes rank 0's parameters.
  void TakeRankZerosParameters() {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : params) {
      torch::Tensor data = p.detach();
      c10d_compat::Broadcast(ranks.group, data, 0);
    }
  }
};

// The model of `spec` on the whole global batch, and the fixed random target its
// loss is measured against: the same on every rank (the same seed).
struct GlobalBatch {
  std::shared_ptr<Model> model;
  std::vector<torch::Tensor> inputs;
  torch::Tensor target;
};

GlobalBatch BuildGlobal(const JobSpec& spec) {
  torch::manual_seed(spec.seed);
  BuiltModel built = BuildZooModel(spec);
  GlobalBatch global;
  global.model = std::move(built.model);
  global.inputs = std::move(built.inputs);
  for (torch::Tensor& p : global.model->Parameters()) p.requires_grad_(true);
  global.model->SetTraining(true);
  torch::NoGradGuard no_grad;
  torch::manual_seed(spec.seed + 1);
  global.target = torch::randn_like(global.model->Forward(global.inputs));
  return global;
}

// A hash of the parameters' bytes: equal on two ranks only when bit-identical.
std::int64_t ParameterHash(const std::vector<torch::Tensor>& params) {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a
  for (const torch::Tensor& p : params) {
    const torch::Tensor c = p.detach().contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    const std::size_t n = static_cast<std::size_t>(c.numel()) * c.element_size();
    for (std::size_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 1099511628211ULL;
  }
  return static_cast<std::int64_t>(hash);
}

}  // namespace

std::vector<std::vector<std::size_t>> PlanBuckets(const std::vector<std::int64_t>& param_bytes,
                                                  std::int64_t bucket_bytes) {
  std::vector<std::vector<std::size_t>> buckets;
  std::int64_t filled = 0;
  for (std::size_t k = param_bytes.size(); k-- > 0;) {
    if (buckets.empty() || (filled > 0 && filled + param_bytes[k] > bucket_bytes)) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(k);
    filled += param_bytes[k];
  }
  return buckets;
}

PreparedWorkload PrepareDataParallel(const JobSpec& spec) {
  const DistributedSpec& d = *spec.distributed;
  auto rank = std::make_shared<Rank>();
  rank->world_size = d.world_size;
  rank->ranks = JoinRanks(d);
  rank->agree = RankZeroDecides(rank->ranks.group);
  const std::int64_t rank_batch = spec.batch_size / d.world_size;
  json check;
  double baseline_median_ms = 0;
  double sequential_comm_ms = 0;  // with overlap: the all-reduce of a step, not hidden
  try {
    GlobalBatch global = BuildGlobal(spec);
    rank->model = global.model;
    rank->params = rank->model->Parameters();
    for (torch::Tensor& input : global.inputs) {
      rank->inputs.push_back(input.narrow(0, d.rank * rank_batch, rank_batch).contiguous());
    }
    rank->target = global.target.narrow(0, d.rank * rank_batch, rank_batch).contiguous();
    rank->optimizer = std::make_shared<torch::optim::SGD>(
        rank->params, torch::optim::SGDOptions(kTrainLearningRate));
    std::vector<std::int64_t> param_bytes;
    for (const torch::Tensor& p : rank->params) param_bytes.push_back(TensorBytes(p));
    const auto bucket_bytes = static_cast<std::int64_t>(spec.parallel->bucket_mb * 1024 * 1024);
    rank->buckets = PlanBuckets(param_bytes, bucket_bytes);
    for (std::int64_t b : param_bytes) rank->bytes_per_step += b;
    rank->overlap = spec.parallel->overlap;
    if (rank->overlap) rank->InstallOverlapHooks();
    // The Rank outlives its model, whose layers hold this: a plain pointer, no cycle.
    Rank* self = rank.get();
    rank->synced_norms = rank->model->SynchronizeBatchNorm(
        [self](const torch::Tensor& local) { return self->SumOverRanks(local); });
    rank->TakeRankZerosParameters();

    // Shown, not assumed: a few steps on every rank, then the parameters of every rank
    // bit-identical (hashes gathered from all), and those of rank 0 equal to one
    // process's that trained on the whole batch.
    for (int i = 0; i < kCheckSteps; ++i) rank->Step(/*alone=*/false);
    torch::Tensor hash = torch::full({1}, ParameterHash(rank->params), torch::kLong);
    std::vector<torch::Tensor> hashes;
    for (std::int64_t r = 0; r < d.world_size; ++r) hashes.push_back(torch::zeros_like(hash));
    c10d_compat::AllGather(rank->ranks.group, hashes, hash);
    for (std::int64_t r = 1; r < d.world_size; ++r) {
      if (!hashes[r].equal(hashes[0])) {
        throw WorkloadError("after " + std::to_string(kCheckSteps) + " data-parallel steps rank " +
                            std::to_string(r) + "'s parameters differ from rank 0's");
      }
    }
    double max_abs_diff = 0;
    if (d.rank == 0) {
      GlobalBatch single = BuildGlobal(spec);
      std::vector<torch::Tensor> params = single.model->Parameters();
      torch::optim::SGD optimizer(params, torch::optim::SGDOptions(kTrainLearningRate));
      for (int i = 0; i < kCheckSteps; ++i) {
        optimizer.zero_grad();
        (single.model->Forward(single.inputs) - single.target).pow(2).mean().backward();
        optimizer.step();
      }
      for (std::size_t i = 0; i < params.size(); ++i) {
        max_abs_diff =
            std::max(max_abs_diff,
                     (params[i].detach() - rank->params[i].detach()).abs().max().item<double>());
      }
    }
    max_abs_diff = rank->agree(max_abs_diff);
    if (!(max_abs_diff <= kSingleProcessTolerance)) {
      throw WorkloadError("after " + std::to_string(kCheckSteps) +
                          " data-parallel steps the parameters differ from one process's on the "
                          "whole batch by " +
                          json(max_abs_diff).dump() + " (tolerance " +
                          json(kSingleProcessTolerance).dump() + ")");
    }
    // With overlap, what the all-reduce costs when nothing hides it: a few steps
    // all-reducing after backward, as without overlap.
    if (rank->overlap) {
      rank->overlap = false;
      rank->Reset();
      for (int i = 0; i < kCheckSteps; ++i) rank->Step(/*alone=*/false);
      sequential_comm_ms = rank->agree(rank->comm_s * 1e3 / kCheckSteps);
      rank->overlap = true;
    }
    check = {{"steps", kCheckSteps},
             {"ranks_identical", true},
             {"max_abs_diff_vs_one_process", max_abs_diff},
             {"tolerance", kSingleProcessTolerance}};

    // The one-rank baseline: rank 0 alone on its shard, its device, no communication,
    // while the others wait; then every rank takes its parameters again.
    if (d.rank == 0) {
      baseline_median_ms = MedianMsAlone([rank] { rank->Step(/*alone=*/true); }, spec.timing);
    }
    baseline_median_ms = rank->agree(baseline_median_ms);
    rank->TakeRankZerosParameters();
    rank->Reset();
  } catch (const WorkloadError&) {
    throw;
  } catch (const std::exception& e) {
    // A LibTorch error, or Gloo's when another rank went away mid-call.
    throw WorkloadError("data-parallel training failed on rank " + std::to_string(d.rank) + ": " +
                        ErrorMessage(e));
  }

  PreparedWorkload workload;
  workload.iteration = [rank, spec]() {
    try {
      rank->Step(/*alone=*/false);
    } catch (const std::exception& e) {
      throw WorkloadError("data-parallel step failed on rank " +
                          std::to_string(spec.distributed->rank) + ": " + ErrorMessage(e));
    }
  };
  workload.agree = rank->agree;
  workload.param_bytes = rank->bytes_per_step;
  workload.report = [rank, spec, rank_batch, baseline_median_ms, sequential_comm_ms, check](
                        const Measurement& m, double median_ms) {
    const DistributedSpec& d = *spec.distributed;
    std::vector<double> sorted = m.samples_ms;
    std::sort(sorted.begin(), sorted.end());
    // The shares over every step since timing began (warm-up included), applied to the
    // median step: mean and median steps differ, shares barely. Communication is the
    // gradient all-reduce's and the BatchNorm statistics'.
    const auto share_of = [&](double seconds) {
      return rank->step_s > 0 ? seconds / rank->step_s : 0;
    };
    const double gradient_ms = share_of(rank->comm_s) * median_ms;
    const double batchnorm_ms = share_of(rank->batchnorm_s) * median_ms;
    const double comm_share = share_of(rank->comm_s + rank->batchnorm_s);
    const double comm_ms = gradient_ms + batchnorm_ms;
    const double samples_per_s = static_cast<double>(spec.batch_size) * 1e3 / median_ms;
    const double baseline_samples_per_s =
        static_cast<double>(rank_batch) * 1e3 / baseline_median_ms;
    // The bus bandwidth of the all-reduce itself: without overlap its time is the step's
    // communication; with overlap that is only the exposed part, so the time measured
    // without overlap before timing is used.
    const double allreduce_ms = spec.parallel->overlap ? sequential_comm_ms : gradient_ms;
    const double busbw_gbps = allreduce_ms > 0 ? static_cast<double>(rank->bytes_per_step) /
                                                     (allreduce_ms * 1e-3) / 1e9 *
                                                     BusBandwidthFactor("allreduce", d.world_size)
                                               : 0;
    return json{
        {"parallel",
         {{"kind", "data"},
          {"global_batch", spec.batch_size},
          {"rank_batch", rank_batch},
          {"step_p50_ms", median_ms},
          {"step_p95_ms", sorted.empty() ? json(nullptr) : json(Quantile(sorted, 0.95))},
          {"samples_per_s", samples_per_s},
          {"rank_samples_per_s", samples_per_s / static_cast<double>(d.world_size)},
          {"baseline_step_ms", baseline_median_ms},
          {"baseline_samples_per_s", baseline_samples_per_s},
          {"scaling_efficiency",
           samples_per_s / (static_cast<double>(d.world_size) * baseline_samples_per_s)},
          {"comm_ms_per_step", comm_ms},
          {"comm_share", comm_share},
          {"batchnorm_layers_synced", rank->synced_norms},
          {"batchnorm_sync_ms_per_step",
           rank->synced_norms > 0 ? json(batchnorm_ms) : json(nullptr)},
          {"allreduce_bytes_per_step", rank->bytes_per_step},
          {"buckets", rank->buckets.size()},
          {"bucket_mb", spec.parallel->bucket_mb},
          {"busbw_gbps", busbw_gbps},
          {"overlap", spec.parallel->overlap},
          {"comm_ms_sequential", spec.parallel->overlap ? json(sequential_comm_ms) : json(nullptr)},
          // The share of the gradient all-reduce hidden behind backward.
          {"overlap_share", spec.parallel->overlap && sequential_comm_ms > 0
                                ? json(std::clamp(1 - gradient_ms / sequential_comm_ms, 0.0, 1.0))
                                : json(nullptr)},
          {"check", check}}}};
  };
  return workload;
}

}  // namespace benchfleet::worker
