#include "agent/pair_runner.h"

#include <algorithm>
#include <filesystem>

#include "common/cpu_list.h"
#include "common/log.h"

namespace fs = std::filesystem;

namespace benchfleet {
namespace {

// The CPU slice `index` (0 or 1) of `threads` CPUs among `cpus`; empty when it does not fit.
std::vector<int> Slice(const std::vector<int>& cpus, int threads, int index) {
  const size_t first = static_cast<size_t>(index) * static_cast<size_t>(threads);
  if (threads <= 0 || first + static_cast<size_t>(threads) > cpus.size()) return {};
  return std::vector<int>(cpus.begin() + static_cast<std::ptrdiff_t>(first),
                          cpus.begin() + static_cast<std::ptrdiff_t>(first + threads));
}

}  // namespace

std::vector<pid_t> PairRunner::pids() const {
  std::vector<pid_t> out = first_.pids();
  for (pid_t pid : second_.pids()) out.push_back(pid);
  return out;
}

Status PairRunner::StartSide(WorkerRunner& runner, WorkerJob job, const std::vector<int>& cpus,
                             std::optional<HostPace>* pace) {
  *pace = MeasureHostPace(cpus);
  job.cpus = cpus;
  return runner.Start(job);
}

nlohmann::json PairRunner::Paced(nlohmann::json result, std::optional<HostPace>* pace) {
  if (*pace && result.is_object()) {
    MeasureHostPaceAfter(&**pace);
    result["host_pace"] = (*pace)->ToJson();
  }
  pace->reset();
  return result;
}

Status PairRunner::Start(const WorkerJob& a, const WorkerJob& b, const PairOffer& pair,
                         const std::vector<int>& cpus) {
  if (busy()) return FailedPrecondition("a pair is already running");
  a_ = a;
  b_ = b;
  pair_ = pair;
  cpus_ = cpus;
  a_first_ = pair.first == "a";
  first_result_.reset();
  const int threads = a.spec.value("threads", 1);
  if (pair.pairing == "in_process") {
    // One worker: side A's job with side B's inside (schemas/worker.md, Versus).
    WorkerJob both = a;
    nlohmann::json b_job = b.spec;
    b_job["job_id"] = b.job_id;
    b_job["attempt"] = b.attempt;
    both.spec["versus"] = {{"b", std::move(b_job)}, {"first", pair.first}};
    RETURN_IF_ERROR(StartSide(first_, std::move(both), cpus, &first_pace_));
    stage_ = Stage::kFirst;
    return Status::Ok();
  }
  if (pair.pairing == "duet") {
    // Two slices of `threads` CPUs of this agent: the placed ones first, then the rest.
    std::vector<int> pool = cpus;
    for (int cpu : options_.cpus) {
      if (std::find(pool.begin(), pool.end(), cpu) == pool.end()) pool.push_back(cpu);
    }
    const std::vector<int> first_cpus = Slice(pool, threads, 0);
    const std::vector<int> second_cpus = Slice(pool, threads, 1);
    if (first_cpus.empty() || second_cpus.empty()) {
      return FailedPrecondition(
          "a duet of two " + std::to_string(threads) + "-thread sides needs " +
          std::to_string(2 * threads) + " CPUs; this agent runs jobs on " +
          std::to_string(options_.cpus.size()) + " (" + FormatCpuList(options_.cpus) + ")");
    }
    // The sides wait for each other before timing and run on until both are done
    // (the replicas' barrier, in a directory of the pair's own).
    std::error_code ec;
    const std::string barrier =
        fs::absolute(options_.work_dir + "/pair-" + std::to_string(a.job_id) + "-" +
                         std::to_string(a.attempt) + "/barrier",
                     ec)
            .string();
    fs::remove_all(barrier, ec);
    fs::create_directories(barrier, ec);
    if (ec) return Unavailable("cannot create " + barrier + ": " + ec.message());
    WorkerJob first = a_first_ ? a : b, second = a_first_ ? b : a;
    first.spec["duet"] = {{"index", 0}, {"barrier", barrier}};
    second.spec["duet"] = {{"index", 1}, {"barrier", barrier}};
    RETURN_IF_ERROR(StartSide(first_, std::move(first), first_cpus, &first_pace_));
    if (Status started = StartSide(second_, std::move(second), second_cpus, &second_pace_);
        !started.ok()) {
      first_.Kill();
      return started;
    }
    stage_ = Stage::kTogether;
    return Status::Ok();
  }
  // interleaved: the first side now, the second when it has ended.
  RETURN_IF_ERROR(StartSide(first_, a_first_ ? a : b, cpus, &first_pace_));
  stage_ = Stage::kFirst;
  return Status::Ok();
}

std::optional<nlohmann::json> PairRunner::Poll() {
  switch (stage_) {
    case Stage::kIdle:
      return std::nullopt;
    case Stage::kFirst: {
      std::optional<nlohmann::json> done = first_.Poll();
      if (!done) return std::nullopt;
      nlohmann::json result = Paced(std::move(*done), &first_pace_);
      if (pair_.pairing == "in_process") {
        stage_ = Stage::kIdle;
        // Side B ran in the same process, on the same CPUs, at the same time.
        if (result.contains("versus") && result["versus"].is_object() &&
            result["versus"].contains("b") && result["versus"]["b"].is_object()) {
          for (const char* key : {"host_pace", "peak_rss_mb", "worker_wall_s", "exit"}) {
            if (result.contains(key)) result["versus"]["b"][key] = result[key];
          }
          return result;
        }
        // The worker failed before it could time the pair: both sides fail.
        nlohmann::json failed_b = FailedResult(
            b_, "its in-process pair's worker failed: " + result.value("error", std::string("?")));
        return Compose(std::move(result), std::move(failed_b));
      }
      first_result_ = std::move(result);
      if (first_result_->value("ok", false) != true) {
        // The side that ran first failed: the other need not run.
        stage_ = Stage::kIdle;
        const WorkerJob& other = a_first_ ? b_ : a_;
        nlohmann::json skipped = FailedResult(other, "not run: the other side of its pair failed");
        return a_first_ ? Compose(std::move(*first_result_), std::move(skipped))
                        : Compose(std::move(skipped), std::move(*first_result_));
      }
      if (Status started = StartSide(second_, a_first_ ? b_ : a_, cpus_, &second_pace_);
          !started.ok()) {
        stage_ = Stage::kIdle;
        nlohmann::json failed =
            FailedResult(a_first_ ? b_ : a_, "cannot start the worker: " + started.message());
        return a_first_ ? Compose(std::move(*first_result_), std::move(failed))
                        : Compose(std::move(failed), std::move(*first_result_));
      }
      stage_ = Stage::kSecond;
      return std::nullopt;
    }
    case Stage::kSecond: {
      std::optional<nlohmann::json> done = second_.Poll();
      if (!done) return std::nullopt;
      stage_ = Stage::kIdle;
      nlohmann::json second = Paced(std::move(*done), &second_pace_);
      return a_first_ ? Compose(std::move(*first_result_), std::move(second))
                      : Compose(std::move(second), std::move(*first_result_));
    }
    case Stage::kTogether: {
      // Both must end; each runner's poll reaps its own worker. A side that failed stops
      // the other, whose result then comes as the failure of a killed worker.
      if (!first_result_) {
        if (std::optional<nlohmann::json> done = first_.Poll())
          first_result_ = Paced(std::move(*done), &first_pace_);
      }
      if (!second_result_) {
        if (std::optional<nlohmann::json> done = second_.Poll())
          second_result_ = Paced(std::move(*done), &second_pace_);
      }
      const char* why = "stopped: the other side of its pair failed";
      if (first_result_ && !second_result_ && first_result_->value("ok", false) != true)
        second_.Stop(why);
      if (second_result_ && !first_result_ && second_result_->value("ok", false) != true)
        first_.Stop(why);
      if (!first_result_ || !second_result_) return std::nullopt;
      stage_ = Stage::kIdle;
      nlohmann::json first = std::move(*first_result_), second = std::move(*second_result_);
      first_result_.reset();
      second_result_.reset();
      return a_first_ ? Compose(std::move(first), std::move(second))
                      : Compose(std::move(second), std::move(first));
    }
  }
  return std::nullopt;
}

nlohmann::json PairRunner::Compose(nlohmann::json a, nlohmann::json b) const {
  a["versus"] = {{"pairing", pair_.pairing}, {"first", pair_.first}, {"b", std::move(b)}};
  return a;
}

void PairRunner::Kill() {
  first_.Kill();
  second_.Kill();
  stage_ = Stage::kIdle;
  first_pace_.reset();
  second_pace_.reset();
  first_result_.reset();
  second_result_.reset();
}

}  // namespace benchfleet
