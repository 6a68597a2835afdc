#include "coordinator/intake/sweep_intake.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "common/client_replies.h"
#include "common/cpu_list.h"
#include "common/log.h"
#include "common/model_files.h"
#include "common/thread_placement.h"

namespace benchfleet {
namespace {

// A sweep of at most this many jobs is checked, accepted and stored within its request
// (about 15 ms here); a larger one a slice per round.
constexpr int64_t kWholeSweepJobs = 1000;
// One intake slice: combinations checked (ParseJobConfig, about 3 us each here), or
// jobs stored (about 12 us each).
constexpr size_t kIntakeCheckCombinations = 5000;
constexpr size_t kIntakeStoreJobs = 1000;
// Large submits taken in at once (being checked or stored), at most: each holds its parsed matrix
// (a few MB for 100,000 combinations), so a client that sends them without end must not exhaust the
// coordinator's memory. Past it a submit is refused as unavailable (the CLI sends again).
constexpr size_t kMaxIntakes = 16;

}  // namespace

Message Submitted(const json& request_id, const StoredSweep& stored,
                  const CombinationTally& tally) {
  // What the sweep's exclude list and "invalid": "skip" left out (0 for a resend of a
  // submission already stored: it is not checked again).
  const bool counted = !stored.existing;
  SubmittedReply reply;
  reply.request_id = request_id;
  reply.sweep_id = stored.sweep_id;
  reply.jobs = stored.jobs;
  reply.agents = stored.agents;
  reply.existing = stored.existing;
  reply.excluded = counted ? static_cast<int64_t>(tally.excluded) : 0;
  reply.skipped = counted ? static_cast<int64_t>(tally.invalid) : 0;
  reply.skipped_first = counted ? tally.invalid_listed : json::array();
  return ToMessage(reply);
}

std::optional<Message> SweepIntake::Submit(const std::string& routing_id, const json& request_id,
                                           const SubmitRequest& request,
                                           const ScheduledFiring* firing) {
  // A refused sweep: its client is told why, a schedule's firing records it.
  auto refuse = [&](const Status& status) {
    if (firing)
      RecordFiringRefused(ctx_.store.schedules(), ctx_.counters.store_errors, *firing,
                          status.message());
    return MakeError(status, request_id);
  };
  auto sweep = ParseSweepShape(request.sweep);
  if (!sweep.ok()) return refuse(sweep.status());
  sweep->default_processes = ctx_.options.default_processes;
  // Its model files by content, each already uploaded (schemas/sweep.md), and what each
  // AOTInductor package among them needs of the worker that runs it.
  Status models = CheckSubmittedModels(
      request.sweep, [&](const std::string& sha256) { return ctx_.models.Has(sha256); });
  if (!models.ok()) return refuse(models);
  Status packages = ReadPackages(request.sweep, &*sweep);
  if (!packages.ok()) return refuse(packages);
  // A resend of a submission still being checked is answered with the first (a
  // schedule's firing looked at again meanwhile has no one to answer).
  if (!request.submission_id.empty()) {
    for (Intake& intake : intakes_) {
      if (intake.sweep_id == 0 && intake.submission_id == request.submission_id) {
        if (!routing_id.empty()) intake.clients.emplace_back(routing_id, request_id);
        return std::nullopt;
      }
    }
  }
  auto existing = ctx_.store.jobs().FindSubmission(request.submission_id);
  if (!existing.ok()) {
    ++ctx_.counters.store_errors;
    return MakeError(Unavailable("the coordinator could not read its store (" +
                                 existing.status().message() + "); nothing was enqueued"),
                     request_id);
  }
  if (*existing) {
    LOG_INFO("submission " << request.submission_id << " again: sweep " << (*existing)->sweep_id
                           << " already stored");
    return Submitted(request_id, **existing);
  }
  Intake intake;
  intake.serial = ++intake_serial_;
  intake.submission_id = request.submission_id;
  if (!routing_id.empty()) intake.clients.emplace_back(routing_id, request_id);
  if (firing) intake.firing = *firing;
  const int64_t jobs_at_most =
      static_cast<int64_t>(sweep->combination_count) *
      (sweep->placement == Placement::kEach
           ? std::max<int64_t>(1, static_cast<int64_t>(ctx_.registry.size()))
           : 1);
  intake.sweep = std::move(*sweep);
  if (jobs_at_most <= kWholeSweepJobs) {
    // Taken in at once, within its request, by the same steps as a large one: checked,
    // accepted (the client answered at the round's commit), its jobs stored.
    intake.whole = true;
    if (CheckOrAccept(intake) && intake.sweep_id != 0) {
      StoreSlice(intake);
      // A slice the store could not take now goes on next round, as a large one's does.
      if (!intake.finished) intakes_.push_back(std::move(intake));
      dispatcher_.Dispatch();
    }
    return std::nullopt;
  }
  if (LargeIntakes() >= kMaxIntakes) {
    // A schedule's firing is tried again a second later, so nothing is recorded.
    return MakeError(Unavailable(std::to_string(LargeIntakes()) +
                                 " large sweeps are being taken in already; nothing was "
                                 "enqueued, send it again later"),
                     request_id);
  }
  LOG_INFO("sweep \"" << intake.sweep.name << "\": " << intake.sweep.combination_count
                      << " combinations to check, then store a slice per round");
  intakes_.push_back(std::move(intake));
  return std::nullopt;  // answered once checked and accepted (AdvanceIntake)
}

size_t SweepIntake::LargeIntakes() const {
  return static_cast<size_t>(std::count_if(intakes_.begin(), intakes_.end(),
                                           [](const Intake& intake) { return !intake.whole; }));
}

Status SweepIntake::ReadPackages(const json& document, Sweep* sweep) {
  for (const ModelFileRef& ref : FindModelFiles(document)) {
    if (ref.key != "sha256" || ref.field.rfind("models.aoti.", 0) != 0) continue;
    auto facts = ctx_.models.PackageFacts(ref.value);
    if (!facts.ok()) return InvalidArgument(ref.field + ": " + facts.status().message());
    sweep->packages[ref.value] = {facts->device, facts->torch_version};
  }
  return Status::Ok();
}

namespace {

// The sweep field a placement's worker needs come from: matrix.<axis>[i] of its first
// combination, else the axis itself.
std::string AxisField(const Sweep& sweep, const std::string& placement, const std::string& axis) {
  for (size_t a = 0; a < sweep.axes.size(); ++a) {
    if (sweep.axes[a].key != axis) continue;
    auto index = sweep.checked.first_index.find(placement);
    if (index == sweep.checked.first_index.end() || a >= index->second.size())
      return "matrix." + axis;
    return "matrix." + axis + "[" + std::to_string(index->second[a]) + "]";
  }
  return axis == "technique" ? "matrix.model" : "matrix." + axis;
}

}  // namespace

Status SweepIntake::CheckWorkers(const Sweep& sweep, const std::string& key,
                                 const WorkerNeeds& needs) const {
  // What the fleet's workers are: every registered agent's, whatever its select.
  std::vector<TorchFacts> fleet;
  for (Agent* agent : ctx_.registry.All()) {
    for (TorchFacts& worker : agent->description.capabilities.Workers())
      fleet.push_back(std::move(worker));
  }
  if (PickWorker(fleet, needs)) return Status::Ok();
  std::vector<std::string> versions;
  for (const TorchFacts& worker : fleet)
    versions.push_back(worker.torch_version.value_or("(unknown)"));
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  std::string has;
  for (const std::string& version : versions) has += (has.empty() ? "" : ", ") + version;
  has = versions.empty() ? "no agent is registered" : "the fleet's workers have torch " + has;
  WorkerNeeds torch_only;
  torch_only.torch = needs.torch;
  if (!needs.torch.empty() && !PickWorker(fleet, torch_only)) {
    return FailedPrecondition(AxisField(sweep, key, "torch") + ": no agent has a worker of torch " +
                              needs.torch + " (" + has + "); nothing was enqueued");
  }
  WorkerNeeds version_only = torch_only;
  version_only.torch_min = needs.torch_min;
  if (!needs.torch_min.empty() && !PickWorker(fleet, version_only)) {
    return FailedPrecondition("models.aoti.sha256: the package was made by torch " +
                              needs.torch_min + " and needs a worker of that torch or newer" +
                              (needs.torch.empty() ? "" : " matching torch " + needs.torch) + " (" +
                              has + "); nothing was enqueued");
  }
  return FailedPrecondition(AxisField(sweep, key, "technique") + ": no agent has a worker" +
                            (needs.torch.empty() ? "" : " of torch " + needs.torch) +
                            " that runs technique " + needs.technique +
                            " (it takes a LibTorch with AOTInductor and the python of its torch; " +
                            has + "); nothing was enqueued");
}

Status SweepIntake::CheckThreadPlacements(const Sweep& sweep) const {
  const auto axis = std::find_if(sweep.axes.begin(), sweep.axes.end(),
                                 [](const MatrixAxis& a) { return a.key == "thread_placement"; });
  if (axis == sweep.axes.end()) return Status::Ok();
  const bool any_other =
      std::any_of(axis->values.begin(), axis->values.end(), [](const json& value) {
        return value.is_string() && value.get<std::string>() != kDefaultThreadPlacement;
      });
  if (!any_other) return Status::Ok();
  // Each (threads, policy, placement) once: a large sweep has a handful of them.
  std::set<std::tuple<int64_t, std::string, std::string>> asked;
  std::map<std::string, JobPlacement> placements;
  RETURN_IF_ERROR(sweep.ForEachCombination([&](const Combination& combination) {
    const json spec = combination.Spec();
    const std::string policy = JobThreadPlacement(spec);
    if (policy == kDefaultThreadPlacement) return Status::Ok();
    asked.emplace(spec.value("threads", int64_t{1}), policy, combination.placement);
    placements.try_emplace(combination.placement, Sweep::PlacementOf(spec, combination.needs));
    return Status::Ok();
  }));
  for (const auto& [threads, policy, key] : asked) {
    JobRequirement requirement;
    requirement.select = SelectWithWorker(sweep.select, placements.at(key).worker);
    requirement.device = placements.at(key).device;
    // An agent that did not send its CPUs' shape (an older one) may be able to: only
    // agents that said, and every one of them cannot, refuse the sweep.
    std::string refusal;
    bool can = false;
    size_t matching = 0;
    for (Agent* agent : ctx_.registry.All()) {
      if (!AgentCanRun(requirement, agent->description)) continue;
      ++matching;
      const auto& shape = agent->description.capabilities.cpu_shape;
      const std::string why = shape ? PlacementRefusal(*shape, threads, policy) : "";
      if (why.empty()) {
        can = true;
        break;
      }
      refusal = agent->description.name + ": " + why;
    }
    if (can || matching == 0) continue;
    size_t index = 0;
    while (index < axis->values.size() && axis->values[index] != policy) ++index;
    const std::string agents = DescribeRequirement(requirement) == "{}"
                                   ? "no registered agent"
                                   : "no agent that matches " + DescribeRequirement(requirement);
    return FailedPrecondition(
        "matrix.thread_placement[" + std::to_string(index) + "]: " + agents + " can place " +
        std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") + " by \"" + policy +
        "\" (" +
        (matching == 1 ? refusal
                       : refusal + ", and " + std::to_string(matching - 1) + " more like it") +
        "); nothing was enqueued");
  }
  return Status::Ok();
}

Status SweepIntake::CheckPair(const Sweep& sweep, const JobPlacement& placement,
                              JobRequirement* requirement) const {
  const VersusSpec& versus = *sweep.versus;
  if (!placement.versus_worker.empty()) {
    Status side_b = CheckWorkers(sweep, placement.Key(), placement.versus_worker);
    if (!side_b.ok()) {
      // The fault is side B's value, whatever field the worker check names.
      const std::string& message = side_b.message();
      const size_t colon = message.find(": ");
      return FailedPrecondition("versus." + versus.axis + "[1]: side B " +
                                (colon == std::string::npos ? message : message.substr(colon + 2)));
    }
  }
  requirement->select =
      SelectWithVersus(requirement->select, placement.versus_worker, placement.versus_cpus);
  if (placement.versus_cpus == 0) return Status::Ok();
  // A duet runs both sides at once on disjoint CPUs of one agent.
  size_t most = 0;
  for (Agent* agent : ctx_.registry.All()) {
    if (AgentCanRun(*requirement, agent->description)) return Status::Ok();
    const StatusOr<std::vector<int>> cpus = ParseCpuList(agent->description.capabilities.cpus);
    if (cpus.ok()) most = std::max(most, cpus->size());
  }
  return FailedPrecondition(
      "versus.pairing: a duet runs both sides at once, " + std::to_string(placement.versus_cpus) +
      " CPUs on one agent; no registered agent that runs the sweep's jobs has them (the most an "
      "agent runs jobs on: " +
      std::to_string(most) +
      "); pair them interleaved; nothing was "
      "enqueued");
}

// Every placement of the sweep's jobs must be one some worker of the fleet can run, or
// its jobs would wait for ever. Placement "each": every combination on every matching
// agent that can run its placement (a cuda:1 combination only where the worker sees two
// GPUs, a torch 1.13 one only where the agent has a 1.13 worker).
StatusOr<PinnedAgents> SweepIntake::PinAgents(const Sweep& sweep) {
  PinnedAgents pinned;
  RETURN_IF_ERROR(CheckThreadPlacements(sweep));
  for (const JobPlacement& placement : sweep.Placements()) {
    if (!placement.worker.empty())
      RETURN_IF_ERROR(CheckWorkers(sweep, placement.Key(), placement.worker));
    JobRequirement requirement;
    requirement.select = SelectWithWorker(sweep.select, placement.worker);
    requirement.device = placement.device;
    if (sweep.versus) RETURN_IF_ERROR(CheckPair(sweep, placement, &requirement));
    if (sweep.placement != Placement::kEach) continue;
    std::vector<std::string> hosts;
    for (Agent* agent : ctx_.registry.All()) {
      if (AgentCanRun(requirement, agent->description)) hosts.push_back(agent->description.name);
    }
    if (hosts.empty()) {
      return FailedPrecondition("no registered agent matches " + DescribeRequirement(requirement) +
                                "; nothing was enqueued");
    }
    std::sort(hosts.begin(), hosts.end());
    pinned[placement.Key()] = std::move(hosts);
  }
  return pinned;
}

void SweepIntake::AnswerIntake(const Intake& intake, const Message& reply) {
  for (const auto& [routing_id, request_id] : intake.clients) {
    Message answer = reply;
    answer.body["request_id"] = request_id;
    ctx_.Reply(Side::kClients, routing_id, std::move(answer));
  }
}

void SweepIntake::AdvanceIntake() {
  // Those whose last slice was committed (a failed commit would have taken it back).
  intakes_.erase(std::remove_if(intakes_.begin(), intakes_.end(),
                                [](const Intake& intake) { return intake.finished; }),
                 intakes_.end());
  if (ctx_.round.open()) RoundBegins();  // as they stand before this round's slice
  auto unanswered = std::find_if(intakes_.begin(), intakes_.end(),
                                 [](const Intake& intake) { return intake.sweep_id == 0; });
  auto storing = std::find_if(intakes_.begin(), intakes_.end(), [](const Intake& intake) {
    return intake.sweep_id != 0 && !intake.finished;
  });
  if (unanswered == intakes_.end() && storing == intakes_.end()) return;
  // Answers and stores in turns: neither the tenth of ten large submits waits for the
  // nine before it to be stored, nor do the agents wait for it to be checked.
  const bool check =
      storing == intakes_.end() || (unanswered != intakes_.end() && intake_checks_turn_);
  intake_checks_turn_ = !check;
  if (!check) return StoreSlice(*storing);
  Intake& intake = *unanswered;
  if (!CheckOrAccept(intake)) {
    intakes_.erase(unanswered);  // nothing of it was written
    return;
  }
  if (intake.sweep_id != 0) StoreSlice(intake);  // the first slice goes with the answer
}

bool SweepIntake::CheckOrAccept(Intake& intake) {
  const size_t count = intake.sweep.combination_count;
  if (intake.checked < count) {
    const size_t slice = std::min(kIntakeCheckCombinations, count - intake.checked);
    Status checked = intake.sweep.CheckCombinations(intake.checked, slice);
    if (checked.ok() && intake.checked + slice == count) checked = intake.sweep.CheckJobsLeft();
    if (!checked.ok()) {
      if (intake.firing)
        RecordFiringRefused(ctx_.store.schedules(), ctx_.counters.store_errors, *intake.firing,
                            checked.message());
      AnswerIntake(intake, MakeError(checked));
      return false;
    }
    intake.checked += slice;
    if (intake.checked < count || !intake.whole) return true;
  }
  auto pinned = PinAgents(intake.sweep);
  if (!pinned.ok()) {
    if (intake.firing)
      RecordFiringRefused(ctx_.store.schedules(), ctx_.counters.store_errors, *intake.firing,
                          pinned.status().message());
    AnswerIntake(intake, MakeError(pinned.status()));
    return false;
  }
  auto accepted = ctx_.store.jobs().AcceptSweep(intake.sweep, *pinned, intake.submission_id);
  if (!accepted.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot store sweep \"" << intake.sweep.name
                                      << "\": " << accepted.status().message());
    AnswerIntake(intake,
                 MakeError(Unavailable("the coordinator could not store the sweep (" +
                                       accepted.status().message() + "); nothing was enqueued")));
    return false;
  }
  intake.sweep_id = accepted->sweep_id;
  intake.pinned = std::move(*pinned);
  if (intake.firing && !accepted->existing)
    RecordFiringStored(ctx_.store.schedules(), ctx_.counters.store_errors, *intake.firing,
                       intake.sweep_id);
  LOG_INFO("sweep " << intake.sweep_id << " \"" << intake.sweep.name << "\": " << accepted->jobs
                    << " jobs" << (intake.whole ? "" : ", stored a slice per round"));
  // Sent after this round's commit, like every reply: the sweep is durable then.
  AnswerIntake(intake, Submitted(nullptr, *accepted, intake.sweep.checked));
  intake.clients.clear();
  return true;
}

void SweepIntake::StoreSlice(Intake& intake) {
  const size_t count = intake.sweep.combination_count;
  // Jobs per combination: one, or one per agent of its device.
  size_t per_combination = 1;
  for (const auto& [device, hosts] : intake.pinned)
    per_combination = std::max(per_combination, hosts.size());
  const size_t slice = std::max<size_t>(1, kIntakeStoreJobs / per_combination);
  auto stored = ctx_.store.jobs().StoreJobs(intake.sweep_id, intake.sweep, intake.pinned,
                                            intake.next_combination, slice);
  if (!stored.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("sweep " << intake.sweep_id << ": cannot store its jobs from combination "
                       << intake.next_combination
                       << " (tried again next round): " << stored.status().message());
    return;
  }
  if (!*stored) {
    LOG_INFO("sweep " << intake.sweep_id << " was cancelled: its jobs from combination "
                      << intake.next_combination << " on are not stored");
    intake.finished = true;
    return;
  }
  intake.next_combination = std::min(count, intake.next_combination + slice);
  if (intake.next_combination >= count) {
    LOG_INFO("sweep " << intake.sweep_id << ": every job stored");
    intake.finished = true;
  }
  Status reloaded = dispatcher_.ReloadRequirements();
  if (!reloaded.ok()) LOG_ERROR("cannot read requirements: " << reloaded.message());
}

Status SweepIntake::ResumeIntakes() {
  ASSIGN_OR_RETURN(std::vector<UnstoredSweep> unstored, ctx_.store.jobs().UnstoredSweeps());
  for (UnstoredSweep& left : unstored) {
    auto sweep = ParseSweepShape(left.spec);
    if (!sweep.ok()) {
      // It parsed when it was accepted; only a change of the rules since can do this.
      LOG_ERROR("sweep " << left.sweep_id << ": its stored spec no longer parses ("
                         << sweep.status().message() << "); its jobs from combination "
                         << left.next_combination << " on are not stored");
      continue;
    }
    sweep->default_processes = ctx_.options.default_processes;
    // What its packages need (the jobs still to store carry it, as those stored did).
    if (Status packages = ReadPackages(sweep->source, &*sweep); !packages.ok()) {
      LOG_ERROR("sweep " << left.sweep_id << ": " << packages.message()
                         << "; its jobs from combination " << left.next_combination
                         << " on are stored without the torch their package needs");
    }
    Intake intake;
    intake.serial = ++intake_serial_;
    intake.sweep = std::move(*sweep);
    intake.checked = intake.sweep.combination_count;
    intake.sweep_id = left.sweep_id;
    intake.pinned = std::move(left.pinned);
    intake.next_combination = left.next_combination;
    LOG_INFO("sweep " << intake.sweep_id << ": storing its jobs again from combination "
                      << intake.next_combination << " of " << intake.sweep.combination_count);
    intakes_.push_back(std::move(intake));
  }
  return Status::Ok();
}

void SweepIntake::RoundBegins() {
  intakes_at_round_start_.clear();
  for (const Intake& intake : intakes_) {
    intakes_at_round_start_.push_back({intake.serial, intake.sweep_id, intake.next_combination});
  }
}

void SweepIntake::RoundFailed() {
  for (auto it = intakes_.begin(); it != intakes_.end();) {
    auto mark = std::find_if(intakes_at_round_start_.begin(), intakes_at_round_start_.end(),
                             [&](const IntakeMark& m) { return m.serial == it->serial; });
    const bool accepted_before = mark != intakes_at_round_start_.end() && mark->sweep_id != 0;
    if (it->sweep_id != 0 && !accepted_before) {
      // Accepted in this round: its clients are told nothing was kept, and may send again.
      it = intakes_.erase(it);
      continue;
    }
    if (mark != intakes_at_round_start_.end()) {
      it->next_combination = mark->next_combination;
      it->finished = false;
    }
    ++it;
  }
}

}  // namespace benchfleet
