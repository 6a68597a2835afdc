// The ways one configuration runs in more than one worker process, or in one process
// many times: a batch search, replicas, repeats in fresh processes; and where a job of
// one process puts its threads.

#include "common/job_spec_read.h"
#include "common/job_spec_sections.h"
#include "common/limits.h"
#include "common/thread_placement.h"

namespace benchfleet {

using nlohmann::json;

// search: {"max_batch": {"memory_mb": M}}, the only search there is.
StatusOr<MaxBatchSearch> ReadSearch(const json& value) {
  if (!value.is_object() || value.size() != 1 || !value.contains("max_batch")) {
    return FieldError(
        "search",
        "search must be {\"max_batch\": {\"memory_mb\": M}} (the largest batch that runs "
        "within M MiB), got " +
            value.dump());
  }
  const json& max_batch = value.at("max_batch");
  if (!max_batch.is_object() || max_batch.size() != 1 || !max_batch.contains("memory_mb")) {
    return FieldError("search.max_batch",
                      "search.max_batch must be {\"memory_mb\": M}, got " + max_batch.dump());
  }
  MaxBatchSearch search;
  ASSIGN_OR_RETURN(search.memory_mb, ReadInt(max_batch.at("memory_mb"),
                                             "search.max_batch.memory_mb", 1, kMaxSearchMemoryMb));
  return search;
}

// The agent's `replica` object: {"index": i, "count": P, "barrier": "/dir"}.
StatusOr<ReplicaSpec> ReadReplica(const json& value, std::int64_t replicas) {
  if (!value.is_object()) {
    return FieldError("replica", "replica must be an object, got " + value.dump());
  }
  for (const auto& item : value.items()) {
    if (item.key() != "index" && item.key() != "count" && item.key() != "barrier") {
      return FieldError(
          "replica." + item.key(),
          "unknown key " + Quoted(item.key()) + " in replica; known keys: index, count, barrier");
    }
  }
  for (const char* key : {"index", "count", "barrier"}) {
    if (!value.contains(key)) {
      return FieldError(std::string("replica.") + key, std::string("missing replica.") + key);
    }
  }
  ReplicaSpec out;
  ASSIGN_OR_RETURN(out.count, ReadInt(value.at("count"), "replica.count", replicas, replicas));
  ASSIGN_OR_RETURN(out.index, ReadInt(value.at("index"), "replica.index", 0, out.count - 1));
  const json& barrier = value.at("barrier");
  if (!barrier.is_string() || barrier.get<std::string>().empty() ||
      barrier.get<std::string>()[0] != '/') {
    return FieldError(
        "replica.barrier",
        "replica.barrier must be the absolute path of a directory the copies share, got " +
            barrier.dump());
  }
  out.barrier = barrier.get<std::string>();
  return out;
}

Status ReadProcessRepeats(const json& holder, std::int64_t* processes,
                          std::optional<double>* precision) {
  if (holder.contains("processes")) {
    ASSIGN_OR_RETURN(*processes, ReadInt(holder.at("processes"), "processes", 1, kMaxJobProcesses));
  }
  if (holder.contains("precision") && !holder.at("precision").is_null()) {
    const json& value = holder.at("precision");
    if (!value.is_number() || !(value.get<double>() > 0) || !(value.get<double>() < 1)) {
      return FieldError(
          "precision",
          "precision must be a number in (0, 1), the half-width of the interval across "
          "processes as a fraction of the median (0.01: +-1%), got " +
              value.dump());
    }
    *precision = value.get<double>();
  }
  return Status::Ok();
}

// A search and replicas are each a way to run one configuration; neither combines with
// a job of several ranks, nor with each other.
Status CheckSearchAndReplicas(const JobSpec& spec) {
  const bool ranks = spec.parallel || spec.distributed || IsCollectiveModel(spec.model);
  if (spec.max_batch && ranks) {
    return FieldError(
        "search",
        "search.max_batch probes batches in one process; a job of several ranks (parallel, "
        "the collectives) cannot search");
  }
  if (spec.replicas == 1) return Status::Ok();
  if (ranks) {
    return FieldError(
        "replicas",
        "replicas are independent copies of a job of one process; a job of several ranks "
        "(parallel, the collectives) is one job across processes: set replicas to 1 or "
        "leave parallel out");
  }
  if (spec.max_batch) {
    return FieldError(
        "replicas",
        "search.max_batch finds what fits one process; replicas must be 1 with a search");
  }
  if (spec.device != "cpu") {
    return FieldError(
        "replicas", "replicas run on disjoint CPU sets of one agent: device must be \"cpu\", got " +
                        Quoted(spec.device));
  }
  return Status::Ok();
}

// Repeats in processes are the coordinator's, of a job whose one worker process times
// one model: a gang's ranks, replicas and a batch search combine results of their own.
Status CheckProcesses(const JobSpec& spec) {
  if (spec.processes == 1 && !spec.precision) return Status::Ok();
  if (RunsInOneProcess(spec)) return Status::Ok();
  const std::string what = spec.parallel || spec.distributed || IsCollectiveModel(spec.model)
                               ? "a job of several ranks"
                           : spec.replicas != 1 ? "a job of several replicas"
                                                : "a batch search";
  const std::string field = spec.processes != 1 ? "processes" : "precision";
  return FieldError(field, field + " repeats a job of one worker process; " + what + " runs once");
}

StatusOr<json> ReadInProcessVersus(const json& value, bool* b_first) {
  if (!value.is_object()) {
    return FieldError("versus",
                      "versus must be an object {\"b\": side B's job, \"first\": "
                      "\"a\" or \"b\"}, got " +
                          value.dump());
  }
  for (const auto& item : value.items()) {
    if (item.key() != "b" && item.key() != "first") {
      return FieldError("versus." + item.key(),
                        "unknown key " + Quoted(item.key()) + " in versus; known keys: b, first");
    }
  }
  if (!value.contains("b") || !value.at("b").is_object()) {
    return FieldError("versus.b", "versus.b must be side B's job, an object");
  }
  const json first = value.value("first", json("a"));
  if (first != "a" && first != "b") {
    return FieldError("versus.first", "versus.first must be \"a\" or \"b\", got " + first.dump());
  }
  *b_first = first == "b";
  return value.at("b");
}

Status CheckInProcessVersus(const JobSpec& spec, const json& side_b, const json& side_a) {
  const JobSpec& b = *spec.versus_b;
  if (!RunsInOneProcess(spec) || !RunsInOneProcess(b) || spec.scenario != "offline" ||
      b.scenario != "offline" || spec.profile || b.profile) {
    return FieldError("versus",
                      "an in-process pair times two jobs of one worker process each, "
                      "offline, without a profile");
  }
  if (b.versus_b) return FieldError("versus.b.versus", "side B of a pair has no pair of its own");
  auto same = [](const std::string& what, bool equal) -> Status {
    if (equal) return Status::Ok();
    return FieldError("versus.b." + what, "versus.b." + what +
                                              " must be side A's: both sides of an in-process pair "
                                              "share one process, its threads, pools and device");
  };
  RETURN_IF_ERROR(same("threads", spec.threads == b.threads));
  RETURN_IF_ERROR(same("interop_threads", spec.interop_threads == b.interop_threads));
  RETURN_IF_ERROR(same("onednn", spec.onednn == b.onednn));
  RETURN_IF_ERROR(same("omp_wait_policy", spec.omp_wait_policy == b.omp_wait_policy));
  RETURN_IF_ERROR(same("device", spec.device == b.device));
  RETURN_IF_ERROR(same("torch", spec.torch == b.torch));
  RETURN_IF_ERROR(same("thread_placement", side_a.value("thread_placement", json()) ==
                                               side_b.value("thread_placement", json())));
  return Status::Ok();
}

// A placement other than the default is of one worker process's threads (a gang's
// ranks and replicas each take their own slice of the agent's CPUs), and smt pairs
// threads on a core: one thread has none to pair.
Status CheckThreadPlacement(const JobSpec& spec, const std::string& placement) {
  if (placement == kDefaultThreadPlacement) return Status::Ok();
  if (!RunsInOneProcess(spec) || spec.device != "cpu") {
    return FieldError(
        "thread_placement",
        "thread_placement " + Quoted(placement) +
            " places the threads of a CPU job of one worker process; " +
            (spec.device != "cpu" ? "a GPU job" : "a gang's ranks, replicas and a batch search") +
            " take the default, \"cores\"");
  }
  if (placement == "smt" && spec.threads < 2) {
    return FieldError("thread_placement",
                      "thread_placement \"smt\" puts threads on the hardware threads of one core; "
                      "a job of 1 thread "
                      "has none to pair (threads: 2 or more)");
  }
  return Status::Ok();
}

bool RunsInOneProcess(const JobSpec& spec) {
  return !spec.parallel && !spec.distributed && !IsCollectiveModel(spec.model) &&
         spec.replicas == 1 && !spec.max_batch;
}

}  // namespace benchfleet
