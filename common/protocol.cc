#include "common/protocol.h"

#include <map>
#include <utility>

#include "common/limits.h"

namespace benchfleet {
namespace {

enum class Kind { kString, kInteger, kNumber, kObject, kArray, kBoolean, kAny };

struct Field {
  const char* name;
  Kind kind;
  bool required;
};

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kString:
      return "a string";
    case Kind::kInteger:
      return "an integer";
    case Kind::kNumber:
      return "a number";
    case Kind::kObject:
      return "an object";
    case Kind::kArray:
      return "an array";
    case Kind::kBoolean:
      return "a boolean";
    case Kind::kAny:
      return "any value";
  }
  return "?";
}

bool HasKind(const json& value, Kind kind) {
  switch (kind) {
    case Kind::kString:
      return value.is_string();
    case Kind::kInteger:
      return value.is_number_integer();
    case Kind::kNumber:
      return value.is_number();
    case Kind::kObject:
      return value.is_object();
    case Kind::kArray:
      return value.is_array();
    case Kind::kBoolean:
      return value.is_boolean();
    case Kind::kAny:
      return true;
  }
  return false;
}

// The field table mirrors schemas/protocol.md. Fields not listed are allowed (so a newer
// peer may add optional fields without breaking an older one) but ignored.
const std::vector<std::pair<std::string, std::vector<Field>>>& Schema() {
  static const auto* schema = new std::vector<std::pair<std::string, std::vector<Field>>>{
      {msg::kSubmit,
       {{"request_id", Kind::kAny, true},
        {"sweep", Kind::kObject, true},
        {"submission_id", Kind::kString, false}}},
      {msg::kStatus, {{"request_id", Kind::kAny, true}, {"sweep_id", Kind::kInteger, false}}},
      {msg::kCancel, {{"request_id", Kind::kAny, true}, {"sweep_id", Kind::kInteger, true}}},
      {msg::kResults,
       {{"request_id", Kind::kAny, true},
        {"sweep_id", Kind::kInteger, false},
        {"limit", Kind::kInteger, false}}},
      {msg::kQuery, {{"request_id", Kind::kAny, true}, {"sql", Kind::kString, true}}},
      {msg::kCalibrate, {{"request_id", Kind::kAny, true}, {"agents", Kind::kArray, false}}},
      {msg::kPrune,
       {{"request_id", Kind::kAny, true}, {"samples_older_than_s", Kind::kNumber, true}}},
      {msg::kBaselineReset,
       {{"request_id", Kind::kAny, true},
        {"host", Kind::kString, false},
        {"model", Kind::kString, false},
        {"note", Kind::kString, false}}},
      {msg::kSetPrice,
       {{"request_id", Kind::kAny, true},
        {"host", Kind::kString, true},
        {"per_hour", Kind::kNumber, true},
        {"currency", Kind::kString, false}}},
      {msg::kSchedule,
       {{"request_id", Kind::kAny, true},
        {"action", Kind::kString, true},
        {"name", Kind::kString, false},
        {"cron", Kind::kString, false},
        {"tz", Kind::kString, false},
        {"sweep", Kind::kObject, false},
        {"overlap", Kind::kString, false},
        {"start_deadline_s", Kind::kNumber, false},
        {"limit", Kind::kInteger, false},
        {"submission_id", Kind::kString, false}}},
      {msg::kSubmitted,
       {{"request_id", Kind::kAny, true},
        {"sweep_id", Kind::kInteger, true},
        {"jobs", Kind::kInteger, true},
        {"agents", Kind::kArray, true},
        {"existing", Kind::kBoolean, false},
        {"excluded", Kind::kInteger, false},
        {"skipped", Kind::kObject, false}}},
      {msg::kStatusReply,
       {{"request_id", Kind::kAny, true},
        {"sweeps", Kind::kArray, true},
        {"agents", Kind::kArray, true},
        {"counters", Kind::kObject, true},
        {"waiting", Kind::kArray, true},
        {"departed", Kind::kArray, true}}},
      {msg::kCancelled,
       {{"request_id", Kind::kAny, true},
        {"sweep_id", Kind::kInteger, true},
        {"jobs_cancelled", Kind::kInteger, true}}},
      {msg::kPruned,
       {{"request_id", Kind::kAny, true},
        {"results_pruned", Kind::kInteger, true},
        {"bytes_before", Kind::kInteger, true},
        {"bytes_after", Kind::kInteger, true}}},
      {msg::kSchedules, {{"request_id", Kind::kAny, true}, {"schedules", Kind::kArray, true}}},
      {msg::kRows,
       {{"request_id", Kind::kAny, true},
        {"columns", Kind::kArray, true},
        {"rows", Kind::kArray, true},
        {"truncated", Kind::kBoolean, true}}},
      {msg::kModelUpload,
       {{"request_id", Kind::kAny, true},
        {"sha256", Kind::kString, true},
        {"size", Kind::kInteger, true},
        {"offset", Kind::kInteger, true},
        {"data", Kind::kString, true}}},
      {msg::kModelStored,
       {{"request_id", Kind::kAny, true},
        {"sha256", Kind::kString, true},
        {"size", Kind::kInteger, true},
        {"next_offset", Kind::kInteger, true},
        {"stored", Kind::kBoolean, true}}},
      {msg::kRegister,
       {{"agent", Kind::kString, true},
        {"tags", Kind::kArray, true},
        {"capabilities", Kind::kObject, true},
        {"calibrate", Kind::kBoolean, false},
        {"spooled", Kind::kArray, false},
        {"price", Kind::kObject, false},
        {"running", Kind::kAny, false},  // null or {job_id, attempt}
        {"instance", Kind::kString, false}}},
      {msg::kHeartbeat, {{"running", Kind::kAny, false}}},  // null or {job_id, attempt}
      {msg::kResult,
       {{"job_id", Kind::kInteger, true},
        {"attempt", Kind::kInteger, true},
        {"result", Kind::kObject, true}}},
      {msg::kRendezvous,
       {{"job_id", Kind::kInteger, true},
        {"attempt", Kind::kInteger, true},
        {"store", Kind::kString, true}}},
      {msg::kRegistered,
       {{"agent", Kind::kString, true},
        {"heartbeat_ms", Kind::kInteger, true},
        {"liveness", Kind::kInteger, true}}},
      {msg::kJob,
       {{"job_id", Kind::kInteger, true},
        {"attempt", Kind::kInteger, true},
        {"spec", Kind::kObject, true},
        {"needs", Kind::kObject, false},  // JobNeeds; derived from spec when absent
        {"timeout_s", Kind::kNumber, true},
        {"committed_at_us", Kind::kInteger, false},
        {"gang", Kind::kObject, false},      // {rank, world_size, store}: one rank of a spread gang
        {"versus", Kind::kObject, false}}},  // {b, pairing, first, pair}: side A of a pair
      {msg::kStop,
       {{"job_id", Kind::kInteger, true},
        {"attempt", Kind::kInteger, true},
        {"reason", Kind::kString, true}}},
      {msg::kAck,
       {{"job_id", Kind::kInteger, true},
        {"attempt", Kind::kInteger, true},
        {"outcome", Kind::kString, true},
        {"reason", Kind::kString, false}}},
      {msg::kModelFetch, {{"sha256", Kind::kString, true}, {"offset", Kind::kInteger, true}}},
      {msg::kLeave, {{"reason", Kind::kString, true}, {"running", Kind::kAny, false}}},
      {msg::kLeft, {}},
      {msg::kModelChunk,
       {{"sha256", Kind::kString, true},
        {"offset", Kind::kInteger, true},
        {"size", Kind::kInteger, true},
        {"data", Kind::kString, true},
        {"error", Kind::kString, false}}},
      {msg::kError,
       {{"code", Kind::kString, true},
        {"message", Kind::kString, true},
        {"request_id", Kind::kAny, false},
        {"job_id", Kind::kInteger, false},
        {"attempt", Kind::kInteger, false}}},
  };
  return *schema;
}

const std::vector<Field>* FieldsOf(const std::string& type) {
  for (const auto& [name, fields] : Schema()) {
    if (name == type) return &fields;
  }
  return nullptr;
}

}  // namespace

std::vector<MessageField> MessageFields(const std::string& type) {
  std::vector<MessageField> out;
  if (const std::vector<Field>* fields = FieldsOf(type)) {
    for (const Field& field : *fields)
      out.push_back({field.name, KindName(field.kind), field.required});
  }
  return out;
}

const std::vector<std::string>& AllMessageTypes() {
  static const auto* types = [] {
    auto* t = new std::vector<std::string>;
    for (const auto& entry : Schema()) t->push_back(entry.first);
    return t;
  }();
  return *types;
}

Message MakeMessage(const std::string& type, json fields) {
  json body = fields.is_object() ? std::move(fields) : json::object();
  body["v"] = kProtocolVersion;
  body["type"] = type;
  return Message{type, std::move(body)};
}

std::string Encode(const Message& message) {
  // Replace invalid UTF-8 instead of throwing: a worker's stderr tail may hold anything.
  return message.body.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Deepest nesting of arrays and objects, found by a byte scan that skips strings. A
// message nested deeper than any real one is refused before the (costly) parse, so a
// megabyte of '[' costs a scan, not a parse.
size_t NestingDepth(const std::string& text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

StatusOr<Message> Decode(const std::string& frame, json* request_id) {
  if (frame.empty()) return InvalidArgument("empty frame");
  if (NestingDepth(frame) > kMaxJsonDepth) {
    return InvalidArgument("JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  if (static_cast<int64_t>(frame.size()) > kMaxMessageBytes) {
    return InvalidArgument("message of " + std::to_string(frame.size()) + " bytes exceeds " +
                           std::to_string(kMaxMessageBytes));
  }
  json body = json::parse(frame, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return InvalidArgument("frame is not valid JSON");
  if (!body.is_object()) return InvalidArgument("message must be a JSON object");
  if (request_id != nullptr) {
    auto it = body.find("request_id");
    *request_id = it == body.end() ? json() : *it;
  }
  auto v = body.find("v");
  if (v == body.end() || !v->is_number_integer()) {
    return InvalidArgument("field \"v\" (protocol version) missing or not an integer");
  }
  if (v->get<int64_t>() != kProtocolVersion) {
    return InvalidArgument("unsupported protocol version " + v->dump() + "; this peer speaks " +
                           std::to_string(kProtocolVersion));
  }
  auto type = body.find("type");
  if (type == body.end() || !type->is_string()) {
    return InvalidArgument("field \"type\" missing or not a string");
  }
  std::string type_name = type->get<std::string>();
  const std::vector<Field>* fields = FieldsOf(type_name);
  if (fields == nullptr) {
    return InvalidArgument("unknown message type \"" + type_name.substr(0, 64) + "\"");
  }
  for (const Field& field : *fields) {
    auto it = body.find(field.name);
    if (it == body.end()) {
      if (field.required) {
        return InvalidArgument(type_name + ": missing field \"" + field.name + "\"");
      }
      continue;
    }
    if (!HasKind(*it, field.kind)) {
      return InvalidArgument(type_name + ": field \"" + field.name + "\" must be " +
                             KindName(field.kind));
    }
  }
  return Message{std::move(type_name), std::move(body)};
}

Message MakeError(const Status& status, const json& request_id) {
  json fields = {{"code", StatusCodeName(status.code())}, {"message", status.message()}};
  if (!request_id.is_null()) fields["request_id"] = request_id;
  return MakeMessage(msg::kError, std::move(fields));
}

std::string ShownValue(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 40) + "..." : text;
}

}  // namespace benchfleet
