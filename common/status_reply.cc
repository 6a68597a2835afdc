#include "common/status_reply.h"

#include <cmath>

#include "common/json_read.h"
#include "common/limits.h"

namespace benchfleet {

using nlohmann::json;

namespace {

constexpr size_t kMaxText = kMaxMessageBytes;

json OptionalJson(const std::optional<std::string>& value) {
  return value ? json(*value) : json(nullptr);
}
json OptionalJson(const std::optional<int64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

// The array `key` of the reply, each element an object read by `read`.
template <typename T, typename Read>
StatusOr<std::vector<T>> ReadList(const json& body, const char* key, Read read) {
  const auto it = body.find(key);
  if (it == body.end() || !it->is_array()) {
    return InvalidArgument(std::string("status_reply.") + key + ": must be an array");
  }
  std::vector<T> out;
  out.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string at = std::string("status_reply.") + key + "[" + std::to_string(i) + "]";
    const json& entry = (*it)[i];
    if (!entry.is_object())
      return InvalidArgument(at + ": must be an object, got " + ShownValue(entry));
    ASSIGN_OR_RETURN(T one, read(entry, at));
    out.push_back(std::move(one));
  }
  return out;
}

json SweepJson(const SweepOverview& sweep) {
  json out = json::object();
  out["sweep_id"] = sweep.sweep_id;
  out["name"] = sweep.name;
  out["state"] = sweep.state;
  out["created_at"] = sweep.created_at;
  out["finished_at"] = OptionalJson(sweep.finished_at);
  out["jobs"] = sweep.jobs.ToJson();
  out["labels"] = sweep.labels;
  out["eta_s"] = sweep.eta_s ? json(*sweep.eta_s) : json(nullptr);
  return out;
}

StatusOr<SweepOverview> ReadSweep(const json& entry, const std::string& at) {
  SweepOverview out;
  ASSIGN_OR_RETURN(out.sweep_id, ReadInteger(entry, at, "sweep_id", kAtLeastOne));
  ASSIGN_OR_RETURN(out.name, ReadText(entry, at, "name", kMaxText));
  ASSIGN_OR_RETURN(out.state, ReadText(entry, at, "state", kMaxText));
  if (out.state != "running" && out.state != "done" && out.state != "cancelled") {
    return InvalidArgument(at + ".state: must be running, done or cancelled, got " +
                           ShownValue(entry.at("state")));
  }
  ASSIGN_OR_RETURN(out.created_at, ReadText(entry, at, "created_at", kMaxText));
  ASSIGN_OR_RETURN(out.finished_at, ReadOptionalText(entry, at, "finished_at", kMaxText));
  const auto jobs = entry.find("jobs");
  if (jobs == entry.end() || !jobs->is_object())
    return InvalidArgument(at + ".jobs: must be an object");
  const std::string jobs_at = at + ".jobs";
  SweepJobCounts& counts = out.jobs;
  ASSIGN_OR_RETURN(counts.total, ReadInteger(*jobs, jobs_at, "total", kAtLeastZero));
  ASSIGN_OR_RETURN(counts.storing, ReadIntegerOr(*jobs, jobs_at, "storing", kAtLeastZero, 0));
  ASSIGN_OR_RETURN(counts.queued, ReadInteger(*jobs, jobs_at, "queued", kAtLeastZero));
  ASSIGN_OR_RETURN(counts.running, ReadInteger(*jobs, jobs_at, "running", kAtLeastZero));
  ASSIGN_OR_RETURN(counts.done, ReadInteger(*jobs, jobs_at, "done", kAtLeastZero));
  ASSIGN_OR_RETURN(counts.failed, ReadInteger(*jobs, jobs_at, "failed", kAtLeastZero));
  ASSIGN_OR_RETURN(counts.cancelled, ReadInteger(*jobs, jobs_at, "cancelled", kAtLeastZero));
  if (counts.Unfinished() < 0) return InvalidArgument(jobs_at + ": more jobs ended than its total");
  if (const auto labels = entry.find("labels"); labels != entry.end() && !labels->is_null()) {
    if (!labels->is_object()) return InvalidArgument(at + ".labels: must be an object of strings");
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) return InvalidArgument(at + ".labels." + key + ": must be a string");
      out.labels.emplace(key, value.get<std::string>());
    }
  }
  if (const auto eta = entry.find("eta_s"); eta != entry.end() && !eta->is_null()) {
    if (!eta->is_number() || !std::isfinite(eta->get<double>()) || eta->get<double>() < 0) {
      return InvalidArgument(at + ".eta_s: must be a number of seconds >= 0 or null, got " +
                             ShownValue(*eta));
    }
    out.eta_s = eta->get<double>();
  }
  return out;
}

json JobJson(const RunningJobSummary& job) {
  // Members set one by one: a status reply holds one per busy agent of the fleet.
  json out = json::object();
  out["sweep_id"] = job.sweep_id;
  out["kind"] = job.kind;
  out["model"] = OptionalJson(job.model);
  out["mode"] = OptionalJson(job.mode);
  out["dtype"] = OptionalJson(job.dtype);
  out["batch_size"] = OptionalJson(job.batch_size);
  out["threads"] = OptionalJson(job.threads);
  out["device"] = job.device;
  out["started_at"] = job.started_at;
  return out;
}

StatusOr<RunningJobSummary> ReadJob(const json& job, const std::string& at) {
  RunningJobSummary out;
  ASSIGN_OR_RETURN(out.sweep_id, ReadInteger(job, at, "sweep_id", kAtLeastOne));
  ASSIGN_OR_RETURN(out.kind, ReadText(job, at, "kind", kMaxText));
  ASSIGN_OR_RETURN(out.model, ReadOptionalText(job, at, "model", kMaxText));
  ASSIGN_OR_RETURN(out.mode, ReadOptionalText(job, at, "mode", kMaxText));
  ASSIGN_OR_RETURN(out.dtype, ReadOptionalText(job, at, "dtype", kMaxText));
  ASSIGN_OR_RETURN(out.batch_size, ReadOptionalInteger(job, at, "batch_size", kAtLeastOne));
  ASSIGN_OR_RETURN(out.threads, ReadOptionalInteger(job, at, "threads", kAtLeastOne));
  ASSIGN_OR_RETURN(auto device, ReadOptionalText(job, at, "device", kMaxText));
  out.device = device.value_or("cpu");
  ASSIGN_OR_RETURN(auto started_at, ReadOptionalText(job, at, "started_at", kMaxText));
  out.started_at = started_at.value_or("");
  return out;
}

json AgentJson(const AgentState& agent) {
  json out = json::object();
  out["agent"] = agent.agent;
  out["state"] = agent.State();
  out["job_id"] = OptionalJson(agent.job_id);
  out["job"] = agent.job ? JobJson(*agent.job) : json(nullptr);
  out["machine_id"] = agent.machine_id;
  out["tags"] = agent.tags;
  out["last_seen_ms_ago"] = agent.last_seen_ms_ago;
  return out;
}

StatusOr<AgentState> ReadAgent(const json& entry, const std::string& at) {
  AgentState out;
  ASSIGN_OR_RETURN(out.agent, ReadText(entry, at, "agent", kMaxText));
  ASSIGN_OR_RETURN(const std::string state, ReadText(entry, at, "state", kMaxText));
  ASSIGN_OR_RETURN(out.job_id, ReadOptionalInteger(entry, at, "job_id", kAtLeastOne));
  if (state != "idle" && state != "busy") {
    return InvalidArgument(at + ".state: must be idle or busy, got " +
                           ShownValue(entry.at("state")));
  }
  if ((state == "busy") != out.job_id.has_value()) {
    return InvalidArgument(at + ".job_id: a busy agent names its job and an idle one none");
  }
  if (const auto job = entry.find("job"); job != entry.end() && !job->is_null()) {
    if (!job->is_object()) return InvalidArgument(at + ".job: must be an object or null");
    ASSIGN_OR_RETURN(out.job, ReadJob(*job, at + ".job"));
  }
  ASSIGN_OR_RETURN(auto machine_id, ReadOptionalText(entry, at, "machine_id", kMaxText));
  out.machine_id = machine_id.value_or("");
  if (const auto tags = entry.find("tags"); tags != entry.end() && !tags->is_null()) {
    if (!tags->is_array()) return InvalidArgument(at + ".tags: must be an array of strings");
    for (const json& tag : *tags) {
      if (!tag.is_string()) return InvalidArgument(at + ".tags: must be an array of strings");
      out.tags.push_back(tag.get<std::string>());
    }
  }
  ASSIGN_OR_RETURN(out.last_seen_ms_ago, ReadInteger(entry, at, "last_seen_ms_ago", kAtLeastZero));
  return out;
}

json WaitingJson(const WaitingRequirement& waiting) {
  return {
      {"jobs", waiting.jobs},
      {"requirement",
       {{"kind", waiting.kind},
        {"pinned_host", waiting.pinned_host.empty() ? json(nullptr) : json(waiting.pinned_host)},
        {"select", waiting.select},
        {"device", waiting.device}}},
      {"matching_agents", waiting.matching_agents},
      {"reason", waiting.reason}};
}

StatusOr<WaitingRequirement> ReadWaiting(const json& entry, const std::string& at) {
  WaitingRequirement out;
  ASSIGN_OR_RETURN(out.jobs, ReadInteger(entry, at, "jobs", kAtLeastOne));
  const auto requirement = entry.find("requirement");
  if (requirement == entry.end() || !requirement->is_object()) {
    return InvalidArgument(at + ".requirement: must be an object");
  }
  const std::string req_at = at + ".requirement";
  ASSIGN_OR_RETURN(out.kind, ReadText(*requirement, req_at, "kind", kMaxText));
  ASSIGN_OR_RETURN(auto pinned, ReadOptionalText(*requirement, req_at, "pinned_host", kMaxText));
  out.pinned_host = pinned.value_or("");
  if (const auto select = requirement->find("select");
      select != requirement->end() && !select->is_null()) {
    if (!select->is_object()) return InvalidArgument(req_at + ".select: must be an object");
    out.select = *select;
  }
  ASSIGN_OR_RETURN(auto device, ReadOptionalText(*requirement, req_at, "device", kMaxText));
  out.device = device.value_or("");
  ASSIGN_OR_RETURN(out.matching_agents, ReadInteger(entry, at, "matching_agents", kAtLeastZero));
  ASSIGN_OR_RETURN(out.reason, ReadText(entry, at, "reason", kMaxText));
  return out;
}

StatusOr<DepartedAgent> ReadDeparted(const json& entry, const std::string& at) {
  DepartedAgent out;
  ASSIGN_OR_RETURN(out.agent, ReadText(entry, at, "agent", kMaxText));
  ASSIGN_OR_RETURN(out.at, ReadText(entry, at, "at", kMaxText));
  ASSIGN_OR_RETURN(out.reason, ReadText(entry, at, "reason", kMaxText));
  return out;
}

}  // namespace

namespace {

// Each counter's name, member and meaning, in the protocol's order: the one list the
// reply's writer, its reader, the CLI's table and the metrics go by.
struct CounterEntry {
  const char* name;
  int64_t CoordinatorCounters::*member;
  const char* meaning;
};
constexpr CounterEntry kCounters[] = {
    {"malformed_messages", &CoordinatorCounters::malformed_messages,
     "Messages refused at the edge: bad frames, JSON or fields."},
    {"unknown_peers", &CoordinatorCounters::unknown_peers,
     "Messages from agents that had not registered."},
    {"results_stored", &CoordinatorCounters::results_stored, "Results stored."},
    {"duplicate_results", &CoordinatorCounters::duplicate_results,
     "Resends of a result already stored or already recorded as stale."},
    {"stale_results", &CoordinatorCounters::stale_results,
     "Results of an attempt that no longer owned its job, recorded apart."},
    {"rejected_results", &CoordinatorCounters::rejected_results,
     "Results that could never be stored (ack rejected)."},
    {"failed_jobs", &CoordinatorCounters::failed_jobs, "Jobs that failed for good."},
    {"requeued_jobs", &CoordinatorCounters::requeued_jobs,
     "Attempts lost (agent silent, lease expired, result rejected) and their jobs queued again."},
    {"undelivered_offers", &CoordinatorCounters::undelivered_offers,
     "Job offers whose send failed (not an attempt)."},
    {"refused_offers", &CoordinatorCounters::refused_offers,
     "Job offers a busy agent refused (not an attempt)."},
    {"send_failures", &CoordinatorCounters::send_failures,
     "Messages ZeroMQ would not take, heartbeats to an agent just gone included."},
    {"store_errors", &CoordinatorCounters::store_errors, "Store operations that failed."},
    {"handler_exceptions", &CoordinatorCounters::handler_exceptions,
     "Exceptions caught by the last-resort guard around a message; should stay 0."}};

}  // namespace

json SweepJobCounts::ToJson() const {
  json out = json::object();
  out["total"] = total;
  out["storing"] = storing;
  out["queued"] = queued;
  out["running"] = running;
  out["done"] = done;
  out["failed"] = failed;
  out["cancelled"] = cancelled;
  return out;
}

std::vector<std::pair<const char*, int64_t>> CoordinatorCounters::Named() const {
  std::vector<std::pair<const char*, int64_t>> out;
  for (const CounterEntry& c : kCounters) out.emplace_back(c.name, this->*c.member);
  return out;
}

const char* CoordinatorCounters::Meaning(const std::string& name) {
  for (const CounterEntry& entry : kCounters) {
    if (name == entry.name) return entry.meaning;
  }
  return "";
}

json CoordinatorCounters::ToJson() const {
  json out = json::object();
  for (const CounterEntry& c : kCounters) out[c.name] = this->*c.member;
  return out;
}

StatusOr<CoordinatorCounters> CoordinatorCounters::FromJson(const json& counters) {
  if (!counters.is_object()) return InvalidArgument("status_reply.counters: must be an object");
  CoordinatorCounters out;
  for (const CounterEntry& c : kCounters) {
    ASSIGN_OR_RETURN(out.*c.member,
                     ReadInteger(counters, "status_reply.counters", c.name, kAtLeastZero));
  }
  return out;
}

json StatusReply::ToJson() const {
  json sweeps_json = json::array();
  for (const SweepOverview& sweep : sweeps) sweeps_json.push_back(SweepJson(sweep));
  // A thousand agents' entries are most of a status reply's cost: reserved, then moved in.
  json agents_json = json::array();
  agents_json.get_ref<json::array_t&>().reserve(agents.size());
  for (const AgentState& agent : agents) agents_json.push_back(AgentJson(agent));
  json waiting_json = json::array();
  for (const WaitingRequirement& one : waiting) waiting_json.push_back(WaitingJson(one));
  json departed_json = json::array();
  for (const DepartedAgent& one : departed) {
    departed_json.push_back({{"agent", one.agent}, {"at", one.at}, {"reason", one.reason}});
  }
  Message message = MakeMessage(kType, json::object());
  json& body = message.body;
  body["request_id"] = request_id;
  body["sweeps"] = std::move(sweeps_json);
  body["agents"] = std::move(agents_json);
  body["counters"] = counters.ToJson();
  body["waiting"] = std::move(waiting_json);
  body["departed"] = std::move(departed_json);
  return std::move(message.body);
}

StatusOr<StatusReply> StatusReply::FromJson(const json& body) {
  if (!body.is_object()) return InvalidArgument("status_reply: must be an object");
  StatusReply out;
  out.request_id = body.value("request_id", json());
  ASSIGN_OR_RETURN(out.sweeps, ReadList<SweepOverview>(body, "sweeps", ReadSweep));
  ASSIGN_OR_RETURN(out.agents, ReadList<AgentState>(body, "agents", ReadAgent));
  const auto counters = body.find("counters");
  if (counters == body.end()) return InvalidArgument("status_reply.counters: missing");
  ASSIGN_OR_RETURN(out.counters, CoordinatorCounters::FromJson(*counters));
  ASSIGN_OR_RETURN(out.waiting, ReadList<WaitingRequirement>(body, "waiting", ReadWaiting));
  ASSIGN_OR_RETURN(out.departed, ReadList<DepartedAgent>(body, "departed", ReadDeparted));
  return out;
}

}  // namespace benchfleet
