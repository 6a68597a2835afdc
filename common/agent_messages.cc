#include "common/agent_messages.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/json_read.h"
#include "common/limits.h"
#include "common/worker_result.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// Most tags an agent may carry and most spooled results it may list in one register.
constexpr size_t kMaxTags = 64;
constexpr size_t kMaxTagLength = 128;
constexpr size_t kMaxSpooledListed = 100000;
// Longest text of a `stop` reason or an error message kept (a peer's text is logged).
constexpr size_t kMaxReasonLength = 64 * 1024;

// {job_id >= 1, attempt >= 1}; `where` names the object.
StatusOr<JobAttempt> ParseJobAttempt(const json& value, const std::string& where) {
  if (!value.is_object())
    return InvalidArgument(where + ": must be {job_id, attempt}, got " + ShownValue(value));
  JobAttempt out;
  ASSIGN_OR_RETURN(out.job_id, ReadInteger(value, where, "job_id", kAtLeastOne));
  ASSIGN_OR_RETURN(out.attempt,
                   ReadInteger(value, where, "attempt", {1, std::numeric_limits<int>::max()}));
  return out;
}

}  // namespace

bool ValidAgentName(const std::string& name) {
  if (name.empty() || name.size() > kMaxAgentNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

StatusOr<HostPrice> ParseHostPrice(const json& per_hour, const json& currency,
                                   const std::string& context) {
  HostPrice out;
  if (!per_hour.is_number() || !(per_hour.get<double>() >= 0) ||
      per_hour.get<double>() > kMaxPricePerHour) {
    return InvalidArgument(context + ".per_hour: must be a number in [0, " +
                           std::to_string(static_cast<int64_t>(kMaxPricePerHour)) + "], got " +
                           ShownValue(per_hour));
  }
  out.per_hour = per_hour.get<double>();
  out.currency = currency.is_null() ? kDefaultCurrency : "";
  if (!currency.is_null()) {
    const bool code = currency.is_string() && currency.get_ref<const std::string&>().size() == 3 &&
                      std::all_of(currency.get_ref<const std::string&>().begin(),
                                  currency.get_ref<const std::string&>().end(),
                                  [](char c) { return c >= 'A' && c <= 'Z'; });
    if (!code) {
      return InvalidArgument(
          context +
          ".currency: must be an ISO 4217 code of three capital letters (USD, EUR), got " +
          ShownValue(currency));
    }
    out.currency = currency.get<std::string>();
  }
  return out;
}

// ---- register ----

json RegisterRequest::ToJson() const {
  json body = MakeMessage(kType).body;
  body["agent"] = agent;
  body["tags"] = tags;
  body["capabilities"] = capabilities.ToJson();
  body["calibrate"] = calibrate;
  json listed = json::array();
  for (const JobAttempt& item : spooled) listed.push_back(item.ToJson());
  body["spooled"] = std::move(listed);
  if (price) body["price"] = {{"per_hour", price->per_hour}, {"currency", price->currency}};
  if (running) body["running"] = running->ToJson();
  if (!instance.empty()) body["instance"] = instance;
  return body;
}

StatusOr<RegisterRequest> RegisterRequest::FromJson(const json& body) {
  RegisterRequest out;
  out.agent = body["agent"].get<std::string>();
  if (!ValidAgentName(out.agent)) {
    return InvalidArgument("register.agent: must be 1-" + std::to_string(kMaxAgentNameLength) +
                           " letters, digits, '-', '_' or '.'");
  }
  const json& tags = body["tags"];
  if (tags.size() > kMaxTags)
    return InvalidArgument("register.tags: at most " + std::to_string(kMaxTags) + " tags");
  for (size_t i = 0; i < tags.size(); ++i) {
    if (!tags[i].is_string() || tags[i].get_ref<const std::string&>().empty() ||
        tags[i].get_ref<const std::string&>().size() > kMaxTagLength) {
      return InvalidArgument("register.tags[" + std::to_string(i) +
                             "]: must be a non-empty string of at most " +
                             std::to_string(kMaxTagLength) + " characters");
    }
    out.tags.push_back(tags[i].get<std::string>());
  }
  auto capabilities = Capabilities::FromJson(body["capabilities"]);
  if (!capabilities.ok()) return InvalidArgument("register." + capabilities.status().message());
  out.capabilities = std::move(capabilities).value();
  out.calibrate = body.value("calibrate", json(false)) == true;
  auto spooled = body.find("spooled");
  if (spooled != body.end()) {
    if (spooled->size() > kMaxSpooledListed)
      return InvalidArgument("register.spooled: too many entries");
    for (size_t i = 0; i < spooled->size(); ++i) {
      ASSIGN_OR_RETURN(
          JobAttempt item,
          ParseJobAttempt((*spooled)[i], "register.spooled[" + std::to_string(i) + "]"));
      out.spooled.push_back(item);
    }
  }
  if (auto price = body.find("price"); price != body.end()) {
    ASSIGN_OR_RETURN(HostPrice parsed,
                     ParseHostPrice(price->contains("per_hour") ? (*price)["per_hour"] : json(),
                                    price->contains("currency") ? (*price)["currency"] : json(),
                                    "register.price"));
    out.price = parsed;
  }
  if (auto running = body.find("running"); running != body.end() && !running->is_null()) {
    ASSIGN_OR_RETURN(JobAttempt job, ParseJobAttempt(*running, "register.running"));
    out.running = job;
  }
  if (auto instance = body.find("instance"); instance != body.end() && !instance->is_null()) {
    const bool hex =
        instance->is_string() && instance->get_ref<const std::string&>().size() == 16 &&
        instance->get_ref<const std::string&>().find_first_not_of("0123456789abcdef") ==
            std::string::npos;
    if (!hex) return InvalidArgument("register.instance: must be 16 lowercase hex digits");
    out.instance = instance->get<std::string>();
  }
  return out;
}

// ---- heartbeat ----

json Heartbeat::ToJson() const {
  json body = MakeMessage(kType).body;
  if (from_agent) body["running"] = running ? running->ToJson() : json();
  return body;
}

StatusOr<Heartbeat> Heartbeat::FromJson(const json& body) {
  Heartbeat out;
  auto running = body.find("running");
  out.from_agent = running != body.end();
  if (running != body.end() && !running->is_null()) {
    ASSIGN_OR_RETURN(JobAttempt job, ParseJobAttempt(*running, "heartbeat.running"));
    out.running = job;
  }
  return out;
}

// ---- leave ----

json LeaveNotice::ToJson() const {
  json body = MakeMessage(kType).body;
  body["reason"] = reason;
  body["running"] = running ? running->ToJson() : json();
  return body;
}

StatusOr<LeaveNotice> LeaveNotice::FromJson(const json& body) {
  LeaveNotice out;
  ASSIGN_OR_RETURN(out.reason, ReadText(body, "leave", "reason", kMaxReasonLength));
  auto running = body.find("running");
  if (running != body.end() && !running->is_null()) {
    ASSIGN_OR_RETURN(JobAttempt job, ParseJobAttempt(*running, "leave.running"));
    out.running = job;
  }
  return out;
}

// ---- result ----

StatusOr<ResultReport> ResultReport::FromJson(const json& body) {
  ResultReport out;
  ASSIGN_OR_RETURN(out.job, ParseJobAttempt(body, "result"));
  out.result = &body["result"];
  return out;
}

Message ResultReport::Make(const JobAttempt& job, json result) {
  Message message = MakeMessage(kType, job.ToJson());
  message.body["result"] = std::move(result);
  return message;
}

// ---- rendezvous ----

json RendezvousReport::ToJson() const {
  json body = MakeMessage(kType, job.ToJson()).body;
  body["store"] = store();
  return body;
}

StatusOr<RendezvousReport> RendezvousReport::FromJson(const json& body) {
  RendezvousReport out;
  ASSIGN_OR_RETURN(out.job, ParseJobAttempt(body, "rendezvous"));
  const std::string& store = body["store"].get_ref<const std::string&>();
  const size_t colon = store.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= store.size() || store.size() > 300 ||
      store.size() - colon - 1 > 5 ||
      store.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      std::stol(store.substr(colon + 1)) < 1 || std::stol(store.substr(colon + 1)) > 65535) {
    return InvalidArgument("rendezvous.store: must be \"HOST:PORT\" with a port in [1, 65535]");
  }
  out.store_host = store.substr(0, colon);
  out.store_port = std::stol(store.substr(colon + 1));
  return out;
}

// ---- error ----

json ErrorReport::ToJson() const {
  json body = MakeMessage(kType).body;
  if (!request_id.is_null()) body["request_id"] = request_id;
  body["code"] = code;
  body["message"] = message;
  if (job) {
    body["job_id"] = job->job_id;
    body["attempt"] = job->attempt;
  }
  return body;
}

StatusOr<ErrorReport> ErrorReport::FromJson(const json& body) {
  ErrorReport out;
  out.code = body["code"].get<std::string>();
  ASSIGN_OR_RETURN(out.message, ReadText(body, "error", "message", kMaxReasonLength));
  out.request_id = body.value("request_id", json());
  const bool names_job = body.contains("job_id") || body.contains("attempt");
  if (names_job) {
    ASSIGN_OR_RETURN(JobAttempt job, ParseJobAttempt(body, "error"));
    out.job = job;
  }
  return out;
}

// ---- registered ----

json RegisteredReply::ToJson() const {
  return MakeMessage(kType,
                     {{"agent", agent}, {"heartbeat_ms", heartbeat_ms}, {"liveness", liveness}})
      .body;
}

StatusOr<RegisteredReply> RegisteredReply::FromJson(const json& body) {
  RegisteredReply out;
  out.agent = body["agent"].get<std::string>();
  // From a millisecond to a day; liveness from 1 to 1000 intervals.
  ASSIGN_OR_RETURN(out.heartbeat_ms,
                   ReadInteger(body, "registered", "heartbeat_ms", {1, 86400000}));
  ASSIGN_OR_RETURN(out.liveness, ReadInteger(body, "registered", "liveness", {1, 1000}));
  return out;
}

// ---- job ----

json GangRole::ToJson() const {
  json gang = {{"rank", rank}, {"world_size", world_size}};
  if (!store.empty()) gang["store"] = store;
  return gang;
}

StatusOr<GangRole> ParseGangRole(const json& gang) {
  if (!gang.is_object()) return InvalidArgument("job.gang: must be an object");
  GangRole out;
  ASSIGN_OR_RETURN(out.world_size, ReadInteger(gang, "job.gang", "world_size", {2, kMaxWorldSize}));
  ASSIGN_OR_RETURN(out.rank, ReadInteger(gang, "job.gang", "rank", {0, out.world_size - 1}));
  const json store = gang.value("store", json());
  if (out.rank > 0 && (!store.is_string() || store.get_ref<const std::string&>().empty())) {
    return InvalidArgument("job.gang.store: rank " + std::to_string(out.rank) +
                           " needs rank 0's store");
  }
  if (store.is_string()) out.store = store.get<std::string>();
  return out;
}

json PairOffer::ToJson() const {
  return {{"b", {{"job_id", b_job_id}, {"spec", b_spec}, {"needs", b_needs.ToJson()}}},
          {"pairing", pairing},
          {"first", first},
          {"pair", pair}};
}

StatusOr<PairOffer> ParsePairOffer(const json& versus) {
  if (!versus.is_object()) return InvalidArgument("job.versus: must be an object");
  PairOffer out;
  const json b = versus.value("b", json());
  if (!b.is_object()) return InvalidArgument("job.versus.b: must be side B's job, an object");
  ASSIGN_OR_RETURN(out.b_job_id, ReadInteger(b, "job.versus.b", "job_id", kAtLeastOne));
  if (!b.contains("spec") || !b.at("spec").is_object())
    return InvalidArgument("job.versus.b.spec: must be an object");
  out.b_spec = b.at("spec");
  if (!b.contains("needs")) return InvalidArgument("job.versus.b.needs: missing");
  ASSIGN_OR_RETURN(out.b_needs, JobNeeds::FromJson(b.at("needs"), "job.versus.b.needs"));
  if (out.b_needs.Agents() != 1 || out.b_needs.local_processes != 1) {
    return InvalidArgument("job.versus.b.needs: side B of a pair is one worker process");
  }
  ASSIGN_OR_RETURN(out.pairing, ReadText(versus, "job.versus", "pairing", 32));
  const std::vector<std::string>& pairings = KnownPairings();
  if (std::find(pairings.begin(), pairings.end(), out.pairing) == pairings.end()) {
    return InvalidArgument("job.versus.pairing: must be interleaved, duet or in_process, got \"" +
                           out.pairing + "\"");
  }
  ASSIGN_OR_RETURN(out.first, ReadText(versus, "job.versus", "first", 1));
  if (out.first != "a" && out.first != "b")
    return InvalidArgument("job.versus.first: must be \"a\" or \"b\"");
  ASSIGN_OR_RETURN(out.pair, ReadInteger(versus, "job.versus", "pair", {0, kMaxJobProcesses}));
  return out;
}

json JobOffer::ToJson() const {
  json body = MakeMessage(kType, job.ToJson()).body;
  body["spec"] = spec;
  body["needs"] = needs.ToJson();
  body["timeout_s"] = timeout_s;
  if (committed_at_us) body["committed_at_us"] = *committed_at_us;
  if (gang) body["gang"] = gang->ToJson();
  if (versus) body["versus"] = versus->ToJson();
  return body;
}

StatusOr<JobOffer> JobOffer::FromJson(const json& body) {
  JobOffer out;
  ASSIGN_OR_RETURN(out.job, ParseJobAttempt(body, "job"));
  out.spec = body["spec"];
  const json& timeout = body["timeout_s"];
  // A NaN timeout would never fire: the worker would run unbounded. 0 (none given) is the
  // agent's to fill in.
  if (!(timeout.get<double>() >= 0) || !std::isfinite(timeout.get<double>())) {
    return InvalidArgument("job.timeout_s: must be a finite number >= 0, got " +
                           ShownValue(timeout));
  }
  out.timeout_s = timeout.get<double>();
  if (auto at = body.find("committed_at_us"); at != body.end())
    out.committed_at_us = at->get<int64_t>();
  if (auto gang = body.find("gang"); gang != body.end()) {
    ASSIGN_OR_RETURN(GangRole role, ParseGangRole(*gang));
    out.gang = role;
  }
  if (auto versus = body.find("versus"); versus != body.end()) {
    ASSIGN_OR_RETURN(PairOffer pair, ParsePairOffer(*versus));
    out.versus = std::move(pair);
  }
  if (auto needs = body.find("needs"); needs != body.end()) {
    ASSIGN_OR_RETURN(out.needs, JobNeeds::FromJson(*needs, "job.needs"));
  } else {
    auto derived = NeedsOfJobJson(out.spec);
    if (!derived.ok()) return InvalidArgument("job.spec: " + derived.status().message());
    out.needs = *derived;
  }
  if (out.gang &&
      (out.needs.local_processes != 1 || out.needs.world_size != out.gang->world_size)) {
    return InvalidArgument(
        "job.needs: one rank of a gang of " + std::to_string(out.gang->world_size) +
        " is one process of a world of that size, got " + out.needs.ToJson().dump());
  }
  return out;
}

// ---- stop ----

json StopOrder::ToJson() const {
  json body = MakeMessage(kType, job.ToJson()).body;
  body["reason"] = reason;
  return body;
}

StatusOr<StopOrder> StopOrder::FromJson(const json& body) {
  StopOrder out;
  ASSIGN_OR_RETURN(out.job, ParseJobAttempt(body, "stop"));
  ASSIGN_OR_RETURN(out.reason, ReadText(body, "stop", "reason", kMaxReasonLength));
  return out;
}

// ---- ack ----

const char* ResultAck::OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kStored:
      return "stored";
    case Outcome::kDuplicate:
      return "duplicate";
    case Outcome::kStale:
      return "stale";
    case Outcome::kRejected:
      return "rejected";
  }
  return "stored";
}

json ResultAck::ToJson() const {
  json body = MakeMessage(kType, job.ToJson()).body;
  body["outcome"] = OutcomeName(outcome);
  if (!reason.empty()) body["reason"] = reason;
  return body;
}

StatusOr<ResultAck> ResultAck::FromJson(const json& body) {
  ResultAck out;
  ASSIGN_OR_RETURN(out.job, ParseJobAttempt(body, "ack"));
  const std::string& outcome = body["outcome"].get_ref<const std::string&>();
  bool known = false;
  for (Outcome o : {Outcome::kStored, Outcome::kDuplicate, Outcome::kStale, Outcome::kRejected}) {
    if (outcome == OutcomeName(o)) {
      out.outcome = o;
      known = true;
    }
  }
  if (!known) {
    return InvalidArgument("ack.outcome: must be stored, duplicate, stale or rejected, got " +
                           ShownValue(body["outcome"]));
  }
  if (auto reason = body.find("reason"); reason != body.end()) {
    ASSIGN_OR_RETURN(out.reason, ReadText(body, "ack", "reason", kMaxReasonLength));
  }
  return out;
}

}  // namespace benchfleet
