#include "worker/parallel/pipeline.h"

#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "worker/measure/clock.h"
#include "worker/measure/stats.h"
#include "worker/models/model.h"
#include "worker/parallel/ranks.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// The pipelined pass and the unsplit model differ by float rounding alone (micro-
// batches change how products are blocked): at most this much, relative to the largest
// magnitude of what is compared.
constexpr double kUnsplitTolerance = 1e-4;

// Wall time, as the sampler reads it.
double Now() { return SystemClock().WallSeconds(); }

// Units [begin, end) as one Sequential of their layers (shared, not copied: a stage
// trains the very weights the unsplit model was built with).
torch::nn::Sequential Join(const std::vector<torch::nn::Sequential>& units, std::int64_t begin,
                           std::int64_t end) {
  torch::nn::Sequential joined;
  for (std::int64_t u = begin; u < end; ++u) {
    for (const torch::nn::AnyModule& layer : *units[static_cast<std::size_t>(u)]) {
      joined->push_back(layer);
    }
  }
  return joined;
}

// max |got - want| / max |want|, over every pair.
double RelativeDiff(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
  double diff = 0, scale = 1e-30;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, (got[i] - want[i]).abs().max().item<double>());
    scale = std::max(scale, want[i].abs().max().item<double>());
  }
  return diff / scale;
}

// One rank's stage: its consecutive units of the model, and what its passes cost.
struct Stage {
  RankGroup ranks;
  Agree agree;  // rank 0 decides
  std::int64_t index = 0, stages = 1, micro_batches = 1;
  bool train = false;
  torch::nn::Sequential net;
  std::vector<torch::Tensor> params;
  std::shared_ptr<torch::optim::SGD> optimizer;
  std::vector<torch::Tensor> inputs;   // stage 0: the micro-batches of the input
  std::vector<torch::Tensor> targets;  // last stage, train: the micro-batches of the target
  std::vector<std::int64_t> in_shape, out_shape;  // one micro-batch's activations
  std::vector<torch::Tensor> outputs;             // last stage: the last pass's outputs
  std::int64_t bytes_sent = 0;                    // per pass, to the neighbouring stages
  bool one_f_one_b = false;                       // the schedule: 1F1B, else GPipe
  std::int64_t max_held = 0;                      // most micro-batches' activations held at once
  // Accumulated since the last Reset(): for the bubble.
  double busy_s = 0, wall_s = 0;
  std::int64_t passes = 0;

  void Reset() { busy_s = wall_s = 0, passes = 0; }
  bool last() const { return index == stages - 1; }

  // The batch through this stage. GPipe: every micro-batch forward, then (train) every
  // one backward in reverse. 1F1B (train): S - 1 - index forwards to fill the pipeline,
  // then one forward and one backward in turn, then the backwards left, so that a
  // stage holds at most S - index micro-batches' activations instead of all M. Then,
  // when `step`, the optimizer's step.
  void Pass(bool step) {
    const double start = Now();
    const std::int64_t m_count = micro_batches;
    std::vector<torch::Tensor> xs(static_cast<std::size_t>(m_count)), ys(xs.size());
    std::vector<c10d_compat::PendingSend> sends;
    std::vector<torch::Tensor> in_flight;  // untouched until their sends complete
    std::int64_t sent = 0;
    std::int64_t held = 0;  // micro-batches whose activations this stage holds
    auto send = [&](const torch::Tensor& t, std::int64_t to, std::int64_t tag) {
      in_flight.push_back(t.detach().contiguous());
      sends.push_back(c10d_compat::Send(ranks.group, in_flight.back(), to, static_cast<int>(tag)));
      sent += TensorBytes(in_flight.back());
    };
    auto forward = [&](std::int64_t m) {
      torch::Tensor x;
      if (index == 0) {
        x = inputs[static_cast<std::size_t>(m)];
      } else {
        x = torch::empty(in_shape);
        c10d_compat::Receive(ranks.group, x, index - 1, static_cast<int>(m));
      }
      const double t0 = Now();
      torch::Tensor y;
      if (train) {
        if (index > 0) x.requires_grad_(true);
        y = net->forward(x);
      } else {
        c10::InferenceMode guard;
        y = net->forward(x);
      }
      busy_s += Now() - t0;
      if (!last()) send(y, index + 1, m);
      xs[static_cast<std::size_t>(m)] = x;
      ys[static_cast<std::size_t>(m)] = y;
      max_held = std::max(max_held, ++held);
    };
    auto backward = [&](std::int64_t m) {
      const auto i = static_cast<std::size_t>(m);
      if (last()) {
        const double t0 = Now();
        // The whole batch's mean squared error, a micro-batch's share of it.
        ((ys[i] - targets[i]).pow(2).mean() / static_cast<double>(m_count)).backward();
        busy_s += Now() - t0;
      } else {
        torch::Tensor grad = torch::empty(out_shape);
        c10d_compat::Receive(ranks.group, grad, index + 1, static_cast<int>(m_count + m));
        const double t0 = Now();
        ys[i].backward(grad);
        busy_s += Now() - t0;
      }
      if (index > 0) send(xs[i].grad(), index - 1, m_count + m);
      // Its activations are no longer needed (the last stage keeps its outputs).
      if (!last()) ys[i] = torch::Tensor();
      xs[i] = torch::Tensor();
      --held;
    };
    if (train) optimizer->zero_grad();
    if (train && one_f_one_b) {
      const std::int64_t warmup = std::min(stages - 1 - index, m_count);
      std::int64_t next_forward = 0, next_backward = 0;
      for (; next_forward < warmup; ++next_forward) forward(next_forward);
      for (; next_forward < m_count; ++next_forward) {
        forward(next_forward);
        backward(next_backward++);
      }
      for (; next_backward < m_count; ++next_backward) backward(next_backward);
    } else {
      for (std::int64_t m = 0; m < m_count; ++m) forward(m);
      if (train) {
        for (std::int64_t m = m_count - 1; m >= 0; --m) backward(m);
      }
    }
    if (train && step) {
      const double t0 = Now();
      optimizer->step();
      busy_s += Now() - t0;
    }
    for (const c10d_compat::PendingSend& s : sends) c10d_compat::Wait(s);
    if (last()) {
      outputs.clear();
      for (const torch::Tensor& y : ys) outputs.push_back(y.detach());
    }
    bytes_sent = sent;
    wall_s += Now() - start;
    ++passes;
  }

  // Every rank's `value`, in rank order.
  std::vector<double> GatherAll(double value) {
    torch::Tensor mine = torch::full({1}, value, torch::kDouble);
    std::vector<torch::Tensor> all;
    for (std::int64_t r = 0; r < stages; ++r) all.push_back(torch::zeros_like(mine));
    c10d_compat::AllGather(ranks.group, all, mine);
    std::vector<double> out;
    for (const torch::Tensor& t : all) out.push_back(t.item<double>());
    return out;
  }
};

// The model and input of `spec` from its seed, and the fixed random target of train
// mode from seed + 1: the same on every rank.
struct Whole {
  LayerStack stack;
  torch::nn::Sequential net;
  torch::Tensor target;
};

Whole BuildWhole(const JobSpec& spec) {
  torch::manual_seed(spec.seed);
  Whole whole;
  whole.stack = BuildZooLayerStack(spec);
  whole.net = Join(whole.stack.units, 0, static_cast<std::int64_t>(whole.stack.units.size()));
  torch::NoGradGuard no_grad;
  torch::manual_seed(spec.seed + 1);
  whole.target = torch::randn_like(whole.net->forward(whole.stack.input));
  return whole;
}

}  // namespace

std::vector<std::int64_t> StageBoundaries(std::int64_t units, std::int64_t stages) {
  std::vector<std::int64_t> bounds = {0};
  for (std::int64_t s = 0; s < stages; ++s) {
    bounds.push_back(bounds.back() + units / stages + (s < units % stages ? 1 : 0));
  }
  return bounds;
}

double GpipeBubble(std::int64_t stages, std::int64_t micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

PreparedWorkload PreparePipeline(const JobSpec& spec) {
  const DistributedSpec& d = *spec.distributed;
  const ParallelSpec& p = *spec.parallel;
  auto stage = std::make_shared<Stage>();
  stage->ranks = JoinRanks(d);
  stage->agree = RankZeroDecides(stage->ranks.group);
  stage->index = d.rank;
  stage->stages = p.stages;
  stage->micro_batches = p.micro_batches;
  stage->one_f_one_b = p.schedule == "1f1b";
  stage->train = spec.mode == "train";
  const std::int64_t micro = spec.batch_size / p.micro_batches;
  json check;
  double baseline_median_ms = 0;
  try {
    Whole whole = BuildWhole(spec);
    const auto units = static_cast<std::int64_t>(whole.stack.units.size());
    const std::vector<std::int64_t> bounds = StageBoundaries(units, p.stages);
    const std::int64_t first = bounds[static_cast<std::size_t>(d.rank)];
    const std::int64_t end = bounds[static_cast<std::size_t>(d.rank) + 1];
    stage->net = Join(whole.stack.units, first, end);
    stage->params = stage->net->parameters();
    for (torch::Tensor& param : stage->params) param.requires_grad_(stage->train);
    whole.net->train(stage->train);
    stage->optimizer = std::make_shared<torch::optim::SGD>(
        stage->params, torch::optim::SGDOptions(kTrainLearningRate));
    {
      // The shapes at this stage's two ends, from one micro-batch through the units
      // before it and its own.
      torch::NoGradGuard no_grad;
      torch::Tensor x = whole.stack.input.narrow(0, 0, micro);
      if (first > 0) x = Join(whole.stack.units, 0, first)->forward(x);
      stage->in_shape = x.sizes().vec();
      stage->out_shape = stage->net->forward(x).sizes().vec();
    }
    for (std::int64_t m = 0; m < p.micro_batches; ++m) {
      if (d.rank == 0)
        stage->inputs.push_back(whole.stack.input.narrow(0, m * micro, micro).contiguous());
      if (stage->last())
        stage->targets.push_back(whole.target.narrow(0, m * micro, micro).contiguous());
    }

    // Shown, not assumed: the unsplit model on the whole batch, against one pipelined
    // pass: its outputs on the last stage, and in train mode every stage's gradients.
    std::vector<torch::Tensor> want_grads;
    torch::Tensor want_output;
    if (stage->train) {
      for (torch::Tensor& param : whole.net->parameters()) param.requires_grad_(true);
      whole.net->zero_grad();
      want_output = whole.net->forward(whole.stack.input);
      (want_output - whole.target).pow(2).mean().backward();
      for (const torch::Tensor& param : stage->params) want_grads.push_back(param.grad().clone());
      whole.net->zero_grad();
      want_output = want_output.detach();
    } else {
      torch::NoGradGuard no_grad;
      want_output = whole.net->forward(whole.stack.input);
    }
    stage->Pass(/*step=*/false);
    double diff = 0;
    if (stage->last()) diff = RelativeDiff({torch::cat(stage->outputs)}, {want_output});
    if (stage->train) {
      std::vector<torch::Tensor> got;
      for (const torch::Tensor& param : stage->params) got.push_back(param.grad());
      diff = std::max(diff, RelativeDiff(got, want_grads));
      stage->optimizer->zero_grad();
    }
    const std::vector<double> diffs = stage->GatherAll(diff);
    const double worst = *std::max_element(diffs.begin(), diffs.end());
    if (!(worst <= kUnsplitTolerance)) {
      const auto at = std::max_element(diffs.begin(), diffs.end()) - diffs.begin();
      throw WorkloadError("the pipelined pass differs from the unsplit model on stage " +
                          std::to_string(at) + " by " + json(worst).dump() +
                          " (relative; tolerance " + json(kUnsplitTolerance).dump() + ")");
    }
    check = {{"max_rel_diff_vs_unsplit", worst},
             {"tolerance", kUnsplitTolerance},
             {"compared", stage->train ? "outputs and gradients" : "outputs"}};

    // The baseline: the unsplit model on rank 0 alone, the whole batch, its own copy.
    if (d.rank == 0) {
      Whole alone = BuildWhole(spec);
      std::function<void()> iteration;
      std::shared_ptr<torch::optim::SGD> optimizer;
      if (stage->train) {
        alone.net->train(true);
        optimizer = std::make_shared<torch::optim::SGD>(
            alone.net->parameters(), torch::optim::SGDOptions(kTrainLearningRate));
        iteration = [&alone, optimizer] {
          optimizer->zero_grad();
          (alone.net->forward(alone.stack.input) - alone.target).pow(2).mean().backward();
          optimizer->step();
        };
      } else {
        iteration = [&alone] {
          c10::InferenceMode guard;
          alone.net->forward(alone.stack.input);
        };
      }
      baseline_median_ms = MedianMsAlone(iteration, spec.timing);
    }
    baseline_median_ms = stage->agree(baseline_median_ms);
    stage->Reset();
  } catch (const WorkloadError&) {
    throw;
  } catch (const std::exception& e) {
    // A LibTorch error, or Gloo's when another stage went away mid-call.
    throw WorkloadError("the pipeline failed on stage " + std::to_string(d.rank) + ": " +
                        ErrorMessage(e));
  }

  PreparedWorkload workload;
  workload.iteration = [stage]() {
    try {
      stage->Pass(/*step=*/true);
    } catch (const std::exception& e) {
      throw WorkloadError("a pipelined pass failed on stage " + std::to_string(stage->index) +
                          ": " + ErrorMessage(e));
    }
  };
  workload.agree = stage->agree;
  workload.report = [stage, spec, baseline_median_ms, check](const Measurement& m,
                                                             double median_ms) {
    // Every rank reports at the same point, so the figures of all stages can be gathered.
    const std::vector<double> busy = stage->GatherAll(stage->busy_s);
    const std::vector<double> wall = stage->GatherAll(stage->wall_s);
    const std::vector<double> bytes = stage->GatherAll(static_cast<double>(stage->bytes_sent));
    double busy_sum = 0, bytes_sum = 0;
    json busy_share = json::array();
    for (std::size_t s = 0; s < busy.size(); ++s) {
      busy_sum += busy[s];
      bytes_sum += bytes[s];
      busy_share.push_back(wall[s] > 0 ? busy[s] / wall[s] : 0);
    }
    const double longest = *std::max_element(wall.begin(), wall.end());
    std::vector<double> sorted = m.samples_ms;
    std::sort(sorted.begin(), sorted.end());
    const double samples_per_s = static_cast<double>(spec.batch_size) * 1e3 / median_ms;
    const double passes = static_cast<double>(std::max<std::int64_t>(1, stage->passes));
    return json{
        {"parallel",
         {{"kind", "pipeline"},
          {"stages", spec.parallel->stages},
          {"micro_batches", spec.parallel->micro_batches},
          {"schedule", spec.parallel->schedule},
          {"max_micro_batches_held", stage->max_held},
          {"step_p50_ms", median_ms},
          {"step_p95_ms", sorted.empty() ? json(nullptr) : json(Quantile(sorted, 0.95))},
          {"samples_per_s", samples_per_s},
          {"baseline_step_ms", baseline_median_ms},
          {"baseline_samples_per_s",
           static_cast<double>(spec.batch_size) * 1e3 / baseline_median_ms},
          {"speedup_vs_unsplit", baseline_median_ms / median_ms},
          {"stage_busy_ms_per_step", stage->busy_s * 1e3 / passes},
          {"stages_busy_share", busy_share},
          {"bubble", longest > 0 ? 1 - busy_sum / (static_cast<double>(busy.size()) * longest) : 0},
          {"bubble_gpipe_theory", GpipeBubble(spec.parallel->stages, spec.parallel->micro_batches)},
          {"bytes_sent_per_step", stage->bytes_sent},
          {"bytes_between_stages_per_step", bytes_sum},
          {"check", check}}}};
  };
  return workload;
}

PreparedWorkload PrepareInProcessPipeline(const JobSpec& spec) {
  const ParallelSpec& p = *spec.parallel;
  const auto gpus = static_cast<std::int64_t>(torch::cuda::device_count());
  if (gpus < p.stages) {
    throw WorkloadError("an in-process pipeline of " + std::to_string(p.stages) +
                        " stages needs that many GPUs in this worker (cuda:0..cuda:" +
                        std::to_string(p.stages - 1) + "); it sees " + std::to_string(gpus));
  }
  const bool train = spec.mode == "train";
  const std::int64_t micro = spec.batch_size / p.micro_batches;
  struct Split {
    Whole whole;  // its units moved to their stages' devices
    std::vector<torch::nn::Sequential> stages;
    std::vector<torch::Device> devices;
    std::vector<torch::Tensor> inputs, targets;  // per micro-batch, on the first / last device
    std::shared_ptr<torch::optim::SGD> optimizer;
    std::vector<torch::Tensor> Pass(bool train_pass, bool step, std::int64_t micro_batches) {
      if (train_pass) optimizer->zero_grad();
      std::vector<torch::Tensor> outputs;
      torch::Tensor loss;
      for (std::int64_t m = 0; m < micro_batches; ++m) {
        c10::optional<c10::InferenceMode> guard;
        if (!train_pass) guard.emplace();
        torch::Tensor x = inputs[static_cast<std::size_t>(m)];
        for (std::size_t s = 0; s < stages.size(); ++s) {
          x = stages[s]->forward(x.to(devices[s], /*non_blocking=*/true));
        }
        if (train_pass) {
          const torch::Tensor part = (x - targets[static_cast<std::size_t>(m)]).pow(2).mean() /
                                     static_cast<double>(micro_batches);
          loss = loss.defined() ? loss + part : part;
        }
        outputs.push_back(x);
      }
      if (train_pass) {
        loss.backward();
        if (step) optimizer->step();
      }
      return outputs;
    }
  };
  auto split = std::make_shared<Split>();
  // A timed block, the pipeline's or the baseline's, ends when every stage's GPU is done
  // with it (kernels run asynchronously): one device-wide synchronise per GPU per block.
  const std::function<void()> block_end = [stages = p.stages]() {
    for (std::int64_t s = 0; s < stages; ++s) torch::cuda::synchronize(s);
  };
  json check;
  double baseline_median_ms = 0;
  try {
    split->whole = BuildWhole(spec);
    const auto units = static_cast<std::int64_t>(split->whole.stack.units.size());
    const std::vector<std::int64_t> bounds = StageBoundaries(units, p.stages);
    std::vector<torch::Tensor> params;
    for (std::int64_t s = 0; s < p.stages; ++s) {
      split->devices.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(s));
      split->stages.push_back(Join(split->whole.stack.units, bounds[static_cast<std::size_t>(s)],
                                   bounds[static_cast<std::size_t>(s) + 1]));
      split->stages.back()->to(split->devices.back());
      split->stages.back()->train(train);
      for (torch::Tensor& param : split->stages.back()->parameters()) {
        param.requires_grad_(train);
        params.push_back(param);
      }
    }
    split->optimizer =
        std::make_shared<torch::optim::SGD>(params, torch::optim::SGDOptions(kTrainLearningRate));
    for (std::int64_t m = 0; m < p.micro_batches; ++m) {
      split->inputs.push_back(
          split->whole.stack.input.narrow(0, m * micro, micro).to(split->devices.front()));
      split->targets.push_back(
          split->whole.target.narrow(0, m * micro, micro).to(split->devices.back()));
    }

    // The unsplit model on cuda:0, the same seed: the reference and the baseline.
    auto alone = std::make_shared<Whole>(BuildWhole(spec));
    const torch::Device first = split->devices.front();
    alone->net->to(first);
    alone->net->train(train);
    const torch::Tensor input = alone->stack.input.to(first);
    const torch::Tensor target = alone->target.to(first);
    std::vector<torch::Tensor> want_grads;
    torch::Tensor want_output;
    if (train) {
      for (torch::Tensor& param : alone->net->parameters()) param.requires_grad_(true);
      want_output = alone->net->forward(input);
      (want_output - target).pow(2).mean().backward();
      for (const torch::Tensor& param : alone->net->parameters())
        want_grads.push_back(param.grad().cpu());
      alone->net->zero_grad();
    } else {
      c10::InferenceMode guard;
      want_output = alone->net->forward(input);
    }
    const std::vector<torch::Tensor> outputs = split->Pass(train, /*step=*/false, p.micro_batches);
    std::vector<torch::Tensor> got_outputs;
    for (const torch::Tensor& y : outputs) got_outputs.push_back(y.detach().cpu());
    double worst = RelativeDiff({torch::cat(got_outputs)}, {want_output.detach().cpu()});
    if (train) {
      std::vector<torch::Tensor> got;
      for (const torch::Tensor& param : params) got.push_back(param.grad().cpu());
      worst = std::max(worst, RelativeDiff(got, want_grads));
      split->optimizer->zero_grad();
    }
    if (!(worst <= kUnsplitTolerance)) {
      throw WorkloadError("the in-process pipeline differs from the unsplit model by " +
                          json(worst).dump() + " (relative; tolerance " +
                          json(kUnsplitTolerance).dump() + ")");
    }
    check = {{"max_rel_diff_vs_unsplit", worst},
             {"tolerance", kUnsplitTolerance},
             {"compared", train ? "outputs and gradients" : "outputs"}};
    std::shared_ptr<torch::optim::SGD> optimizer;
    if (train) {
      optimizer = std::make_shared<torch::optim::SGD>(alone->net->parameters(),
                                                      torch::optim::SGDOptions(kTrainLearningRate));
    }
    // Timed as the pipeline is: blocks of iterations of the same minimum length (a GPU
    // job's, as the job runner times the pipelined run), each ended by the same wait for
    // every stage's GPU. A wait after every iteration would charge the baseline a
    // launch-queue drain per step that the pipeline pays once per block.
    baseline_median_ms = MedianMsAlone(
        [alone, input, target, optimizer, train] {
          if (train) {
            optimizer->zero_grad();
            (alone->net->forward(input) - target).pow(2).mean().backward();
            optimizer->step();
          } else {
            c10::InferenceMode guard;
            alone->net->forward(input);
          }
        },
        spec.timing, block_end, kMinGpuBlockSeconds);
  } catch (const WorkloadError&) {
    throw;
  } catch (const std::exception& e) {
    throw WorkloadError("the in-process pipeline failed: " + ErrorMessage(e));
  }

  PreparedWorkload workload;
  workload.iteration = [split, train, p]() {
    try {
      split->Pass(train, /*step=*/true, p.micro_batches);
    } catch (const std::exception& e) {
      throw WorkloadError("the in-process pipeline failed: " + ErrorMessage(e));
    }
  };
  workload.block_end = block_end;
  workload.report = [spec, baseline_median_ms, check](const Measurement&, double median_ms) {
    const ParallelSpec& pp = *spec.parallel;
    json devices = json::array();
    for (std::int64_t s = 0; s < pp.stages; ++s) devices.push_back("cuda:" + std::to_string(s));
    return json{{"parallel",
                 {{"kind", "pipeline"},
                  {"in_process", true},
                  {"devices", devices},
                  {"stages", pp.stages},
                  {"micro_batches", pp.micro_batches},
                  {"schedule", "gpipe"},
                  {"step_p50_ms", median_ms},
                  {"samples_per_s", static_cast<double>(spec.batch_size) * 1e3 / median_ms},
                  {"baseline_step_ms", baseline_median_ms},
                  {"baseline_samples_per_s",
                   static_cast<double>(spec.batch_size) * 1e3 / baseline_median_ms},
                  {"speedup_vs_unsplit", baseline_median_ms / median_ms},
                  // Per-stage busy time on a GPU needs CUDA events (libc10_cuda), which
                  // the worker does not link.
                  {"bubble", nullptr},
                  {"bubble_gpipe_theory", GpipeBubble(pp.stages, pp.micro_batches)},
                  {"check", check}}}};
  };
  return workload;
}

}  // namespace benchfleet::worker
