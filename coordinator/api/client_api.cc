#include "coordinator/api/client_api.h"

#include <algorithm>

#include "common/client_replies.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/model_files.h"
#include "common/model_transfer.h"
#include "common/status_reply.h"

namespace benchfleet {
namespace {

// Most recent sweeps shown by a status request without a sweep id.
constexpr int kStatusSweeps = 20;
// While a prune runs, each loop round gives it about this long (short transactions), then
// serves agents and clients again.
constexpr int kPruneStepMs = 20;

// The answer to a request its key's role may not send: well formed, so not counted as
// malformed, but logged, since it is someone trying what their key does not allow.
Message Denied(const Status& denied, const json& request_id) {
  LOG_WARN("refused a client's request: " << denied.message());
  return MakeError(denied, request_id);
}

}  // namespace

std::optional<Message> ClientApi::Reply(const std::string& routing_id, const Message& message,
                                        Role role) {
  const json request_id = message.body.value("request_id", json());
  const std::string& type = message.type;
  auto refuse = [&](const Status& status) -> std::optional<Message> {
    ctx_.Refuse(Side::kClients, routing_id, status, request_id);
    return std::nullopt;
  };
  // Checked before anything is done; a schedule request's action again once it is parsed.
  if (Status allowed = CheckRole(role, type); !allowed.ok()) return Denied(allowed, request_id);
  if (type == msg::kSubmit) {
    auto request = ParseSubmit(message);
    if (!request.ok()) return refuse(request.status());
    return parts_.intake.Submit(routing_id, request_id, *request);
  }
  if (type == msg::kStatus || type == msg::kCancel) {
    auto request = ParseSweepRequest(message);
    if (!request.ok()) return refuse(request.status());
    return type == msg::kStatus ? StatusReply(request_id, *request) : Cancel(request_id, *request);
  }
  if (type == msg::kResults) {
    auto request = ParseResults(message);
    if (!request.ok()) return refuse(request.status());
    return PostRead({routing_id, request_id, std::nullopt, request->sweep_id, request->limit});
  }
  if (type == msg::kQuery) {
    auto request = ParseQuery(message);
    if (!request.ok()) return refuse(request.status());
    return PostRead({routing_id, request_id, request->sql, std::nullopt, kMaxReplyRows});
  }
  if (type == msg::kCalibrate) {
    auto request = ParseCalibrate(message);
    if (!request.ok()) return refuse(request.status());
    return Calibrate(request_id, *request);
  }
  if (type == msg::kPrune) {
    auto request = ParsePrune(message);
    if (!request.ok()) return refuse(request.status());
    return StartPrune(routing_id, request_id, *request);
  }
  if (type == msg::kBaselineReset) {
    auto request = ParseBaselineReset(message);
    if (!request.ok()) return refuse(request.status());
    auto reset =
        ctx_.store.regressions().AddBaselineReset(request->host, request->model, request->note);
    if (!reset.ok()) return MakeError(reset.status(), request_id);
    LOG_INFO("baseline reset " << reset->dump());
    return ToMessage(RowsReply{
        request_id,
        {"reset_id", "host", "model", "at"},
        {json::array({(*reset)["reset_id"], (*reset)["host"], (*reset)["model"], (*reset)["at"]})},
        false});
  }
  if (type == msg::kSetPrice) {
    auto request = ParseSetPrice(message);
    if (!request.ok()) return refuse(request.status());
    auto price = ctx_.store.hosts().SetHostPrice(request->host, request->price);
    if (!price.ok()) return MakeError(price.status(), request_id);
    LOG_INFO("price set " << price->dump());
    return ToMessage(RowsReply{request_id,
                               {"host", "per_hour", "currency", "set_at"},
                               {json::array({(*price)["host"], (*price)["per_hour"],
                                             (*price)["currency"], (*price)["set_at"]})},
                               false});
  }
  if (type == msg::kModelUpload) {
    auto request = ParseModelUpload(message);
    if (!request.ok()) return refuse(request.status());
    auto stored = ctx_.models.Accept(*request, ctx_.Now());
    if (!stored.ok()) return MakeError(stored.status(), request_id);
    stored->request_id = request_id;
    return ToMessage(*stored);
  }
  if (type == msg::kSchedule) {
    auto request = ParseSchedule(message);
    if (!request.ok()) return refuse(request.status());
    if (Status allowed = CheckRole(role, type, ScheduleActionName(request->action));
        !allowed.ok()) {
      return Denied(allowed, request_id);
    }
    if (request->action == ScheduleRequest::Action::kAdd) {
      // Its sweep's models must be stored now, as a submit's are (they are never removed).
      Status models = CheckSubmittedModels(
          request->sweep, [&](const std::string& sha256) { return ctx_.models.Has(sha256); });
      if (!models.ok()) return MakeError(models, request_id);
    }
    return parts_.schedules.Reply(routing_id, request_id, *request);
  }
  return refuse(InvalidArgument("\"" + type + "\" is not a client request"));
}

std::optional<Message> ClientApi::StartPrune(const std::string& routing_id, const json& request_id,
                                             const PruneRequest& request) {
  if (prune_) {
    return MakeError(Unavailable("a prune is already running; try again once it has answered"),
                     request_id);
  }
  auto pruner = SamplePruner::Start(ctx_.store.retention(), request.samples_older_than_s);
  if (!pruner.ok()) return MakeError(pruner.status(), request_id);
  LOG_INFO("pruning raw samples older than " << request.samples_older_than_s << " s");
  prune_ = PendingPrune{routing_id, request_id, std::move(*pruner)};
  return std::nullopt;  // answered by AdvancePrune when done
}

void ClientApi::AdvancePrune() {
  if (!prune_) return;
  auto done = prune_->pruner.Step(ctx_.store.retention(), Millis(kPruneStepMs));
  if (!done.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("prune stopped: " << done.status().message());
    ctx_.Reply(Side::kClients, prune_->routing_id, MakeError(done.status(), prune_->request_id));
    prune_.reset();
    return;
  }
  if (!*done) return;
  const SamplePruner::Progress& progress = prune_->pruner.progress();
  LOG_INFO("pruned the raw samples of " << progress.results_pruned
                                        << " results: " << progress.bytes_before << " -> "
                                        << progress.bytes_after << " bytes");
  ctx_.Reply(Side::kClients, prune_->routing_id,
             ToMessage(PrunedReply{prune_->request_id, progress.results_pruned,
                                   progress.bytes_before, progress.bytes_after}));
  prune_.reset();
}

std::optional<Message> ClientApi::PostRead(ReadRequest request) {
  json request_id = request.request_id;
  if (parts_.reads.Post(std::move(request))) return std::nullopt;  // answered by the query thread
  return MakeError(Unavailable("too many queries are waiting; try again shortly"), request_id);
}

Message ClientApi::StatusReply(const json& request_id, const SweepRequest& request) {
  benchfleet::StatusReply reply;
  reply.request_id = request_id;
  auto sweeps = ctx_.store.jobs().SweepStatus(request.sweep_id, kStatusSweeps);
  if (!sweeps.ok()) return MakeError(sweeps.status(), request_id);
  reply.sweeps = std::move(*sweeps);
  for (SweepOverview& sweep : reply.sweeps) {
    if (sweep.state == "running")
      sweep.eta_s = parts_.progress.EtaSeconds(sweep.sweep_id, sweep.jobs.Unfinished());
  }
  // Which job runs where: one read of the running jobs, not one per agent. A gang's job
  // shows beside each of its agents, so running jobs are copied, not moved.
  auto running = ctx_.store.jobs().RunningJobConfigs();
  if (!running.ok()) ++ctx_.counters.store_errors;
  reply.agents.reserve(ctx_.registry.size());
  const MonoTime now = ctx_.Now();
  for (Agent* agent : ctx_.registry.All()) {
    AgentState entry;
    entry.agent = agent->description.name;
    if (auto leased = ctx_.leases.LeasedJobOf(agent->description.name)) {
      entry.job_id = *leased;
      if (running.ok()) {
        if (auto it = running->find(*leased); it != running->end()) entry.job = it->second;
      }
    }
    entry.machine_id = agent->machine_id;
    entry.tags = agent->description.tags;
    entry.last_seen_ms_ago = std::chrono::duration_cast<Millis>(now - agent->last_seen).count();
    reply.agents.push_back(std::move(entry));
  }
  reply.counters = ctx_.counters;
  reply.waiting = parts_.dispatcher.Waiting(request.sweep_id);
  reply.departed = parts_.sessions.Departed();
  return ToMessage(reply);
}

Message ClientApi::Cancel(const json& request_id, const SweepRequest& request) {
  if (!request.sweep_id) {
    return MakeError(InvalidArgument("cancel.sweep_id: missing"), request_id);
  }
  int64_t sweep_id = *request.sweep_id;
  auto cancelled = ctx_.store.jobs().CancelSweep(sweep_id);
  if (!cancelled.ok()) return MakeError(cancelled.status(), request_id);
  LOG_INFO("sweep " << sweep_id << " cancelled: " << *cancelled << " queued jobs dropped");
  return ToMessage(CancelledReply{request_id, sweep_id, *cancelled});
}

Message ClientApi::Calibrate(const json& request_id, const CalibrateRequest& request) {
  std::vector<std::string> names;
  for (Agent* agent : ctx_.registry.All()) {
    const std::string& name = agent->description.name;
    if (request.agents.empty() ||
        std::find(request.agents.begin(), request.agents.end(), name) != request.agents.end()) {
      names.push_back(name);
    }
  }
  for (const std::string& name : request.agents) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return MakeError(NotFound("no registered agent named \"" + name + "\""), request_id);
    }
  }
  if (names.empty()) return MakeError(FailedPrecondition("no agent is registered"), request_id);
  std::sort(names.begin(), names.end());
  auto sweep_id = ctx_.store.jobs().CreateCalibration(names, kCalibrationTimeoutS);
  if (!sweep_id.ok()) {
    ++ctx_.counters.store_errors;
    return MakeError(Unavailable("cannot store the calibration: " + sweep_id.status().message()),
                     request_id);
  }
  Status reloaded = parts_.dispatcher.ReloadRequirements();
  if (!reloaded.ok()) LOG_ERROR("cannot read requirements: " << reloaded.message());
  parts_.dispatcher.Dispatch();
  const auto jobs = static_cast<int64_t>(names.size());
  return Submitted(request_id, StoredSweep{*sweep_id, jobs, std::move(names), false});
}

}  // namespace benchfleet
