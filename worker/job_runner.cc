#include "worker/job_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <vector>

#include "common/files.h"
#include "common/job_spec.h"
#include "worker/host/omp_wait_policy.h"
#include "worker/host/process_info.h"
#include "worker/host/torch_runtime.h"
#include "worker/max_batch.h"
#include "worker/measure/clock.h"
#include "worker/measure/device_memory.h"
#include "worker/measure/energy.h"
#include "worker/measure/extra_work.h"
#include "worker/measure/flops.h"
#include "worker/measure/gpu_telemetry.h"
#include "worker/measure/host_load.h"
#include "worker/measure/profile.h"
#include "worker/measure/sampler.h"
#include "worker/measure/stats.h"
#include "worker/measure/step_memory.h"
#include "worker/models/compiled_model.h"
#include "worker/models/workload.h"
#include "worker/parallel/collective.h"
#include "worker/parallel/data_parallel.h"
#include "worker/parallel/pipeline.h"
#include "worker/parallel/replicas.h"
#include "worker/serving_job.h"
#include "worker/timed_result.h"
#include "worker/versus_job.h"

namespace benchfleet::worker {
namespace {

using nlohmann::json;

// Seeds a result with the job's identity, echoed whenever it is readable so
// the agent can file even a rejection under the right job.
json ResultSkeleton(const json& job) {
  json result = {{"ok", false}};
  if (job.is_object()) {
    for (const char* key : {"job_id", "attempt"}) {
      if (job.contains(key) && job.at(key).is_number_integer()) result[key] = job.at(key);
    }
  }
  return result;
}

// The CUDA ordinal of "cuda" (0) or "cuda:N".
int CudaIndex(const std::string& device) {
  const std::size_t colon = device.find(':');
  return colon == std::string::npos ? 0 : std::stoi(device.substr(colon + 1));
}

JobOutcome Fail(json result, ExitCode code, const std::string& error) {
  result["ok"] = false;
  result["error"] = error;
  return {std::move(result), code};
}

JobOutcome RunValidJob(JobSpec spec, json result) {
  if (std::string error = CheckTorch(spec.torch); !error.empty()) {
    return Fail(std::move(result), kExitRejected, error);
  }
  if (std::string error = CheckDevice(spec.device); !error.empty()) {
    return Fail(std::move(result), kExitRejected, error);
  }
  // The OpenMP runtime read its wait policy before main: a job measured under another
  // one than it asks for would be filed as what it is not.
  if (!OmpWaitPolicyMatches(spec.omp_wait_policy)) {
    return Fail(
        std::move(result), kExitRejected,
        "omp_wait_policy \"" + spec.omp_wait_policy +
            "\": this process started under OMP_WAIT_POLICY " +
            (std::getenv("OMP_WAIT_POLICY") ? std::string("=") + std::getenv("OMP_WAIT_POLICY")
                                            : std::string("unset")) +
            ", and the OpenMP runtime reads it only at start-up; run the job through "
            "benchfleet-worker --job, which starts itself again under the job's policy");
  }
  if (std::string error = ApplyThreadSettings(spec.threads, spec.interop_threads); !error.empty()) {
    return Fail(std::move(result), kExitRejected, error);
  }
  const bool quantized = spec.dtype == "int8" || (spec.versus_b && spec.versus_b->dtype == "int8");
  if (std::string error = ApplyBackendSettings(spec.onednn, quantized); !error.empty()) {
    return Fail(std::move(result), kExitRejected, error);
  }
  ApplyCudaMath(/*allow_tf32=*/false);  // PrepareWorkload allows it for dtype "tf32"
  // Side A of an in-process pair (schemas/worker.md, Versus): both sides in this process.
  if (spec.versus_b) return RunInProcessPair(spec, std::move(result));
  // search.max_batch: find the largest batch that fits, then time it as any job; the
  // result still echoes the batch_size the job asked for (where the search started).
  const std::int64_t asked_batch = spec.batch_size;
  std::optional<MaxBatchResult> searched;
  if (spec.max_batch) {
    searched = SearchMaxBatch(spec);
    spec.batch_size = searched->max_batch;
  }
  const bool gpu = IsCudaDevice(spec.device);
  const bool collective = IsCollectiveModel(spec.model);

  const std::optional<double> rss_before = ResidentSetMiB();
  const auto build_start = std::chrono::steady_clock::now();
  const bool pipeline = spec.parallel && spec.parallel->kind == "pipeline";
  PreparedWorkload workload =
      collective ? PrepareCollective(spec)
      : pipeline
          ? (spec.parallel->in_process ? PrepareInProcessPipeline(spec) : PreparePipeline(spec))
      : spec.parallel ? PrepareDataParallel(spec)
                      : PrepareWorkload(spec);
  const double model_build_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
  // A dialled slowdown (schemas/worker.md, Slowdown): sized from the built model's own
  // iteration, then part of every iteration timed.
  json slowdown = nullptr;
  double slowdown_calibration_s = 0;
  if (spec.slowdown > 0) {
    const auto calibration_start = std::chrono::steady_clock::now();
    const ExtraWork extra =
        ExtraWork::Calibrate(workload.iteration, workload.block_end, spec.slowdown, SystemClock());
    workload.iteration = extra.Wrap(std::move(workload.iteration));
    slowdown = extra.Report();
    slowdown_calibration_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - calibration_start).count();
  }
  std::unique_ptr<GpuTelemetry> telemetry;
  std::string telemetry_note = "not a GPU job";
  if (gpu) {
    telemetry = GpuTelemetry::Open(CudaIndex(spec.device), &telemetry_note);
    if (telemetry) telemetry->Start();
  }
  // Copies of one job start timing together (schemas/worker.md, Replicas), and so do
  // the two sides of a duet (Duet).
  const std::optional<ReplicaSpec>& together = spec.replica ? spec.replica : spec.duet;
  if (together) {
    MarkReplica(*together, "ready");
    if (std::string why = WaitForReplicas(*together, "ready"); !why.empty()) {
      return Fail(std::move(result), kExitInternal, why);
    }
  }
  EnergyMeter energy(kPowercapRoot, telemetry.get(), gpu ? telemetry_note : "");
  // A GPU job's memory is the caching allocator's peak over the timed region: reset when
  // the warm-up is over, read when timing ends. An in-process pipeline spans several
  // GPUs, whose figures are not one job's peak.
  const bool device_memory = gpu && !spec.parallel;
  std::string device_memory_note = device_memory ? "" : "an in-process pipeline spans several GPUs";
  bool device_peaks_reset = false;
  const Measurement m = MeasureWorkload(
      workload.iteration, ToTimingOptions(spec.timing, gpu), SystemClock(), workload.block_end,
      workload.agree, [&](bool start) {
        start ? energy.RegionStart() : energy.RegionEnd();
        if (start && device_memory) {
          device_peaks_reset = ResetDeviceMemoryPeaks(CudaIndex(spec.device), &device_memory_note);
        }
      });
  const std::optional<DeviceMemory> device_peaks =
      device_peaks_reset ? ReadDeviceMemory(CudaIndex(spec.device), &device_memory_note)
                         : std::nullopt;
  // The sampling region ends at the last clock read of MeasureWorkload, so the
  // process's age now, less timed_s, is its age at the first timed iteration.
  const std::optional<double> age_at_end = ProcessAgeSeconds();
  const json telemetry_summary = telemetry ? telemetry->Stop() : json(nullptr);
  json replica = nullptr;
  if (spec.duet) {
    // The other side keeps its load on until this one is done, and this one until it is.
    MarkReplica(*spec.duet, "done");
    if (std::string why = WaitForReplicas(*spec.duet, "done", workload.iteration); !why.empty()) {
      return Fail(std::move(result), kExitInternal, why);
    }
  }
  if (spec.replica) {
    // steady_clock is CLOCK_MONOTONIC: one origin for every process of the host.
    const double timed_to_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    MarkReplica(*spec.replica, "done");
    // The load stays on until every copy has finished timing, so each one's figures
    // are measured with all of them running.
    if (std::string why = WaitForReplicas(*spec.replica, "done", workload.iteration);
        !why.empty()) {
      return Fail(std::move(result), kExitInternal, why);
    }
    const std::int64_t iterations = m.timed_iterations;
    replica = {{"index", spec.replica->index},
               {"count", spec.replica->count},
               {"timed_from_s", timed_to_s - m.timed_s},
               {"timed_to_s", timed_to_s},
               {"iterations", iterations},
               {"throughput_per_s", static_cast<double>(spec.batch_size * iterations) / m.timed_s}};
  }
  // After timing, so neither is part of a sample: the profiled block, and one iteration
  // whose allocations are counted (a job of several ranks runs neither: its collective
  // calls would not pair with the other ranks').
  const SampleStats stats = Summarize(m.samples_ms, spec.timing.target_ci);
  json op_profile = nullptr;
  int64_t profile_iterations = 0;
  if (spec.profile) {
    profile_iterations = ProfileIterations(m.iters_per_sample, stats.median_ms);
    // On a GPU an operator's host time is its launch: its kernels' device time is what it costs.
    op_profile = ProfileOperators(workload.iteration, workload.block_end, profile_iterations,
                                  gpu ? ProfileTime::kDevice : ProfileTime::kCpu);
  }
  const bool one_process = !collective && !spec.parallel;
  json step_peak_alloc_mb = nullptr;
  if (one_process && !gpu) {
    step_peak_alloc_mb = PeakAllocatedMiB(workload.iteration);
  } else if (one_process && device_peaks) {
    const std::optional<double> step = StepPeakDeviceMiB(CudaIndex(spec.device), workload.iteration,
                                                         workload.block_end, &device_memory_note);
    if (step) step_peak_alloc_mb = *step;
  }
  // single_stream and server: the offline figures above are one batch's service time;
  // the scenario's own run follows, and an invalid one is no result.
  json serving = nullptr;
  if (spec.scenario != "offline") {
    ScenarioOutcome scenario = RunScenario(spec);
    if (!scenario.error.empty()) {
      result["serving"] = std::move(scenario.serving);
      return Fail(std::move(result), kExitRejected, scenario.error);
    }
    serving = std::move(scenario.serving);
  }

  TimedWorkload timed;
  timed.spec = &spec;
  timed.workload = &workload;
  timed.measurement = &m;
  timed.stats = &stats;
  timed.asked_batch = asked_batch;
  timed.model_build_s = model_build_s;
  timed.rss_before_mb = rss_before;
  timed.age_at_end_s = age_at_end;
  timed.not_startup_s = slowdown_calibration_s;
  timed.step_peak_alloc_mb = step_peak_alloc_mb;
  timed.slowdown = slowdown;
  FillTimedResult(timed, &result);
  if (searched) result["search"] = searched->Json();
  if (!replica.is_null()) result["replica"] = std::move(replica);
  if (!serving.is_null()) {
    result["scenario"] = spec.scenario;
    result["serving"] = std::move(serving);
  }
  if (spec.profile) {
    result["profile_iterations"] = profile_iterations;
    result["profile_time"] = ProfileTimeName(gpu ? ProfileTime::kDevice : ProfileTime::kCpu);
    result["op_profile"] = op_profile;
  }
  if (gpu) {
    result["gpu_peak_mem_mb"] =
        device_peaks ? json(device_peaks->peak_allocated_mb) : json(nullptr);
    result["gpu_peak_reserved_mb"] =
        device_peaks ? json(device_peaks->peak_reserved_mb) : json(nullptr);
    if (!device_peaks) result["gpu_peak_mem_note"] = device_memory_note;
  }
  result["gpu_telemetry"] = telemetry_summary;
  result["energy"] =
      energy.Report(static_cast<double>(m.timed_iterations * spec.batch_size), m.timed_s);
  if (!telemetry) result["gpu_telemetry_note"] = telemetry_note;
  if (spec.distributed) {
    const DistributedSpec& d = *spec.distributed;
    result["distributed"] = {{"rank", d.rank},
                             {"world_size", d.world_size},
                             {"store", d.store_host + ":" + std::to_string(d.store_port)},
                             {"address", d.address}};
  }
  if (workload.report) {
    const json added = workload.report(m, stats.median_ms);  // outlives the loop over it
    for (const auto& [key, value] : added.items()) result[key] = value;
  }
  return {std::move(result), kExitOk};
}

// The job file: its JSON, or why it cannot be had ("cannot read job file ...").
StatusOr<json> ReadJobFile(const std::string& job_path) {
  auto text = ReadWholeFile(job_path);
  if (!text.ok()) return InvalidArgument("cannot read job file: " + text.status().message());
  return ParseJson(*text, "job file " + job_path);
}

JobOutcome RunJobFromPath(const std::string& job_path) {
  auto job = ReadJobFile(job_path);
  if (!job.ok()) return Fail(json::object(), kExitRejected, job.status().message());
  return RunJob(*job);
}

}  // namespace

JobOutcome RunJob(const json& job) {
  json result = ResultSkeleton(job);
  try {
    JobSpecError error;
    const std::optional<JobSpec> spec = ParseJobSpec(job, &error);
    if (!spec) return Fail(std::move(result), kExitRejected, error.message);
    return RunValidJob(*spec, result);
  } catch (const WorkloadError& e) {
    return Fail(std::move(result), kExitRejected, e.what());
  } catch (const std::bad_alloc&) {
    return Fail(std::move(result), kExitRejected,
                "out of memory; reduce batch_size or the model's size (model_args)");
  } catch (const std::exception& e) {
    return Fail(std::move(result), kExitInternal, std::string("internal error: ") + e.what());
  }
}

ExitCode RunJobFile(const std::string& job_path, const std::string& result_path) {
  JobOutcome outcome;
  try {
    outcome = RunJobFromPath(job_path);
  } catch (const std::exception& e) {
    outcome = Fail(json::object(), kExitInternal, std::string("internal error: ") + e.what());
  }
  // Whole or not at all, and durable before the worker exits: the agent reads it then.
  const Status written = WriteFileAtomically(
      result_path, outcome.result.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
  if (!written.ok()) {
    std::cerr << "benchfleet-worker: " << written.message() << "\n";
    return kExitInternal;
  }
  return outcome.exit_code;
}

std::optional<std::string> JobFileWaitPolicy(const std::string& job_path) {
  auto job = ReadJobFile(job_path);
  if (!job.ok() || !job->is_object()) return "default";
  const std::string policy = JobOmpWaitPolicy(*job);
  const std::vector<std::string>& known = KnownOmpWaitPolicies();
  if (std::find(known.begin(), known.end(), policy) == known.end()) return std::nullopt;
  return policy;
}

ExitCode PrintProbe() {
  try {
    json probe = ProbeInfo();
    probe["techniques"] = SupportedTechniques();
    std::cout << probe.dump() << std::endl;
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "benchfleet-worker: probe failed: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace benchfleet::worker
