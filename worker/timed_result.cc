#include "worker/timed_result.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "worker/host/process_info.h"
#include "worker/host/torch_runtime.h"
#include "worker/measure/flops.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

json OptionalNumber(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

json StatsJson(const SampleStats& s, const Measurement& m) {
  json discarded_median = nullptr;
  if (!m.discarded_samples_ms.empty()) {
    std::vector<double> sorted = m.discarded_samples_ms;
    std::sort(sorted.begin(), sorted.end());
    discarded_median = Quantile(sorted, 0.5);
  }
  return {{"n", s.n},
          {"median_ms", s.median_ms},
          {"mean_ms", s.mean_ms},
          {"stdev_ms", s.stdev_ms},
          {"min_ms", s.min_ms},
          {"max_ms", s.max_ms},
          {"p90_ms", s.p90_ms},
          {"p99_ms", s.p99_ms},
          {"q1_ms", s.q1_ms},
          {"q3_ms", s.q3_ms},
          {"iqr_ms", s.iqr_ms},
          {"median_ci_low_ms", OptionalNumber(s.median_ci_low_ms)},
          {"median_ci_high_ms", OptionalNumber(s.median_ci_high_ms)},
          {"p99_ci_low_ms", OptionalNumber(s.p99_ci_low_ms)},
          {"p99_ci_high_ms", OptionalNumber(s.p99_ci_high_ms)},
          {"median_ci_relative", OptionalNumber(s.median_ci_relative)},
          {"effective_n", s.effective_n},
          // Imprecise (the interval still wider than target_ci), or never settled: not a
          // result to compare against.
          {"noisy", s.noisy || m.unsteady},
          {"unsteady", m.unsteady},
          {"discarded_samples", m.discarded_samples_ms.size()},
          {"discarded_median_ms", discarded_median},
          {"iters_per_sample", m.iters_per_sample},
          {"timed_s", m.timed_s},
          {"warmup_s", m.warmup_s}};
}

// A job whose effective parallelism is further than this (relative) from the
// threads it asked for did not get the CPUs it asked for, or could not use them.
constexpr double kThreadsMismatchTolerance = 0.25;

// Why effective_threads is off `spec.threads` (beyond kThreadsMismatchTolerance), as far
// as the process can tell, most specific cause first.
std::string ThreadsMismatchReason(const Measurement& m, const JobSpec& spec, std::size_t cpus) {
  const auto threads = static_cast<double>(spec.threads);
  const std::string effective = json(std::round(m.effective_threads * 100) / 100).dump();
  const std::string asked =
      std::to_string(spec.threads) + " thread" + (spec.threads == 1 ? "" : "s");
  if (cpus > 0 && cpus < static_cast<std::size_t>(spec.threads)) {
    return "effective " + effective + " of " + asked + ": the process may run on " +
           std::to_string(cpus) + " CPUs only (its affinity)";
  }
  if (m.effective_threads > threads) {
    return "effective " + effective + " of " + asked +
           ": threads beyond the intra-op pool used CPU time too (a BLAS pool of its own "
           "beside OpenMP's, inter-op threads)";
  }
  if (m.host_load && m.host_load->disturbed) {
    return "effective " + effective + " of " + asked + ": the rest of the host kept " +
           json(std::round(m.host_load->busy_cpus * 100) / 100).dump() +
           " CPUs busy meanwhile, or the hypervisor took " +
           json(std::round(m.host_load->steal_fraction * 1000) / 10).dump() + "% of the time";
  }
  if (spec.omp_wait_policy == "passive") {
    return "effective " + effective + " of " + asked +
           ": under omp_wait_policy passive idle OpenMP threads sleep as soon as a parallel "
           "region ends, so the serial parts between regions and each wake-up run on one "
           "thread";
  }
  return "effective " + effective + " of " + asked +
         ": the workload keeps fewer threads busy than it has (serial parts between its "
         "parallel regions)";
}

}  // namespace

// The measurement budget in the sampler's terms.
TimingOptions ToTimingOptions(const TimingSpec& t, bool gpu) {
  return {t.warmup_s, t.min_time_s, t.max_time_s, t.target_ci,
          gpu ? kMinGpuBlockSeconds : kMinBlockSeconds};
}

void FillTimedResult(const TimedWorkload& t, json* out) {
  const JobSpec& spec = *t.spec;
  const Measurement& m = *t.measurement;
  const SampleStats& stats = *t.stats;
  const bool gpu = IsCudaDevice(spec.device);
  const bool collective = IsCollectiveModel(spec.model);
  json& result = *out;
  result["ok"] = true;
  result["job_id"] = spec.job_id;
  result["attempt"] = spec.attempt;
  result["device"] = spec.device;
  result["model"] = spec.model;
  result["mode"] = spec.mode;
  result["dtype"] = spec.dtype;
  result["batch_size"] = t.asked_batch;
  result["threads"] = spec.threads;
  result["interop_threads"] = spec.interop_threads;
  result["stats"] = StatsJson(stats, m);
  result["samples_ms"] = m.samples_ms;
  result["throughput_per_s"] = static_cast<double>(spec.batch_size) * 1e3 / stats.median_ms;
  const std::optional<double> flops = FlopsPerSample(spec);
  result["flops_per_sample"] = flops ? json(*flops) : json(nullptr);
  result["gflops"] =
      flops ? json(*flops * static_cast<double>(spec.batch_size) / (stats.median_ms * 1e6))
            : json(nullptr);
  result["effective_threads"] = m.effective_threads;
  // Who else used the host while this was timed: the usual reason for noise.
  result["host_busy_cpus"] = m.host_load ? json(m.host_load->busy_cpus) : json(nullptr);
  result["steal_fraction"] = m.host_load ? json(m.host_load->steal_fraction) : json(nullptr);
  result["disturbed"] = m.host_load ? json(m.host_load->disturbed) : json(nullptr);
  // On a GPU the CPU threads mostly wait for kernels, and a collective's work is done
  // by Gloo's threads: their count says nothing.
  const bool threads_say_nothing = gpu || collective || spec.parallel;
  const bool mismatch = std::abs(m.effective_threads / static_cast<double>(spec.threads) - 1) >
                        kThreadsMismatchTolerance;
  result["threads_mismatch"] = threads_say_nothing ? json(nullptr) : json(mismatch);
  // Idle OpenMP threads that spin burn CPU time without working, so a job whose
  // parallel regions leave gaps still shows about `threads` effective threads.
  const bool spin = spec.threads > 1 && spec.omp_wait_policy != "passive";
  result["effective_threads_includes_spin"] = threads_say_nothing ? json(nullptr) : json(spin);
  result["threads_mismatch_reason"] =
      threads_say_nothing || !mismatch ? json(nullptr)
                                       : json(ThreadsMismatchReason(m, spec, AllowedCpus().size()));
  result["rss_before_model_mb"] = t.rss_before_mb ? json(*t.rss_before_mb) : json(nullptr);
  result["param_bytes"] = t.workload->param_bytes;
  result["model_build_s"] = t.model_build_s;
  result["startup_s"] =
      t.age_at_end_s
          ? json(std::max(0.0, *t.age_at_end_s - m.timed_s - t.model_build_s - t.not_startup_s))
          : json(nullptr);
  result["accuracy"] = t.workload->accuracy;
  result["step_peak_alloc_mb"] = t.step_peak_alloc_mb;
  result["runtime"] = RuntimeInfo(spec.dtype == "int8", gpu);
  if (!t.slowdown.is_null()) result["slowdown"] = t.slowdown;
}

}  // namespace benchfleet::worker
