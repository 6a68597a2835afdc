// Messages on every socket, as specified in schemas/protocol.md (the single source).
//
// Every message is one ZeroMQ frame holding one JSON object
//   {"v": 1, "type": "<type>", ...fields}
// sent from a DEALER (agent, client) to a ROUTER (coordinator), which sees it behind the
// peer's routing-id frame. Decode() checks version, type and the fields' presence and
// JSON types; it never throws and never aborts on peer input.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace benchfleet {

using nlohmann::json;

namespace msg {
// client -> coordinator
inline constexpr const char* kSubmit = "submit";
inline constexpr const char* kStatus = "status";
inline constexpr const char* kCancel = "cancel";
inline constexpr const char* kResults = "results";
inline constexpr const char* kQuery = "query";
inline constexpr const char* kCalibrate = "calibrate";
inline constexpr const char* kPrune = "prune";
inline constexpr const char* kSchedule = "schedule";
inline constexpr const char* kBaselineReset = "baseline_reset";
inline constexpr const char* kSetPrice = "set_price";
inline constexpr const char* kModelUpload = "model_upload";  // one chunk of a user's model file
// coordinator -> client
inline constexpr const char* kSubmitted = "submitted";
inline constexpr const char* kStatusReply = "status_reply";
inline constexpr const char* kCancelled = "cancelled";
inline constexpr const char* kRows = "rows";
inline constexpr const char* kPruned = "pruned";
inline constexpr const char* kSchedules = "schedules";
inline constexpr const char* kModelStored = "model_stored";
// agent -> coordinator
inline constexpr const char* kRegister = "register";
inline constexpr const char* kHeartbeat = "heartbeat";  // both directions
inline constexpr const char* kResult = "result";
inline constexpr const char* kRendezvous = "rendezvous";   // rank 0's store of a spread gang
inline constexpr const char* kModelFetch = "model_fetch";  // a chunk of a stored model, by sha256
inline constexpr const char* kLeave = "leave";  // the agent goes: idle, its jobs done, or stopped
// coordinator -> agent
inline constexpr const char* kRegistered = "registered";
inline constexpr const char* kJob = "job";
inline constexpr const char* kAck = "ack";
inline constexpr const char* kStop = "stop";  // a gang's job ended elsewhere: kill its worker
inline constexpr const char* kModelChunk = "model_chunk";
inline constexpr const char* kLeft = "left";  // the answer to `leave`: the agent may close
// any direction
inline constexpr const char* kError = "error";
}  // namespace msg

struct Message {
  std::string type;
  json body;  // the whole object, "v" and "type" included
};

// A top-level field of a message type, as the decoder checks it and protocol.md lists
// it: `kind` is "a string", "an integer", "a number", "an object", "an array",
// "a boolean" or "any value".
struct MessageField {
  std::string name;
  std::string kind;
  bool required;
};
std::vector<MessageField> MessageFields(const std::string& type);

// Every message type the protocol defines, in protocol.md's order.
const std::vector<std::string>& AllMessageTypes();

// Builds {"v": kProtocolVersion, "type": type} merged with `fields`.
Message MakeMessage(const std::string& type, json fields = json::object());

std::string Encode(const Message& message);

// Messages and sweep files nested deeper than this are refused unparsed.
inline constexpr size_t kMaxJsonDepth = 64;

// Deepest nesting of arrays/objects in a JSON text (strings skipped).
size_t NestingDepth(const std::string& text);

// Parses and validates one frame. Errors name the offending field. Once the frame has
// parsed as a JSON object, its `request_id` (null without one) goes to `*request_id`,
// so that the error refusing a client's request for a missing or wrong-typed field
// still echoes it.
StatusOr<Message> Decode(const std::string& frame, json* request_id = nullptr);

// A peer's value as an error quotes it: compact JSON, cut at 40 characters ("...").
std::string ShownValue(const json& value);

// Error reply, with the request_id echoed when the request had one.
Message MakeError(const Status& status, const json& request_id = nullptr);

}  // namespace benchfleet
