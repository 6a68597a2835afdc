#include "common/messages.h"

#include <algorithm>
#include <limits>

#include "common/limits.h"

namespace benchfleet {
namespace {

using nlohmann::json;

// Most tags an agent may carry and most spooled results it may list in one register.
constexpr size_t kMaxTags = 64;
constexpr size_t kMaxTagLength = 128;
constexpr size_t kMaxSpooledListed = 100000;
// Longest SQL text a query may carry.
constexpr size_t kMaxSqlLength = 64 * 1024;

std::string Shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

// {job_id >= 1, attempt >= 1}; `where` names the object.
StatusOr<JobAttempt> ParseJobAttempt(const json& value, const std::string& where) {
  if (!value.is_object()) return InvalidArgument(where + ": must be {job_id, attempt}, got " + Shown(value));
  JobAttempt out;
  for (const char* key : {"job_id", "attempt"}) {
    auto it = value.find(key);
    if (it == value.end() || !it->is_number_integer() || it->get<int64_t>() < 1 ||
        (std::string(key) == "attempt" && it->get<int64_t>() > std::numeric_limits<int>::max())) {
      return InvalidArgument(where + "." + key + ": must be a positive integer");
    }
  }
  out.job_id = value["job_id"].get<int64_t>();
  out.attempt = static_cast<int>(value["attempt"].get<int64_t>());
  return out;
}

// Optional positive integer field `key` (Decode checked it is an integer).
StatusOr<std::optional<int64_t>> PositiveId(const Message& message, const char* key) {
  auto it = message.body.find(key);
  if (it == message.body.end()) return std::optional<int64_t>();
  if (!it->is_number_integer() || it->get<int64_t>() < 1) {
    return InvalidArgument(message.type + "." + key + ": must be a positive integer, got " + Shown(*it));
  }
  return std::optional<int64_t>(it->get<int64_t>());
}

}  // namespace

bool ValidAgentName(const std::string& name) {
  if (name.empty() || name.size() > kMaxAgentNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

StatusOr<HostPrice> ParseHostPrice(const json& per_hour, const json& currency, const std::string& context) {
  HostPrice out;
  if (!per_hour.is_number() || !(per_hour.get<double>() >= 0) || per_hour.get<double>() > kMaxPricePerHour) {
    return InvalidArgument(context + ".per_hour: must be a number in [0, " + std::to_string(static_cast<int64_t>(kMaxPricePerHour)) +
                           "], got " + Shown(per_hour));
  }
  out.per_hour = per_hour.get<double>();
  out.currency = currency.is_null() ? kDefaultCurrency : "";
  if (!currency.is_null()) {
    const bool code = currency.is_string() && currency.get_ref<const std::string&>().size() == 3 &&
                      std::all_of(currency.get_ref<const std::string&>().begin(),
                                  currency.get_ref<const std::string&>().end(),
                                  [](char c) { return c >= 'A' && c <= 'Z'; });
    if (!code) {
      return InvalidArgument(context + ".currency: must be an ISO 4217 code of three capital letters (USD, EUR), got " +
                             Shown(currency));
    }
    out.currency = currency.get<std::string>();
  }
  return out;
}

StatusOr<RegisterRequest> ParseRegister(const Message& message) {
  const json& body = message.body;
  RegisterRequest out;
  out.agent = body["agent"].get<std::string>();
  if (!ValidAgentName(out.agent)) {
    return InvalidArgument("register.agent: must be 1-" + std::to_string(kMaxAgentNameLength) +
                           " letters, digits, '-', '_' or '.'");
  }
  const json& tags = body["tags"];
  if (tags.size() > kMaxTags) return InvalidArgument("register.tags: at most " + std::to_string(kMaxTags) + " tags");
  for (size_t i = 0; i < tags.size(); ++i) {
    if (!tags[i].is_string() || tags[i].get_ref<const std::string&>().empty() ||
        tags[i].get_ref<const std::string&>().size() > kMaxTagLength) {
      return InvalidArgument("register.tags[" + std::to_string(i) + "]: must be a non-empty string of at most " +
                             std::to_string(kMaxTagLength) + " characters");
    }
    out.tags.push_back(tags[i].get<std::string>());
  }
  auto capabilities = ParseCapabilities(body["capabilities"]);
  if (!capabilities.ok()) return InvalidArgument("register." + capabilities.status().message());
  out.capabilities = std::move(*capabilities);
  out.calibrate = body.value("calibrate", json(false)) == true;
  auto spooled = body.find("spooled");
  if (spooled != body.end()) {
    if (spooled->size() > kMaxSpooledListed) return InvalidArgument("register.spooled: too many entries");
    for (size_t i = 0; i < spooled->size(); ++i) {
      ASSIGN_OR_RETURN(JobAttempt item,
                       ParseJobAttempt((*spooled)[i], "register.spooled[" + std::to_string(i) + "]"));
      out.spooled.push_back(item);
    }
  }
  if (auto price = body.find("price"); price != body.end()) {
    ASSIGN_OR_RETURN(HostPrice parsed, ParseHostPrice(price->contains("per_hour") ? (*price)["per_hour"] : json(),
                                                      price->contains("currency") ? (*price)["currency"] : json(),
                                                      "register.price"));
    out.price = parsed;
  }
  return out;
}

StatusOr<HeartbeatRequest> ParseHeartbeat(const Message& message) {
  HeartbeatRequest out;
  auto running = message.body.find("running");
  if (running != message.body.end() && !running->is_null()) {
    ASSIGN_OR_RETURN(JobAttempt job, ParseJobAttempt(*running, "heartbeat.running"));
    out.running = job;
  }
  return out;
}

StatusOr<ResultReport> ParseResultReport(const Message& message) {
  ResultReport out;
  ASSIGN_OR_RETURN(out.job, ParseJobAttempt(message.body, "result"));
  out.result = &message.body["result"];
  return out;
}

StatusOr<RendezvousReport> ParseRendezvous(const Message& message) {
  RendezvousReport out;
  ASSIGN_OR_RETURN(out.job, ParseJobAttempt(message.body, "rendezvous"));
  const std::string& store = message.body["store"].get_ref<const std::string&>();
  const size_t colon = store.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= store.size() || store.size() > 300 ||
      store.size() - colon - 1 > 5 || store.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      std::stol(store.substr(colon + 1)) < 1 || std::stol(store.substr(colon + 1)) > 65535) {
    return InvalidArgument("rendezvous.store: must be \"HOST:PORT\" with a port in [1, 65535]");
  }
  out.store_host = store.substr(0, colon);
  out.store_port = std::stol(store.substr(colon + 1));
  return out;
}

StatusOr<GangRole> ParseGangRole(const json& gang) {
  if (!gang.is_object()) return InvalidArgument("job.gang: must be an object");
  GangRole out;
  const json rank = gang.value("rank", json());
  const json world = gang.value("world_size", json());
  if (!world.is_number_integer() || world.get<int64_t>() < 2 || world.get<int64_t>() > 4096) {
    return InvalidArgument("job.gang.world_size: must be an integer in [2, 4096]");
  }
  out.world_size = world.get<int64_t>();
  if (!rank.is_number_integer() || rank.get<int64_t>() < 0 || rank.get<int64_t>() >= out.world_size) {
    return InvalidArgument("job.gang.rank: must be an integer in [0, world_size)");
  }
  out.rank = rank.get<int64_t>();
  const json store = gang.value("store", json());
  if (out.rank > 0 && (!store.is_string() || store.get_ref<const std::string&>().empty())) {
    return InvalidArgument("job.gang.store: rank " + std::to_string(out.rank) + " needs rank 0's store");
  }
  if (store.is_string()) out.store = store.get<std::string>();
  return out;
}

StatusOr<ErrorReport> ParseErrorReport(const Message& message) {
  ErrorReport out;
  out.code = message.body["code"].get<std::string>();
  out.message = message.body["message"].get<std::string>();
  const bool names_job = message.body.contains("job_id") || message.body.contains("attempt");
  if (names_job) {
    ASSIGN_OR_RETURN(JobAttempt job, ParseJobAttempt(message.body, "error"));
    out.job = job;
  }
  return out;
}

StatusOr<SubmitRequest> ParseSubmit(const Message& message) {
  SubmitRequest out;
  out.sweep = message.body["sweep"];
  auto id = message.body.find("submission_id");
  if (id != message.body.end() && !id->is_null()) {
    if (!id->is_string() || id->get_ref<const std::string&>().empty() ||
        id->get_ref<const std::string&>().size() > kMaxSubmissionIdLength) {
      return InvalidArgument("submit.submission_id: must be a non-empty string of at most " +
                             std::to_string(kMaxSubmissionIdLength) + " characters");
    }
    out.submission_id = id->get<std::string>();
  }
  return out;
}

StatusOr<SweepRequest> ParseSweepRequest(const Message& message) {
  SweepRequest out;
  ASSIGN_OR_RETURN(out.sweep_id, PositiveId(message, "sweep_id"));
  return out;
}

StatusOr<ResultsRequest> ParseResults(const Message& message) {
  ResultsRequest out;
  ASSIGN_OR_RETURN(out.sweep_id, PositiveId(message, "sweep_id"));
  out.limit = kMaxReplyRows;
  auto limit = message.body.find("limit");
  if (limit != message.body.end()) {
    if (!limit->is_number_integer() || limit->get<int64_t>() < 1 ||
        limit->get<int64_t>() > kMaxReplyRows) {
      return InvalidArgument("results.limit: must be an integer from 1 to " +
                             std::to_string(kMaxReplyRows) + ", got " + Shown(*limit));
    }
    out.limit = static_cast<int>(limit->get<int64_t>());
  }
  return out;
}

StatusOr<QueryRequest> ParseQuery(const Message& message) {
  QueryRequest out;
  out.sql = message.body["sql"].get<std::string>();
  if (out.sql.size() > kMaxSqlLength) {
    return InvalidArgument("query.sql: longer than " + std::to_string(kMaxSqlLength) + " bytes");
  }
  return out;
}

StatusOr<CalibrateRequest> ParseCalibrate(const Message& message) {
  CalibrateRequest out;
  auto agents = message.body.find("agents");
  if (agents == message.body.end()) return out;
  for (size_t i = 0; i < agents->size(); ++i) {
    const json& name = (*agents)[i];
    if (!name.is_string() || !ValidAgentName(name.get<std::string>())) {
      return InvalidArgument("calibrate.agents[" + std::to_string(i) + "]: must be an agent name");
    }
    out.agents.push_back(name.get<std::string>());
  }
  return out;
}

StatusOr<BaselineResetRequest> ParseBaselineReset(const Message& message) {
  BaselineResetRequest out;
  const json& body = message.body;
  auto text = [&](const char* key, size_t max_length, std::string* into) -> Status {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return Status::Ok();
    if (!it->is_string() || it->get_ref<const std::string&>().size() > max_length) {
      return InvalidArgument(std::string("baseline_reset.") + key + ": must be a string of at most " +
                             std::to_string(max_length) + " characters, got " + Shown(*it));
    }
    *into = it->get<std::string>();
    return Status::Ok();
  };
  RETURN_IF_ERROR(text("host", kMaxAgentNameLength, &out.host));
  if (!out.host.empty() && !ValidAgentName(out.host)) {
    return InvalidArgument("baseline_reset.host: must be an agent name, got " + Shown(body["host"]));
  }
  RETURN_IF_ERROR(text("model", 128, &out.model));
  RETURN_IF_ERROR(text("note", 1024, &out.note));
  return out;
}

StatusOr<SetPriceRequest> ParseSetPrice(const Message& message) {
  const json& body = message.body;
  SetPriceRequest out;
  out.host = body["host"].get<std::string>();
  if (!ValidAgentName(out.host)) return InvalidArgument("set_price.host: must be an agent name, got " + Shown(body["host"]));
  ASSIGN_OR_RETURN(out.price, ParseHostPrice(body["per_hour"], body.contains("currency") ? body["currency"] : json(),
                                             "set_price"));
  return out;
}

StatusOr<ScheduleRequest> ParseSchedule(const Message& message) {
  const json& body = message.body;
  ScheduleRequest out;
  const std::string action = body["action"].get<std::string>();
  static const std::vector<std::pair<std::string, ScheduleRequest::Action>> actions = {
      {"add", ScheduleRequest::Action::kAdd},         {"list", ScheduleRequest::Action::kList},
      {"remove", ScheduleRequest::Action::kRemove},   {"run_now", ScheduleRequest::Action::kRunNow},
      {"history", ScheduleRequest::Action::kHistory}};
  auto known = std::find_if(actions.begin(), actions.end(), [&](const auto& a) { return a.first == action; });
  if (known == actions.end()) {
    return InvalidArgument("schedule.action: must be add, list, remove, run_now or history, got " +
                           Shown(body["action"]));
  }
  out.action = known->second;
  using Action = ScheduleRequest::Action;
  // A field of the wrong type is refused whatever the action, never ignored.
  auto text = [&](const char* key, size_t max_length, bool required, std::string* into) -> Status {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) {
      return required ? InvalidArgument(std::string("schedule.") + key + ": required by action " + action)
                      : Status::Ok();
    }
    if (!it->is_string() || it->get_ref<const std::string&>().empty() ||
        it->get_ref<const std::string&>().size() > max_length) {
      return InvalidArgument(std::string("schedule.") + key + ": must be a non-empty string of at most " +
                             std::to_string(max_length) + " characters, got " + Shown(*it));
    }
    *into = it->get<std::string>();
    return Status::Ok();
  };
  const bool named = out.action == Action::kAdd || out.action == Action::kRemove || out.action == Action::kRunNow;
  RETURN_IF_ERROR(text("name", kMaxAgentNameLength, named, &out.name));
  if (!out.name.empty() && !ValidAgentName(out.name)) {
    return InvalidArgument("schedule.name: letters, digits, '-', '_' and '.' only, got " + Shown(body["name"]));
  }
  const bool add = out.action == Action::kAdd;
  RETURN_IF_ERROR(text("cron", kMaxCronLength, add, &out.cron));
  RETURN_IF_ERROR(text("tz", kMaxTimeZoneLength, false, &out.tz));
  RETURN_IF_ERROR(text("submission_id", kMaxSubmissionIdLength, false, &out.submission_id));
  auto sweep = body.find("sweep");
  if (sweep != body.end() && !sweep->is_null()) {
    if (!sweep->is_object()) return InvalidArgument("schedule.sweep: must be an object, got " + Shown(*sweep));
    out.sweep = *sweep;
  } else if (add) {
    return InvalidArgument("schedule.sweep: required by action add");
  }
  std::string overlap = "skip";
  RETURN_IF_ERROR(text("overlap", 8, false, &overlap));
  if (overlap != "skip" && overlap != "queue") {
    return InvalidArgument("schedule.overlap: must be \"skip\" or \"queue\", got " + Shown(body["overlap"]));
  }
  out.overlap_queue = overlap == "queue";
  auto deadline = body.find("start_deadline_s");
  if (deadline != body.end() && !deadline->is_null()) {
    // From a second to a year: a firing later than that after its slot is no firing.
    if (!deadline->is_number() || !(deadline->get<double>() >= 1) || deadline->get<double>() > 3.2e7) {
      return InvalidArgument("schedule.start_deadline_s: must be a number of seconds from 1 to 3.2e7, got " +
                             Shown(*deadline));
    }
    out.start_deadline_s = deadline->get<double>();
  }
  out.limit = kMaxReplyRows;
  auto limit = body.find("limit");
  if (limit != body.end() && !limit->is_null()) {
    if (!limit->is_number_integer() || limit->get<int64_t>() < 1 || limit->get<int64_t>() > kMaxReplyRows) {
      return InvalidArgument("schedule.limit: must be an integer from 1 to " + std::to_string(kMaxReplyRows) +
                             ", got " + Shown(*limit));
    }
    out.limit = static_cast<int>(limit->get<int64_t>());
  }
  return out;
}

StatusOr<PruneRequest> ParsePrune(const Message& message) {
  PruneRequest out;
  out.samples_older_than_s = message.body.at("samples_older_than_s").get<double>();
  // Up to 1,000 years: beyond that SQLite's date arithmetic has nothing to say.
  if (!(out.samples_older_than_s >= 0) || out.samples_older_than_s > 3.2e10) {
    return InvalidArgument("prune.samples_older_than_s: must be from 0 to 3.2e10 seconds");
  }
  return out;
}

}  // namespace benchfleet
