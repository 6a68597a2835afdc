// Every message between an agent and the coordinator (schemas/protocol.md, "Agent ↔
// coordinator"), as one struct each, used by the sender and the receiver alike:
// ToJson() gives the whole message body ({"v", "type", ...fields}); FromJson() parses a
// body that Decode() has checked (envelope and top-level field types) and checks
// everything nested and every range, so that no handler on either side reads raw peer
// JSON. Errors name the field ("heartbeat.running: must be null or {job_id, attempt}").
// Both directions are tested against the golden examples in schemas/golden/.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/capabilities.h"
#include "common/job_needs.h"
#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

// Longest agent name accepted; names are letters, digits, '-', '_' and '.'.
inline constexpr size_t kMaxAgentNameLength = 128;

// True for a valid agent name (see kMaxAgentNameLength).
bool ValidAgentName(const std::string& name);

struct JobAttempt {
  int64_t job_id = 0;
  int attempt = 0;
  nlohmann::json ToJson() const { return {{"job_id", job_id}, {"attempt", attempt}}; }
};

// A typed message as the Message the transport sends.
template <typename T>
Message ToMessage(const T& typed) {
  return Message{T::kType, typed.ToJson()};
}

// What an hour of a host costs (docs/results.md, Cost).
struct HostPrice {
  double per_hour = 0;   // in [0, kMaxPricePerHour]
  std::string currency;  // three capital letters (ISO 4217)
};
// `per_hour` and `currency` of `value` (`context` names it in errors); a missing currency
// is kDefaultCurrency.
StatusOr<HostPrice> ParseHostPrice(const nlohmann::json& per_hour, const nlohmann::json& currency,
                                   const std::string& context);

// ---- agent -> coordinator ----

struct RegisterRequest {
  static constexpr const char* kType = msg::kRegister;
  std::string agent;
  std::vector<std::string> tags;
  Capabilities capabilities;  // FromJson also keeps the document received, in capabilities.raw
  bool calibrate = false;
  std::vector<JobAttempt> spooled;
  std::optional<HostPrice> price;  // the agent's --price-per-hour
  // The job the agent runs while it registers again (it reconnected): its lease lives on,
  // as a heartbeat naming it would keep it.
  std::optional<JobAttempt> running;
  // A random id of the agent process (16 hex digits; empty: not sent). A registration
  // on a new connection with the instance of the live agent of that name is the same
  // agent reconnecting: it takes the session over instead of being refused.
  std::string instance;
  nlohmann::json ToJson() const;
  static StatusOr<RegisterRequest> FromJson(const nlohmann::json& body);
};

// Both directions: the agent's names the job it runs (renewing its lease); the
// coordinator's carries nothing.
struct Heartbeat {
  static constexpr const char* kType = msg::kHeartbeat;
  std::optional<JobAttempt> running;
  bool from_agent = true;  // an agent's always says `running`, null when idle
  nlohmann::json ToJson() const;
  static StatusOr<Heartbeat> FromJson(const nlohmann::json& body);
};

// The envelope of a result; the result itself is parsed by ParseWorkerResult, after the
// envelope is known, so that even a result with bad contents can be answered by its ids.
struct ResultReport {
  static constexpr const char* kType = msg::kResult;
  JobAttempt job;
  const nlohmann::json* result = nullptr;  // points into the message it was parsed from
  static StatusOr<ResultReport> FromJson(const nlohmann::json& body);
  // The sender's side: the result moved in, not copied (it holds every sample).
  static Message Make(const JobAttempt& job, nlohmann::json result);
};

// Rank 0's agent of a spread gang names the store it started.
struct RendezvousReport {
  static constexpr const char* kType = msg::kRendezvous;
  JobAttempt job;
  std::string store_host;  // as the ranks will dial it
  int64_t store_port = 0;
  std::string store() const { return store_host + ":" + std::to_string(store_port); }
  nlohmann::json ToJson() const;
  static StatusOr<RendezvousReport> FromJson(const nlohmann::json& body);
};

// An agent that goes (idle for --exit-when-idle, its --max-jobs done, or stopped by a
// signal) says so, so that the coordinator drops it at once and takes back what it
// handed to it without costing an attempt, all but `running`: the job whose worker it
// stopped on the way out, whose attempt is lost as any stopped agent's.
// How long a leaving agent waits for `left` before it closes its connection anyway (a
// coordinator that is down or far behind): the coordinator then takes it for gone when it
// notices, as any agent that went away without a word.
inline constexpr int kLeaveAnswerMs = 2000;
struct LeaveNotice {
  static constexpr const char* kType = msg::kLeave;
  std::string reason;  // for the coordinator's log and status_reply.departed
  std::optional<JobAttempt> running;
  nlohmann::json ToJson() const;
  static StatusOr<LeaveNotice> FromJson(const nlohmann::json& body);
};

// Any direction. Between agent and coordinator an error may name a job: an agent
// refusing an offer, the coordinator rejecting a result.
struct ErrorReport {
  static constexpr const char* kType = msg::kError;
  std::string code;  // StatusCodeName
  std::string message;
  std::optional<JobAttempt> job;
  nlohmann::json request_id;  // answering a client's request: its id (null: none)
  nlohmann::json ToJson() const;
  static StatusOr<ErrorReport> FromJson(const nlohmann::json& body);
};

// ---- coordinator -> agent ----

// The answer to `leave`: the coordinator has taken the agent out, and back every offer
// that crossed the leave. The agent closes its connection only then (or after
// kLeaveAnswerMs without it), so that its leave is never read after the coordinator saw
// the connection close and took the agent for gone.
struct LeftReply {
  static constexpr const char* kType = msg::kLeft;
  nlohmann::json ToJson() const { return MakeMessage(kType).body; }
  static StatusOr<LeftReply> FromJson(const nlohmann::json&) { return LeftReply{}; }
};

struct RegisteredReply {
  static constexpr const char* kType = msg::kRegistered;
  std::string agent;
  int heartbeat_ms = 0;  // >= 1
  int liveness = 0;      // >= 1
  nlohmann::json ToJson() const;
  static StatusOr<RegisteredReply> FromJson(const nlohmann::json& body);
};

// One rank of a spread gang, as a job offer's `gang` names it: rank 0 gets no store (its
// agent starts one and reports it with `rendezvous`), the others get rank 0's.
struct GangRole {
  int64_t rank = 0;
  int64_t world_size = 1;
  std::string store;  // "HOST:PORT"; empty for rank 0
  nlohmann::json ToJson() const;
};
StatusOr<GangRole> ParseGangRole(const nlohmann::json& gang);

// Side A's offer of a pair (schemas/sweep.md, Versus; schemas/protocol.md, job): side B's
// job, and how this hand-out runs the two sides.
struct PairOffer {
  int64_t b_job_id = 0;
  nlohmann::json b_spec = nlohmann::json::object();  // checked by the worker (JobSpec)
  JobNeeds b_needs;                                  // which of the agent's workers runs side B
  std::string pairing;  // "interleaved", "duet", "in_process" (KnownPairings)
  std::string first;    // "a" or "b": which side runs first, takes the first CPUs, or
                        // times the first block
  int64_t pair = 0;     // 0, 1, ...: the pairs side A already has
  nlohmann::json ToJson() const;
};
StatusOr<PairOffer> ParsePairOffer(const nlohmann::json& versus);

// The job offer.
struct JobOffer {
  static constexpr const char* kType = msg::kJob;
  JobAttempt job;
  nlohmann::json spec = nlohmann::json::object();  // checked by the worker (JobSpec)
  // What the agent starts for it (the processes, replicas or ranks). Sent as computed
  // when the job was stored; an offer without `needs` gets it from `spec` (NeedsOfJobJson).
  JobNeeds needs;
  double timeout_s = 0;  // > 0
  std::optional<int64_t> committed_at_us;
  std::optional<GangRole> gang;
  std::optional<PairOffer> versus;  // side A of a pair: side B and how they run
  nlohmann::json ToJson() const;
  static StatusOr<JobOffer> FromJson(const nlohmann::json& body);
};

struct StopOrder {
  static constexpr const char* kType = msg::kStop;
  JobAttempt job;
  std::string reason;
  nlohmann::json ToJson() const;
  static StatusOr<StopOrder> FromJson(const nlohmann::json& body);
};

struct ResultAck {
  static constexpr const char* kType = msg::kAck;
  enum class Outcome { kStored, kDuplicate, kStale, kRejected };
  JobAttempt job;
  Outcome outcome = Outcome::kStored;
  std::string reason;  // with kRejected: why, naming the field
  static const char* OutcomeName(Outcome outcome);
  nlohmann::json ToJson() const;
  static StatusOr<ResultAck> FromJson(const nlohmann::json& body);
};

}  // namespace benchfleet
