#include "coordinator/coordinator.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "common/log.h"
#include "common/transport.h"
#include "coordinator/allow_list.h"

namespace benchfleet {
namespace {

// Most recent sweeps shown by a status request without a sweep id.
constexpr int kStatusSweeps = 20;
// Queued jobs examined per idle agent and dispatch round.
constexpr int kDispatchScan = 256;
// Messages handled per socket before the loop looks at timers again, so a flood on one
// socket cannot starve heartbeats and the other socket.
constexpr int kMaxMessagesPerRound = 100;
// Longest agent name accepted.
constexpr size_t kMaxAgentName = 128;

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out) return Unavailable("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Unavailable("cannot rename " + tmp);
  return Status::Ok();
}

bool ValidAgentName(const std::string& name) {
  if (name.empty() || name.size() > kMaxAgentName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

json RowsToJson(const Rows& rows, const json& request_id) {
  return {{"request_id", request_id},
          {"columns", rows.columns},
          {"rows", rows.rows},
          {"truncated", rows.truncated}};
}

}  // namespace

json CoordinatorCounters::ToJson() const {
  return {{"malformed_messages", malformed_messages},
          {"unknown_peers", unknown_peers},
          {"results_stored", results_stored},
          {"duplicate_results", duplicate_results},
          {"stale_results", stale_results},
          {"failed_jobs", failed_jobs},
          {"requeued_jobs", requeued_jobs},
          {"send_failures", send_failures},
          {"store_errors", store_errors}};
}

Coordinator::Coordinator(CoordinatorOptions options) : options_(std::move(options)) {}
Coordinator::~Coordinator() = default;

StatusOr<std::unique_ptr<CurveKeyPair>> Coordinator::SecurityPolicy() const {
  if (options_.curve_key_path.empty()) {
    if (!options_.allow_list_path.empty()) {
      return InvalidArgument("--allow needs --curve-key (the coordinator's own key pair)");
    }
    for (const std::string& endpoint : {options_.agents_endpoint, options_.clients_endpoint}) {
      if (!IsLoopbackEndpoint(endpoint) && !options_.insecure) {
        return FailedPrecondition(
            "binding " + endpoint + " beyond loopback needs CURVE: give --curve-key and --allow "
            "(make keys with benchfleet keygen), or --insecure to let anyone in");
      }
    }
    return std::unique_ptr<CurveKeyPair>();
  }
  if (!CurveAvailable()) {
    return FailedPrecondition("this libzmq was built without CURVE support; cannot serve securely");
  }
  if (options_.allow_list_path.empty()) {
    return InvalidArgument("--curve-key needs --allow (the public keys of agents and clients)");
  }
  ASSIGN_OR_RETURN(CurveKeyPair pair, ReadCurveKeyPair(options_.curve_key_path));
  return std::make_unique<CurveKeyPair>(pair);
}

Status Coordinator::Start() {
  ASSIGN_OR_RETURN(auto curve, SecurityPolicy());
  ASSIGN_OR_RETURN(store_, Store::Open(options_.db_path));
  if (curve) {
    // The ZAP handler must be bound before the first handshake can arrive.
    ASSIGN_OR_RETURN(zap_, ZapHandler::Start(context_, options_.allow_list_path));
  }
  std::string agents_bound, clients_bound;
  ASSIGN_OR_RETURN(auto agents,
                   BindRouter(context_, options_.agents_endpoint, &agents_bound, curve.get()));
  ASSIGN_OR_RETURN(auto clients,
                   BindRouter(context_, options_.clients_endpoint, &clients_bound, curve.get()));
  agents_socket_ = std::make_unique<zmq::socket_t>(std::move(agents));
  clients_socket_ = std::make_unique<zmq::socket_t>(std::move(clients));
  RecoverLeases();
  LOG_INFO("serving agents on " << agents_bound << ", clients on " << clients_bound << ", store "
                                << options_.db_path << " (schema v" << store_->SchemaVersion()
                                << ")" << (curve ? ", CURVE on" : ", CURVE off"));
  if (!options_.ready_file.empty()) {
    json ready = {{"agents", agents_bound}, {"clients", clients_bound}, {"pid", getpid()}};
    RETURN_IF_ERROR(WriteFileAtomically(options_.ready_file, ready.dump()));
  }
  next_heartbeat_ = MonoNow();
  return Status::Ok();
}

Status Coordinator::Run(const std::atomic<bool>* stop, std::atomic<bool>* reload) {
  while (!stop->load()) {
    if (reload != nullptr && reload->exchange(false) && zap_) {
      Status reloaded = zap_->Reload();
      if (!reloaded.ok()) LOG_ERROR("allow-list not reloaded, the old one stays: " << reloaded.message());
    }
    // CURVE handshakes are vetted on the ZAP handler's own thread, not here.
    auto readable = PollReadable({agents_socket_.get(), clients_socket_.get()}, kCoordinatorTickMs);
    for (int i = 0; readable[0] && i < kMaxMessagesPerRound; ++i) {
      auto frames = ReceiveFrames(*agents_socket_);
      if (!frames.ok() || !frames->has_value()) break;
      HandleAgent(**frames);
    }
    for (int i = 0; readable[1] && i < kMaxMessagesPerRound; ++i) {
      auto frames = ReceiveFrames(*clients_socket_);
      if (!frames.ok() || !frames->has_value()) break;
      HandleClient(**frames);
    }
    // An agent is silent only if nothing of it waits in our own queue: after a slow
    // store operation (a locked database) the input is drained before anyone expires.
    // (A flood that never lets the queue empty cannot postpone expiry past one window.)
    MonoTime now = MonoNow();
    if (!PollReadable({agents_socket_.get()}, 0)[0] || now - last_expiry_ > LivenessWindow()) {
      ExpireSilentAgentsAndLeases();
      last_expiry_ = now;
    }
    Dispatch();
    SendHeartbeats();
  }
  LOG_INFO("stopping");
  return Status::Ok();
}

// ---- clients ----

void Coordinator::HandleClient(const Frames& frames) {
  if (frames.size() != 2) {
    ++counters_.malformed_messages;
    if (!frames.empty()) {
      (void)SendMessageTo(*clients_socket_, frames[0],
                          MakeError(InvalidArgument("expected one frame per message, got " +
                                                    std::to_string(frames.size() - 1))));
    }
    return;
  }
  auto decoded = Decode(frames[1]);
  Message reply;
  if (!decoded.ok()) {
    ++counters_.malformed_messages;
    reply = MakeError(decoded.status());
  } else {
    const json& body = decoded->body;
    const std::string& type = decoded->type;
    if (type == msg::kSubmit) {
      reply = Submit(body);
    } else if (type == msg::kStatus) {
      reply = StatusReply(body);
    } else if (type == msg::kCancel) {
      reply = Cancel(body);
    } else if (type == msg::kResults) {
      reply = ResultsReply(body);
    } else if (type == msg::kQuery) {
      reply = QueryReply(body);
    } else if (type == msg::kCalibrate) {
      reply = Calibrate(body);
    } else {
      ++counters_.malformed_messages;
      reply = MakeError(InvalidArgument("\"" + type + "\" is not a client request"),
                        body.value("request_id", json()));
    }
  }
  Status sent = SendMessageTo(*clients_socket_, frames[0], reply);
  if (!sent.ok()) {
    ++counters_.send_failures;
    LOG_WARN("reply to client lost: " << sent.message());
  }
}

Message Coordinator::Submit(const json& request) {
  const json& request_id = request["request_id"];
  auto sweep = ParseSweep(request["sweep"]);
  if (!sweep.ok()) return MakeError(sweep.status(), request_id);

  std::vector<std::string> pinned;
  if (sweep->placement == Placement::kEach) {
    for (Agent* agent : registry_.All()) {
      if (AgentMatches(sweep->select, agent->description))
        pinned.push_back(agent->description.name);
    }
    std::sort(pinned.begin(), pinned.end());
    if (pinned.empty()) {
      return MakeError(FailedPrecondition("no registered agent matches select " +
                                          sweep->select.dump() + "; nothing was enqueued"),
                       request_id);
    }
  }
  int64_t jobs = 0;
  auto sweep_id = store_->CreateSweep(*sweep, pinned, &jobs);
  if (!sweep_id.ok()) {
    ++counters_.store_errors;
    LOG_ERROR("cannot store sweep \"" << sweep->name << "\": " << sweep_id.status().message());
    return MakeError(Unavailable("the coordinator could not store the sweep (" +
                                 sweep_id.status().message() + "); nothing was enqueued"),
                     request_id);
  }
  LOG_INFO("sweep " << *sweep_id << " \"" << sweep->name << "\": " << jobs << " jobs");
  Dispatch();
  return MakeMessage(
      msg::kSubmitted,
      {{"request_id", request_id}, {"sweep_id", *sweep_id}, {"jobs", jobs}, {"agents", pinned}});
}

Message Coordinator::StatusReply(const json& request) {
  const json& request_id = request["request_id"];
  std::optional<int64_t> sweep_id;
  if (request.contains("sweep_id")) sweep_id = request["sweep_id"].get<int64_t>();
  auto sweeps = store_->SweepStatus(sweep_id, kStatusSweeps);
  if (!sweeps.ok()) return MakeError(sweeps.status(), request_id);
  json agents = json::array();
  MonoTime now = MonoNow();
  for (Agent* agent : registry_.All()) {
    json job_id = nullptr;
    for (const auto& [id, lease] : registry_.leases()) {
      if (lease.agent == agent->description.name) job_id = id;
    }
    agents.push_back(
        {{"agent", agent->description.name},
         {"state", job_id.is_null() ? "idle" : "busy"},
         {"job_id", job_id},
         {"machine_id", agent->machine_id},
         {"tags", agent->description.tags},
         {"last_seen_ms_ago", std::chrono::duration_cast<Millis>(now - agent->last_seen).count()}});
  }
  return MakeMessage(msg::kStatusReply, {{"request_id", request_id},
                                         {"sweeps", *sweeps},
                                         {"agents", agents},
                                         {"counters", counters_.ToJson()}});
}

Message Coordinator::Cancel(const json& request) {
  const json& request_id = request["request_id"];
  int64_t sweep_id = request["sweep_id"];
  auto cancelled = store_->CancelSweep(sweep_id);
  if (!cancelled.ok()) return MakeError(cancelled.status(), request_id);
  LOG_INFO("sweep " << sweep_id << " cancelled: " << *cancelled << " queued jobs dropped");
  return MakeMessage(
      msg::kCancelled,
      {{"request_id", request_id}, {"sweep_id", sweep_id}, {"jobs_cancelled", *cancelled}});
}

Message Coordinator::ResultsReply(const json& request) {
  const json& request_id = request["request_id"];
  std::optional<int64_t> sweep_id;
  if (request.contains("sweep_id")) sweep_id = request["sweep_id"].get<int64_t>();
  int limit = kMaxReplyRows;
  if (request.contains("limit")) {
    limit =
        static_cast<int>(std::clamp<int64_t>(request["limit"].get<int64_t>(), 1, kMaxReplyRows));
  }
  auto rows = store_->ResultSummary(sweep_id, limit);
  if (!rows.ok()) return MakeError(rows.status(), request_id);
  return MakeMessage(msg::kRows, RowsToJson(*rows, request_id));
}

Message Coordinator::QueryReply(const json& request) {
  const json& request_id = request["request_id"];
  auto rows = store_->Query(request["sql"].get<std::string>(), kMaxReplyRows);
  if (!rows.ok()) return MakeError(rows.status(), request_id);
  return MakeMessage(msg::kRows, RowsToJson(*rows, request_id));
}

Message Coordinator::Calibrate(const json& request) {
  const json& request_id = request["request_id"];
  std::vector<std::string> names;
  std::vector<std::string> wanted;
  for (const json& name : request.value("agents", json::array())) {
    if (!name.is_string()) return MakeError(InvalidArgument("agents: must be names"), request_id);
    wanted.push_back(name);
  }
  for (Agent* agent : registry_.All()) {
    const std::string& name = agent->description.name;
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end()) {
      names.push_back(name);
    }
  }
  for (const std::string& name : wanted) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return MakeError(NotFound("no registered agent named \"" + name + "\""), request_id);
    }
  }
  if (names.empty()) return MakeError(FailedPrecondition("no agent is registered"), request_id);
  std::sort(names.begin(), names.end());
  auto sweep_id = store_->CreateCalibration(names, kCalibrationTimeoutS);
  if (!sweep_id.ok()) {
    ++counters_.store_errors;
    return MakeError(Unavailable("cannot store the calibration: " + sweep_id.status().message()),
                     request_id);
  }
  Dispatch();
  return MakeMessage(msg::kSubmitted, {{"request_id", request_id},
                                       {"sweep_id", *sweep_id},
                                       {"jobs", names.size()},
                                       {"agents", names}});
}

// ---- agents ----

void Coordinator::ReplyToAgent(const std::string& routing_id, const Message& message) {
  Status sent = SendMessageTo(*agents_socket_, routing_id, message);
  if (!sent.ok()) {
    ++counters_.send_failures;
    LOG_WARN("message " << message.type << " to agent peer lost: " << sent.message());
  }
}

void Coordinator::HandleAgent(const Frames& frames) {
  if (frames.size() != 2) {
    ++counters_.malformed_messages;
    if (!frames.empty()) {
      ReplyToAgent(frames[0], MakeError(InvalidArgument("expected one frame per message, got " +
                                                        std::to_string(frames.size() - 1))));
    }
    return;
  }
  const std::string& routing_id = frames[0];
  auto decoded = Decode(frames[1]);
  if (!decoded.ok()) {
    ++counters_.malformed_messages;
    // Logged sparingly: a flood of garbage must not become a flood of log lines.
    if (counters_.malformed_messages <= 10 || counters_.malformed_messages % 1000 == 0) {
      LOG_WARN("malformed message from an agent peer (" << counters_.malformed_messages
                                                         << " so far): " << decoded.status().message());
    }
    ReplyToAgent(routing_id, MakeError(decoded.status()));
    return;
  }
  const std::string& type = decoded->type;
  const json& body = decoded->body;
  if (type == msg::kRegister) {
    Register(routing_id, body);
    return;
  }
  Agent* agent = registry_.FindByRoutingId(routing_id);
  if (agent == nullptr) {
    // After a coordinator restart, or after we declared the agent dead: it registers again.
    ++counters_.unknown_peers;
    // Rate-limited like malformed messages: a stranger may repeat this endlessly.
    if (counters_.unknown_peers <= 100 || counters_.unknown_peers % 100 == 0) {
      ReplyToAgent(routing_id, MakeError(NotFound("unknown agent; register first")));
    }
    return;
  }
  agent->last_seen = MonoNow();
  if (type == msg::kHeartbeat) {
    Heartbeat(*agent, body);
  } else if (type == msg::kResult) {
    AcceptResult(*agent, body);
  } else if (type == msg::kError) {
    AgentError(*agent, body);
  } else {
    ++counters_.malformed_messages;
    ReplyToAgent(routing_id,
                 MakeError(InvalidArgument("\"" + type + "\" is not an agent message")));
  }
}

void Coordinator::Register(const std::string& routing_id, const json& body) {
  const std::string name = body["agent"];
  auto refuse = [&](const Status& status) {
    ++counters_.malformed_messages;
    LOG_WARN("registration refused: " << status.message());
    ReplyToAgent(routing_id, MakeError(status));
  };
  if (!ValidAgentName(name)) {
    return refuse(InvalidArgument("agent name must be 1-128 letters, digits, '-', '_' or '.'"));
  }
  Agent agent;
  agent.routing_id = routing_id;
  agent.description.name = name;
  for (const json& tag : body["tags"]) {
    if (!tag.is_string()) return refuse(InvalidArgument("register: tags must be strings"));
    agent.description.tags.push_back(tag);
  }
  agent.description.capabilities = body["capabilities"];
  const json host = agent.description.capabilities.value("host", json::object());
  agent.machine_id = host.is_object() ? host.value("machine_id", name) : name;
  if (Agent* other = registry_.FindByName(name); other && other->routing_id != routing_id) {
    ReplyToAgent(routing_id, MakeError(FailedPrecondition("agent name \"" + name +
                                                          "\" is in use by a live agent")));
    return;
  }
  auto host_id = store_->UpsertHost(name, agent.machine_id, agent.description.tags,
                                    agent.description.capabilities);
  if (!host_id.ok()) {
    ++counters_.store_errors;
    LOG_ERROR("cannot store host " << name << ": " << host_id.status().message());
    ReplyToAgent(routing_id, MakeError(Unavailable("coordinator store unavailable: " +
                                                   host_id.status().message())));
    return;
  }
  agent.host_id = *host_id;
  agent.last_seen = MonoNow();
  bool known = registry_.FindByRoutingId(routing_id) != nullptr;
  registry_.Upsert(std::move(agent));
  HoldSpooledJobs(name, body.value("spooled", json::array()));
  if (!known) {
    LOG_INFO("agent " << name << " registered");
    // A fresh agent process asks for a calibration of its host; it runs as a job, so it
    // waits for other jobs on the same machine instead of disturbing them.
    if (body.value("calibrate", false) == true) {
      auto calibration = store_->CreateCalibration({name}, kCalibrationTimeoutS);
      if (!calibration.ok()) {
        ++counters_.store_errors;
        LOG_ERROR("cannot queue the calibration of " << name << ": " << calibration.status().message());
      }
    }
  }
  ReplyToAgent(routing_id, MakeMessage(msg::kRegistered, {{"agent", name},
                                                          {"heartbeat_ms", options_.heartbeat_ms},
                                                          {"liveness", options_.liveness}}));
}

void Coordinator::HoldSpooledJobs(const std::string& agent, const json& spooled) {
  // The agent is about to deliver these results (it sends its spool right after
  // "registered"). A lease per result keeps a requeued job from being handed out again
  // meanwhile, so valid work is not thrown away; if the result does not come, the lease
  // expires like any other.
  MonoTime now = MonoNow();
  for (const json& item : spooled) {
    if (!item.is_object()) continue;
    json job_id = item.value("job_id", json());
    json attempt = item.value("attempt", json());
    if (!job_id.is_number_integer() || !attempt.is_number_integer()) continue;
    if (registry_.FindLease(job_id.get<int64_t>()) != nullptr) continue;
    Lease lease;
    lease.job_id = job_id.get<int64_t>();
    lease.attempt = attempt.get<int>();
    lease.agent = agent;
    lease.renewed_at = now;
    lease.hard_deadline = now + LivenessWindow();
    registry_.AddLease(lease);
  }
}

void Coordinator::Heartbeat(Agent& agent, const json& body) {
  const json running = body.value("running", json());
  if (!running.is_object()) return;
  json job_id = running.value("job_id", json());
  json attempt = running.value("attempt", json());
  if (!job_id.is_number_integer() || !attempt.is_number_integer()) return;
  Lease* lease = registry_.FindLease(job_id.get<int64_t>());
  if (lease && lease->attempt == attempt.get<int>() && lease->agent == agent.description.name) {
    lease->renewed_at = MonoNow();
  }
}

void Coordinator::AcceptResult(Agent& agent, const json& body) {
  int64_t job_id = body["job_id"];
  int attempt = body["attempt"];
  auto outcome =
      store_->StoreResult(job_id, attempt, agent.host_id, agent.description.name, body["result"]);
  if (!outcome.ok()) {
    // No ack: the agent keeps the result spooled and sends it again.
    ++counters_.store_errors;
    LOG_ERROR("cannot store result of job " << job_id << " attempt " << attempt << ": "
                                            << outcome.status().message());
    return;
  }
  switch (*outcome) {
    case ResultOutcome::kStored:
      ++counters_.results_stored;
      if (body["result"].value("ok", false) != true) {
        ++counters_.failed_jobs;
        LOG_WARN("job " << job_id << " failed on " << agent.description.name << ": "
                        << body["result"].value("error", std::string("(no reason given)")));
      }
      break;
    case ResultOutcome::kDuplicate:
      ++counters_.duplicate_results;
      break;
    case ResultOutcome::kStale:
      ++counters_.stale_results;
      LOG_WARN("stale result for job " << job_id << " attempt " << attempt << " from "
                                       << agent.description.name << " recorded, not counted");
      break;
  }
  if (Lease* lease = registry_.FindLease(job_id); lease && lease->attempt == attempt) {
    registry_.RemoveLease(job_id);
  }
  ReplyToAgent(agent.routing_id,
               MakeMessage(msg::kAck, {{"job_id", job_id},
                                       {"attempt", attempt},
                                       {"outcome", ResultOutcomeName(*outcome)}}));
  Dispatch();
}

void Coordinator::AgentError(Agent& agent, const json& body) {
  LOG_WARN("agent " << agent.description.name << " reports " << body.value("code", "") << ": "
                    << body.value("message", ""));
  // A refused job offer names the job: its attempt is lost, the job goes back.
  json job_id = body.value("job_id", json());
  json attempt = body.value("attempt", json());
  if (job_id.is_number_integer() && attempt.is_number_integer()) {
    Lease* lease = registry_.FindLease(job_id.get<int64_t>());
    if (lease && lease->attempt == attempt.get<int>() && lease->agent == agent.description.name) {
      Lease lost = *lease;
      registry_.RemoveLease(lost.job_id);
      LoseAttempt(lost, "agent " + agent.description.name +
                            " refused the job: " + body.value("message", std::string()));
    }
  }
}

// ---- leases and dispatch ----

void Coordinator::RecoverLeases() {
  auto running = store_->RunningJobs();
  if (!running.ok()) {
    LOG_ERROR("cannot read running jobs: " << running.status().message());
    return;
  }
  MonoTime now = MonoNow();
  for (const RunningJob& job : *running) {
    // The agent gets one liveness window to come back and name the job in a heartbeat
    // (or deliver its result); otherwise the attempt is lost and the job requeued.
    Lease lease;
    lease.job_id = job.job_id;
    lease.attempt = job.attempt;
    lease.agent = job.host;
    lease.renewed_at = now;
    lease.hard_deadline =
        now + std::chrono::duration_cast<Millis>(std::chrono::duration<double>(job.timeout_s)) +
        LivenessWindow();
    registry_.AddLease(lease);
  }
  if (!running->empty()) LOG_INFO("recovered " << running->size() << " leases of running jobs");
}

void Coordinator::LoseAttempt(const Lease& lease, const std::string& reason) {
  auto requeued = store_->RequeueOrFail(lease.job_id, lease.attempt, options_.max_attempts, reason);
  if (!requeued.ok()) {
    ++counters_.store_errors;
    LOG_ERROR("cannot requeue job " << lease.job_id << ": " << requeued.status().message());
    registry_.AddLease(lease);  // try again on the next round
    return;
  }
  if (*requeued) {
    ++counters_.requeued_jobs;
    LOG_WARN("job " << lease.job_id << " attempt " << lease.attempt << " lost (" << reason
                    << "); requeued");
  } else {
    LOG_WARN("job " << lease.job_id << " attempt " << lease.attempt << " lost (" << reason << ")");
  }
}

void Coordinator::ExpireSilentAgentsAndLeases() {
  MonoTime now = MonoNow();
  for (const Agent& agent : registry_.RemoveSilent(now, LivenessWindow())) {
    LOG_WARN("agent " << agent.description.name << " silent for " << LivenessWindow().count()
                      << " ms; taken for dead");
    for (const Lease& lease : registry_.TakeLeasesOf(agent.description.name)) {
      LoseAttempt(lease, "agent " + agent.description.name + " went silent");
    }
  }
  for (const Lease& lease : registry_.TakeExpiredLeases(now, LivenessWindow())) {
    LoseAttempt(lease, "lease of agent " + lease.agent + " expired");
  }
}

void Coordinator::Dispatch() {
  for (Agent* agent : registry_.All()) {
    if (registry_.HasLease(agent->description.name)) continue;
    if (!options_.share_machines && registry_.MachineBusy(*agent)) continue;
    OfferNextJob(*agent);
  }
}

bool Coordinator::OfferNextJob(Agent& agent) {
  auto queued = store_->QueuedJobsFor(agent.description.name, kDispatchScan);
  if (!queued.ok()) {
    ++counters_.store_errors;
    LOG_ERROR("cannot read the queue: " << queued.status().message());
    return false;
  }
  for (const QueuedJob& job : *queued) {
    if (!job.pinned_host && !AgentMatches(job.select, agent.description)) continue;
    if (registry_.FindLease(job.job_id) != nullptr) continue;  // its result is on the way
    auto attempt = store_->MarkRunning(job.job_id, agent.host_id);
    if (!attempt.ok()) {
      ++counters_.store_errors;
      LOG_ERROR("cannot hand out job " << job.job_id << ": " << attempt.status().message());
      return false;
    }
    MonoTime now = MonoNow();
    Lease lease;
    lease.job_id = job.job_id;
    lease.attempt = *attempt;
    lease.agent = agent.description.name;
    lease.renewed_at = now;
    lease.hard_deadline =
        now + std::chrono::duration_cast<Millis>(std::chrono::duration<double>(job.timeout_s)) +
        LivenessWindow();
    registry_.AddLease(lease);
    Message offer = MakeMessage(msg::kJob, {{"job_id", job.job_id},
                                            {"attempt", *attempt},
                                            {"timeout_s", job.timeout_s},
                                            {"spec", job.spec}});
    Status sent = SendMessageTo(*agents_socket_, agent.routing_id, offer);
    if (!sent.ok()) {
      ++counters_.send_failures;
      registry_.RemoveLease(job.job_id);
      LoseAttempt(lease, "offer to agent " + agent.description.name + " failed: " + sent.message());
      return false;
    }
    LOG_INFO("job " << job.job_id << " attempt " << *attempt << " -> " << agent.description.name);
    return true;
  }
  return false;
}

void Coordinator::SendHeartbeats() {
  MonoTime now = MonoNow();
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + Millis(options_.heartbeat_ms);
  for (Agent* agent : registry_.All()) {
    (void)SendMessageTo(*agents_socket_, agent->routing_id, MakeMessage(msg::kHeartbeat));
  }
}

}  // namespace benchfleet
