#include "coordinator/coordinator.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/clock.h"
#include "common/cpu_list.h"
#include "common/files.h"
#include "common/log.h"
#include "common/model_transfer.h"
#include "common/transport.h"
#include "common/worker_result.h"
#include "coordinator/security/allow_list.h"

namespace benchfleet {
namespace {

// Messages handled per socket before the loop looks at timers again, so a flood on one
// socket cannot starve heartbeats and the other socket. A round of agents' messages
// also ends after kMaxAgentRoundMs: the larger the round, the fewer commits (syncs) per
// job, but a client's request that comes meanwhile waits for the round's end, and the
// round's offers leave together after its commit, the last behind all the others. At
// 1,000 saturated agents (docs/performance.md): 500 gave job committed -> received
// 6.0 / 14 ms (p50 / p99), 100 gave 2.1 / 5.5 ms, 32 gives 0.74 / 2.2-3.7 ms at
// 5,800-6,000 jobs/s (100: 6,300; 25: 5,600-5,700, 0.58 ms).
constexpr int kMaxMessagesPerRound = 32;
constexpr int kMaxAgentRoundMs = 40;
// Silent agents and expired leases are looked for this often (a walk over all of
// them), not after every message.
constexpr int kExpiryCheckMs = 50;
// Longer than a pass of the loop takes (its poll's wait, then a round of each side): a
// gap between two passes beyond it is a stall (AgentSessions::CreditStall).
constexpr Millis kLoopStallAllowance{kCoordinatorTickMs + 2 * kMaxAgentRoundMs};

// Where users' models are kept: --models, or `models/` beside the store.
std::string ModelsDirectory(const CoordinatorOptions& options) {
  if (!options.models_dir.empty()) return options.models_dir;
  const std::filesystem::path db(options.db_path);
  return (db.has_parent_path() ? db.parent_path() / "models" : std::filesystem::path("models"))
      .string();
}

json RequestId(const Message& message) {
  auto it = message.body.find("request_id");
  return it == message.body.end() ? json() : *it;
}

}  // namespace

Coordinator::Coordinator(CoordinatorOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemMonotonicClock()) {}

Coordinator::~Coordinator() {
  reads_.reset();  // joins the query thread before the context goes
}

StatusOr<std::unique_ptr<CurveKeyPair>> Coordinator::SecurityPolicy() const {
  if (options_.curve_key_path.empty()) {
    if (!options_.allow_list_path.empty()) {
      return InvalidArgument("--allow needs --curve-key (the coordinator's own key pair)");
    }
    for (const std::string& endpoint : {options_.agents_endpoint, options_.clients_endpoint}) {
      if (!IsLoopbackEndpoint(endpoint) && !options_.insecure) {
        return FailedPrecondition(
            "binding " + endpoint +
            " beyond loopback needs CURVE: give --curve-key and --allow "
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

Status Coordinator::OpenStoreAndComponents() {
  ASSIGN_OR_RETURN(store_, Store::Open(options_.db_path));
  ASSIGN_OR_RETURN(models_, ModelStore::Open(ModelsDirectory(options_)));
  round_ = std::make_unique<Round>(*store_, outlet_);
  ctx_ = std::make_unique<CoordinatorContext>(CoordinatorContext{
      options_, clock_, *store_, *round_, outlet_, registry_, leases_, counters_, *models_});
  dispatcher_ = std::make_unique<Dispatcher>(*ctx_, static_cast<LoopEvents&>(*this));
  sessions_ = std::make_unique<AgentSessions>(*ctx_, *dispatcher_);
  judge_ = std::make_unique<RegressionJudge>(store_->regressions(), counters_.store_errors);
  results_ = std::make_unique<ResultAcceptor>(*ctx_, *dispatcher_, *judge_, progress_);
  intake_ = std::make_unique<SweepIntake>(*ctx_, *dispatcher_);
  round_->set_offer_keeper(dispatcher_.get());
  // On a failed round, undone in reverse: the counters, the intakes, then the registry's
  // journal and the agents new in the round, then the requirements read again.
  round_->Join(dispatcher_.get());
  round_->Join(sessions_.get());
  round_->Join(intake_.get());
  round_->Join(this);
  schedules_ = std::make_unique<ScheduleRunner>(
      store_->schedules(), counters_.store_errors,
      [this] {
        return options_.wall_clock_s ? options_.wall_clock_s() : UnixMicrosNow() / 1000000;
      },
      static_cast<LoopEvents&>(*this));
  RETURN_IF_ERROR(dispatcher_->ReloadRequirements());
  RETURN_IF_ERROR(intake_->ResumeIntakes());
  reads_ = std::make_unique<QueryRunner>(context_, options_.db_path);
  clients_ = std::make_unique<ClientApi>(
      *ctx_, ClientApi::Parts{*dispatcher_, *sessions_, *schedules_, progress_, *reads_, *intake_});
  return reads_->Start();
}

void Coordinator::AgentUnreachable(const std::string& routing_id, const std::string& reason) {
  sessions_->DropAgent(routing_id, reason, AgentSessions::Gone::kUnreachable);
}

void Coordinator::GangStopped(int64_t job_id) { results_->ForgetGang(job_id); }

std::optional<Message> Coordinator::SubmitScheduled(const std::string& routing_id,
                                                    const json& request_id,
                                                    const SubmitRequest& request,
                                                    const ScheduledFiring& firing) {
  return intake_->Submit(routing_id, request_id, request, &firing);
}

std::optional<Message> Coordinator::PostRead(ReadRequest request) {
  return clients_->PostRead(std::move(request));
}

Status Coordinator::Start() {
  ASSIGN_OR_RETURN(auto curve, SecurityPolicy());
  RETURN_IF_ERROR(OpenStoreAndComponents());
  if (curve) {
    // The ZAP handler must be bound before the first handshake can arrive.
    ASSIGN_OR_RETURN(zap_, ZapHandler::Start(context_, options_.allow_list_path));
  }
  std::string agents_bound, clients_bound;
  ASSIGN_OR_RETURN(auto agents, BindRouter(context_, options_.agents_endpoint, &agents_bound,
                                           curve.get(), kAgentsZapDomain));
  ASSIGN_OR_RETURN(auto clients, BindRouter(context_, options_.clients_endpoint, &clients_bound,
                                            curve.get(), kClientsZapDomain));
  agents_socket_ = std::make_unique<zmq::socket_t>(std::move(agents));
  clients_socket_ = std::make_unique<zmq::socket_t>(std::move(clients));
  outlet_.UseSockets(agents_socket_.get(), clients_socket_.get());
  dispatcher_->RecoverLeases();
  if (!options_.metrics_address.empty()) {
    ASSIGN_OR_RETURN(metrics_,
                     MetricsPublisher::Start(options_.metrics_address, *ctx_, *dispatcher_));
    round_->set_commit_histogram(&metrics_->store_commit());
  }
  ASSIGN_OR_RETURN(const int schema_version, store_->SchemaVersion());
  LOG_INFO("serving agents on " << agents_bound << ", clients on " << clients_bound << ", store "
                                << options_.db_path << " (schema v" << schema_version << ")"
                                << (curve ? ", CURVE on" : ", CURVE off"));
  if (!options_.ready_file.empty()) {
    json ready = {{"agents", agents_bound}, {"clients", clients_bound}, {"pid", getpid()}};
    if (metrics_) ready["metrics"] = metrics_->url();
    RETURN_IF_ERROR(WriteFileAtomically(options_.ready_file, ready.dump()));
  }
  return Status::Ok();
}

Status Coordinator::StartInProcess(Outbox outbox) {
  outlet_.UseOutbox(std::move(outbox));
  RETURN_IF_ERROR(OpenStoreAndComponents());
  dispatcher_->RecoverLeases();
  return Status::Ok();
}

Status Coordinator::Run(const std::atomic<bool>* stop, std::atomic<bool>* reload) {
  last_polled_at_ = Now();
  while (!stop->load()) {
    if (reload != nullptr && reload->exchange(false) && zap_) {
      Status reloaded = zap_->Reload();
      if (!reloaded.ok())
        LOG_ERROR("allow-list not reloaded, the old one stays: " << reloaded.message());
    }
    // CURVE handshakes are vetted on the ZAP handler's own thread, users' reads on the
    // query thread; the loop only picks up the reads' replies.
    auto readable =
        PollReadable({agents_socket_.get(), clients_socket_.get(), &reads_->reply_socket()},
                     clients_->pruning() || intake_->busy() ? 0 : kCoordinatorTickMs);
    const MonoTime polled_at = Now();
    const MonoTime pass_started = MonoNow();  // real work, whatever clock the protocol runs on
    // A pass that began long after the last one: the loop did not run (a commit stalled
    // on a busy disk, the process stopped). An agent that took us for dead meanwhile
    // reconnected, and the heartbeats it had queued went with its old connection: that
    // time is the coordinator's, not the agents' silence.
    if (polled_at - last_polled_at_ > kLoopStallAllowance)
      sessions_->CreditStall(
          std::chrono::duration_cast<Millis>(polled_at - last_polled_at_ - kLoopStallAllowance));
    last_polled_at_ = polled_at;
    // Clients first: a user's submit or status is answered ahead of the agents' flood.
    // Each request is a round of its own: its reply waits for no one else's work, and
    // several submits never pile up in one transaction (a round that wrote nothing
    // commits nothing, so a status costs no sync).
    // Once the requests took kMaxAgentRoundMs (small submits, about 15 ms each) the
    // agents get their turn before the next one: their messages must not pile up
    // unread (each one queued in ZeroMQ holds its receive buffer, ~8 KB).
    for (int i = 0; readable[1] && i < kMaxMessagesPerRound; ++i) {
      if (Now() - polled_at > Millis(kMaxAgentRoundMs)) break;
      std::string user_id;  // the role the ZAP handler gave the client's key
      auto frames = ReceiveFrames(*clients_socket_, &user_id);
      if (!frames.ok() || !frames->has_value()) break;
      BeginRound();
      HandleClient(**frames, ClientRoleOf(user_id, zap_ != nullptr));
      EndRound();
    }
    const auto clients_took = std::chrono::duration_cast<Millis>(Now() - polled_at);
    if (readable[2]) DeliverReadReplies(Millis(0));
    // The agents' messages and the timer work: one round, one commit.
    BeginRound();
    // The agents' queue was empty when polled (messages that came while clients were
    // served are not read yet), or when a receive found nothing.
    if (!readable[0]) observed_until_ = polled_at;
    // Not longer than kMaxAgentRoundMs, even after a long client request: offers and
    // acks wait for the round's end, and a long round let leases and the agents'
    // patience run out (fault_overload_test under ASan).
    const MonoTime round_ends = Now() + Millis(kMaxAgentRoundMs);
    const bool read_agents = readable[0] || clients_took > Millis(kMaxAgentRoundMs);
    for (int i = 0; read_agents && i < kMaxMessagesPerRound; ++i) {
      const MonoTime before_receive = Now();
      if (before_receive > round_ends) break;
      auto frames = ReceiveFrames(*agents_socket_);
      if (!frames.ok()) break;
      if (!frames->has_value()) {
        observed_until_ = before_receive;
        break;
      }
      HandleAgent(**frames);
      // Our heartbeats leave on time however long the round: an agent that hears
      // nothing from a coordinator busy storing results would take it for dead.
      sessions_->SendHeartbeats();
    }
    // Every agent message sent before observed_until_ has been read (as far as ZeroMQ
    // delivered it): liveness is judged up to there, never beyond.
    Tick();
    EndRound();
    // The prune's short transactions of its own, outside the round's.
    clients_->AdvancePrune();
    if (metrics_) metrics_->LoopPassDone(pass_started, MonoNow());
  }
  LOG_INFO("stopping");
  return Status::Ok();
}

void Coordinator::Tick() {
  try {
    MonoTime now = Now();
    // Without sockets (in process) everything sent has been handled.
    if (!agents_socket_) observed_until_ = now;
    // Liveness and leases are judged on observed time only: a heartbeat or result
    // that waits unread in our own queue still counts, so the coordinator's own lag
    // (a slow store operation, a flood of messages) never makes a live agent look
    // silent. A coordinator that cannot keep up expires nobody until it catches up.
    if (observed_until_ - last_expiry_ >= Millis(kExpiryCheckMs)) {
      sessions_->ExpireSilentAgentsAndLeases(observed_until_);
      last_expiry_ = observed_until_;
    }
    sessions_->RecalibrateStaleMachines();
    // A safety net under the offer candidates: every so often every agent and every
    // requirement is looked at again, whatever path freed a job without saying so.
    dispatcher_->Refresh();
    schedules_->FireDueSchedules();
    intake_->AdvanceIntake();
    dispatcher_->Dispatch();
    if (!round_->open())
      clients_->AdvancePrune();  // in a round, Run() advances it after the commit
    sessions_->SendHeartbeats();
  } catch (const std::exception& e) {
    ++counters_.handler_exceptions;
    LOG_ERROR("timer work failed and was skipped this round: " << e.what());
  }
}

int Coordinator::DeliverReadReplies(Millis wait) {
  int sent = 0;
  if (wait.count() > 0 && !PollReadable({&reads_->reply_socket()}, wait.count())[0]) return 0;
  while (auto reply = reads_->TakeReply()) {
    auto decoded = Decode(reply->second);
    if (!decoded.ok()) continue;  // our own encoding; cannot happen
    (void)round_->SendNow(Side::kClients, reply->first, *decoded);  // a read: nothing to commit
    ++sent;
  }
  return sent;
}

void Coordinator::BeginRound() { round_->Begin(); }

void Coordinator::EndRound() { (void)round_->End(); }

void Coordinator::RoundBegins() { counters_at_round_start_ = counters_; }

void Coordinator::RoundFailed() {
  counters_ = counters_at_round_start_;
  ++counters_.store_errors;
}

Status Coordinator::Send(Side side, const std::string& routing_id, Message message) {
  return round_->Send(side, routing_id, std::move(message));
}

void Coordinator::Refuse(Side side, const std::string& routing_id, const Status& status,
                         const json& request_id) {
  ctx_->Refuse(side, routing_id, status, request_id);
}

// ---- clients ----

void Coordinator::HandleClient(const Frames& frames, Role role) {
  if (frames.size() != 2) {
    if (!frames.empty()) {
      Refuse(Side::kClients, frames[0],
             InvalidArgument("expected one frame per message, got " +
                             std::to_string(frames.size() - 1)));
    }
    return;
  }
  json request_id;  // echoed even when the request itself is refused
  auto decoded = Decode(frames[1], &request_id);
  if (!decoded.ok()) return Refuse(Side::kClients, frames[0], decoded.status(), request_id);
  // The last resort: whatever one message does wrong must not end the daemon.
  try {
    HandleClientMessage(frames[0], *decoded, role);
  } catch (const std::exception& e) {
    ++counters_.handler_exceptions;
    LOG_ERROR("handling a \"" << decoded->type << "\" from a client failed: " << e.what());
    (void)Send(
        Side::kClients, frames[0],
        MakeError(Internal("the coordinator could not handle this " + decoded->type + " (logged)"),
                  RequestId(*decoded)));
  }
}

void Coordinator::HandleClientMessage(const std::string& routing_id, const Message& message,
                                      Role role) {
  std::optional<Message> reply = clients_->Reply(routing_id, message, role);
  if (reply) (void)Send(Side::kClients, routing_id, std::move(*reply));
}

// ---- agents ----

void Coordinator::HandleAgent(const Frames& frames) {
  if (frames.size() != 2) {
    if (!frames.empty()) {
      Refuse(Side::kAgents, frames[0],
             InvalidArgument("expected one frame per message, got " +
                             std::to_string(frames.size() - 1)));
    }
    return;
  }
  auto decoded = Decode(frames[1]);
  if (!decoded.ok()) return Refuse(Side::kAgents, frames[0], decoded.status());
  // The last resort: whatever one message does wrong must not end the daemon.
  try {
    HandleAgentMessage(frames[0], *decoded);
  } catch (const std::exception& e) {
    ++counters_.handler_exceptions;
    LOG_ERROR("handling a \"" << decoded->type << "\" from an agent failed: " << e.what());
  }
}

void Coordinator::HandleAgentMessage(const std::string& routing_id, const Message& message) {
  const std::string& type = message.type;
  if (type == msg::kRegister) return sessions_->Register(routing_id, message);
  // Answered even from an agent already taken for gone: it waits for the answer.
  if (type == msg::kLeave) return sessions_->Leave(routing_id, message);
  Agent* agent = sessions_->Seen(routing_id);
  if (agent == nullptr) return;
  if (type == msg::kHeartbeat) {
    sessions_->Heartbeat(*agent, message);
  } else if (type == msg::kResult) {
    results_->Accept(*agent, message);
  } else if (type == msg::kRendezvous) {
    auto report = RendezvousReport::FromJson(message.body);
    if (!report.ok()) return Refuse(Side::kAgents, routing_id, report.status());
    dispatcher_->Rendezvous(*agent, *report);
  } else if (type == msg::kModelFetch) {
    auto fetch = ModelFetchRequest::FromJson(message.body);
    if (!fetch.ok()) return Refuse(Side::kAgents, routing_id, fetch.status());
    // Sent now: a chunk is a read of the model directory, nothing the round commits.
    (void)Send(Side::kAgents, routing_id, ToMessage(models_->Read(*fetch)));
  } else if (type == msg::kError) {
    sessions_->AgentError(*agent, message);
  } else {
    Refuse(Side::kAgents, routing_id, InvalidArgument("\"" + type + "\" is not an agent message"));
  }
}

// ---- calibrations ----

}  // namespace benchfleet
