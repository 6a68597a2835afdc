#include "coordinator/results/result_acceptor.h"

#include <algorithm>

#include "common/log.h"
#include "common/rank_results.h"
#include "common/result_fields.h"
#include "coordinator/store/process_results.h"

namespace benchfleet {

ResultAck::Outcome AckOutcome(ResultOutcome outcome) {
  switch (outcome) {
    case ResultOutcome::kStored:
      return ResultAck::Outcome::kStored;
    case ResultOutcome::kDuplicate:
      return ResultAck::Outcome::kDuplicate;
    case ResultOutcome::kStale:
    case ResultOutcome::kStaleAgain:
      return ResultAck::Outcome::kStale;
    case ResultOutcome::kRejected:
      return ResultAck::Outcome::kRejected;
  }
  return ResultAck::Outcome::kRejected;
}

void ResultAcceptor::Reject(Agent& agent, const JobAttempt& job, const std::string& reason) {
  ++ctx_.counters.malformed_messages;
  ++ctx_.counters.rejected_results;
  LOG_WARN("result of job " << job.job_id << " attempt " << job.attempt << " from "
                            << agent.description.name << " rejected: " << reason);
  ctx_.Reply(
      Side::kAgents, agent.routing_id,
      ToMessage(ErrorReport{StatusCodeName(StatusCode::kInvalidArgument), reason, job, nullptr}));
  // The ack lets the agent drop the result from its spool: it can never be stored, so
  // it must not come back after every reconnect.
  ctx_.Reply(Side::kAgents, agent.routing_id,
             ToMessage(ResultAck{job, ResultAck::Outcome::kRejected, reason}));
  // The attempt produced nothing usable: it is lost like a silent agent's.
  if (const Lease* lease = ctx_.leases.Find(job.job_id);
      lease && lease->HeldBy(agent.description.name, job.attempt)) {
    dispatcher_.Lose(job.job_id, "its result was rejected: " + reason);
  }
}

void ResultAcceptor::ReleaseLease(const JobAttempt& job, std::string_view reason) {
  if (const Lease* lease = ctx_.leases.Find(job.job_id); lease && lease->attempt == job.attempt) {
    ctx_.leases.Release(job.job_id, reason);
  }
}

void ResultAcceptor::Accept(Agent& agent, const Message& message) {
  auto report = ResultReport::FromJson(message.body);
  if (!report.ok()) return ctx_.Refuse(Side::kAgents, agent.routing_id, report.status());
  const JobAttempt job = report->job;
  auto result = ParseWorkerResult(*report->result);
  if (!result.ok()) return Reject(agent, job, result.status().message());
  if (result->job_id && *result->job_id != job.job_id) {
    return Reject(agent, job,
                  "result.job_id: " + std::to_string(*result->job_id) +
                      " differs from the message's job_id " + std::to_string(job.job_id));
  }
  if (result->attempt && *result->attempt != job.attempt) {
    return Reject(agent, job,
                  "result.attempt: " + std::to_string(*result->attempt) +
                      " differs from the message's attempt " + std::to_string(job.attempt));
  }
  if (AcceptGangRank(agent, job, *result, *report->result)) return;
  if (result->versus) return AcceptPair(agent, job, std::move(*result), *report->result);
  // A process of a repeated job (schemas/sweep.md, Processes): kept until the last.
  auto step = ctx_.store.processes().Record(job.job_id, job.attempt, agent.host_id,
                                            agent.description.name, *result, *report->result);
  if (!step.ok()) {
    ++ctx_.counters.store_errors;  // no ack: the agent sends it again
    LOG_ERROR("cannot keep the process of job " << job.job_id << " attempt " << job.attempt << ": "
                                                << step.status().message());
    return;
  }
  if (step->kind == ProcessStep::Kind::kQueuedAgain ||
      step->kind == ProcessStep::Kind::kDuplicate) {
    const bool kept = step->kind == ProcessStep::Kind::kQueuedAgain;
    if (kept) {
      LOG_INFO("job " << job.job_id << " process " << step->results.size() << " done on "
                      << agent.description.name << "; queued for the next");
    } else {
      ++ctx_.counters.duplicate_results;
    }
    agent.refusal_backoff_ms = 0;
    ReleaseLease(job,
                 kept ? "its process's result came" : "a duplicate of its process's result came");
    ctx_.Reply(Side::kAgents, agent.routing_id,
               ToMessage(ResultAck{
                   job, kept ? ResultAck::Outcome::kStored : ResultAck::Outcome::kDuplicate, ""}));
    if (kept) {
      // The job waits on its agent's own requirement, perhaps a new one.
      if (Status reloaded = dispatcher_.ReloadRequirements(); !reloaded.ok()) {
        LOG_ERROR("cannot read requirements: " << reloaded.message());
      }
      dispatcher_.MarkQueued();
    }
    dispatcher_.Dispatch();
    return;
  }
  if (step->kind == ProcessStep::Kind::kComplete) {
    auto combined = ParseWorkerResult(CombineProcesses(*step));
    if (!combined.ok())
      return Reject(agent, job, "its processes do not combine: " + combined.status().message());
    *result = std::move(*combined);
  }
  std::string rejection;
  std::optional<JudgedResult> judged;
  auto outcome = ctx_.store.results().Write(job.job_id, job.attempt, agent.host_id,
                                            agent.description.name, *result, &rejection, &judged);
  if (!outcome.ok()) {
    // No ack: the agent keeps the result spooled and sends it again.
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot store result of job " << job.job_id << " attempt " << job.attempt << ": "
                                            << outcome.status().message());
    return;
  }
  if (*outcome == ResultOutcome::kRejected) return Reject(agent, job, rejection);
  Written(job, agent.description.name, *outcome, *result, judged);
  agent.refusal_backoff_ms = 0;
  ReleaseLease(job, "its result came");
  ctx_.Reply(Side::kAgents, agent.routing_id, ToMessage(ResultAck{job, AckOutcome(*outcome), ""}));
  dispatcher_.Dispatch();
}

void ResultAcceptor::AcceptPair(Agent& agent, const JobAttempt& job, WorkerResult result,
                                const json& sent) {
  auto step = ctx_.store.pairs().Record(job.job_id, job.attempt, agent.host_id,
                                        agent.description.name, result, sent);
  if (!step.ok()) {
    if (step.status().code() == StatusCode::kInvalidArgument)
      return Reject(agent, job, step.status().message());
    ++ctx_.counters.store_errors;  // no ack: the agent sends it again
    LOG_ERROR("cannot keep the pair of job " << job.job_id << " attempt " << job.attempt << ": "
                                             << step.status().message());
    return;
  }
  using Kind = PairStep::Kind;
  if (step->kind == Kind::kQueuedAgain || step->kind == Kind::kDuplicate) {
    const bool kept = step->kind == Kind::kQueuedAgain;
    if (kept) {
      LOG_INFO("job " << job.job_id << " pair done on " << agent.description.name
                      << "; queued for the next");
    } else {
      ++ctx_.counters.duplicate_results;
    }
    agent.refusal_backoff_ms = 0;
    ReleaseLease(job, kept ? "its pair's result came" : "a duplicate of its pair's result came");
    ctx_.Reply(Side::kAgents, agent.routing_id,
               ToMessage(ResultAck{
                   job, kept ? ResultAck::Outcome::kStored : ResultAck::Outcome::kDuplicate, ""}));
    if (kept) {
      if (Status reloaded = dispatcher_.ReloadRequirements(); !reloaded.ok()) {
        LOG_ERROR("cannot read requirements: " << reloaded.message());
      }
      dispatcher_.MarkQueued();
    }
    dispatcher_.Dispatch();
    return;
  }
  WorkerResult side_a = std::move(result);
  side_a.versus.reset();
  side_a.detail.erase("versus");
  if (step->kind == Kind::kFailed) {
    // The pair failed: side A's job fails with the reason (its side B with it).
    side_a.ok = false;
    side_a.error = step->error;
    side_a.detail["ok"] = false;
    side_a.detail["error"] = step->error;
  } else if (step->kind == Kind::kComplete) {
    auto a = ParseWorkerResult(step->a_result);
    auto b = ParseWorkerResult(step->b_result);
    if (!a.ok() || !b.ok()) {
      return Reject(agent, job,
                    "its pairs do not combine: " + (a.ok() ? b.status() : a.status()).message());
    }
    // Side B first, under this hand-out: side A's result ends the pair.
    if (Status armed = ctx_.store.pairs().ArmSideB(step->b_job_id, job.attempt, agent.host_id);
        !armed.ok()) {
      ++ctx_.counters.store_errors;
      LOG_ERROR("cannot store side B of job " << job.job_id << ": " << armed.message());
      return;
    }
    std::string rejection;
    std::optional<JudgedResult> judged;
    auto outcome = ctx_.store.results().Write(step->b_job_id, job.attempt, agent.host_id,
                                              agent.description.name, *b, &rejection, &judged);
    if (!outcome.ok()) {
      ++ctx_.counters.store_errors;
      LOG_ERROR("cannot store side B (job " << step->b_job_id << ") of job " << job.job_id << ": "
                                            << outcome.status().message());
      return;
    }
    if (*outcome == ResultOutcome::kRejected) return Reject(agent, job, rejection);
    Written({step->b_job_id, job.attempt}, agent.description.name, *outcome, *b, judged);
    side_a = std::move(*a);
  }
  std::string rejection;
  std::optional<JudgedResult> judged;
  auto outcome = ctx_.store.results().Write(job.job_id, job.attempt, agent.host_id,
                                            agent.description.name, side_a, &rejection, &judged);
  if (!outcome.ok()) {
    ++ctx_.counters.store_errors;
    LOG_ERROR("cannot store result of job " << job.job_id << " attempt " << job.attempt << ": "
                                            << outcome.status().message());
    return;
  }
  if (*outcome == ResultOutcome::kRejected) return Reject(agent, job, rejection);
  Written(job, agent.description.name, *outcome, side_a, judged);
  agent.refusal_backoff_ms = 0;
  ReleaseLease(job, "its pair's result came");
  ctx_.Reply(Side::kAgents, agent.routing_id, ToMessage(ResultAck{job, AckOutcome(*outcome), ""}));
  dispatcher_.Dispatch();
}

void ResultAcceptor::Written(const JobAttempt& job, const std::string& agent, ResultOutcome outcome,
                             const WorkerResult& result,
                             const std::optional<JudgedResult>& judged) {
  switch (outcome) {
    case ResultOutcome::kRejected:
      return;  // the caller rejects it, and loses the attempt
    case ResultOutcome::kStored:
      ++ctx_.counters.results_stored;
      if (!result.ok) {
        ++ctx_.counters.failed_jobs;
        LOG_WARN("job " << job.job_id << " failed on " << agent << ": " << result.error);
      }
      if (judged) {
        progress_.ResultArrived(judged->sweep_id);
        judge_.Judge(*judged);
        if (judge_.TakeRerunsQueued()) {
          // Reruns wait on requirements of their own, perhaps new ones.
          if (Status reloaded = dispatcher_.ReloadRequirements(); !reloaded.ok()) {
            LOG_ERROR("cannot read requirements: " << reloaded.message());
          }
        }
      }
      return;
    case ResultOutcome::kDuplicate:
    case ResultOutcome::kStaleAgain:
      ++ctx_.counters.duplicate_results;
      return;
    case ResultOutcome::kStale:
      ++ctx_.counters.stale_results;
      LOG_WARN("stale result for job " << job.job_id << " attempt " << job.attempt << " from "
                                       << agent << " recorded, not counted");
      return;
  }
}

bool ResultAcceptor::AcceptGangRank(Agent& agent, const JobAttempt& job, const WorkerResult& result,
                                    const json& sent) {
  const Lease* found = ctx_.leases.Find(job.job_id);
  if (found == nullptr || found->ranks.empty() || found->attempt != job.attempt) return false;
  const std::vector<std::string> holders = found->Holders();
  const auto at = std::find(holders.begin(), holders.end(), agent.description.name);
  if (at == holders.end()) return false;
  const Lease lease = *found;
  // The rank is the one this agent was given, whatever the result says.
  const int64_t rank = at - holders.begin();
  const int64_t world_size = static_cast<int64_t>(holders.size());
  // A rank's failure written by its agent (a crash, a timeout) may not echo its rank.
  json detail = result.detail;
  if (FindPath(detail, "distributed.rank") == nullptr) {
    if (!detail.contains("distributed")) detail["distributed"] = json::object();
    detail["distributed"]["rank"] = rank;
  }
  auto entry = ParseRankEntry(detail, "result");
  if (!entry.ok()) {
    Reject(agent, job, entry.status().message());
    return true;
  }
  if (entry->rank != rank) {
    Reject(agent, job,
           "result.distributed.rank: " + std::to_string(entry->rank) + " is not the rank " +
               std::to_string(rank) + " this agent was given");
    return true;
  }
  GangResults& gang = gang_results_[job.job_id];
  if (gang.attempt != job.attempt) gang = GangResults{job.attempt, {}};
  json as_sent = sent;  // its raw samples and profile kept: rank 0's are the job's
  if (!as_sent.contains("distributed") || !as_sent["distributed"].is_object())
    as_sent["distributed"] = json::object();
  as_sent["distributed"]["rank"] = rank;
  gang.ranks[rank] = GangResults::Rank{agent.host_id, std::move(as_sent)};
  LOG_INFO("job " << job.job_id << " rank " << rank << " of " << world_size << " on "
                  << agent.description.name << ": " << (result.ok ? "done" : result.error));
  const bool failed = !result.ok;
  if (!failed && static_cast<int64_t>(gang.ranks.size()) < world_size)
    return true;  // acked once all are in

  // The job's one result: rank 0's, with every rank's; or the failure of the rank that
  // failed, with the ranks heard from so far. Combined as the agent combines the ranks
  // it runs itself, then read as any result is.
  std::vector<json> by_rank(static_cast<size_t>(world_size));
  for (const auto& [r, item] : gang.ranks) by_rank[static_cast<size_t>(r)] = item.sent;
  std::optional<RankFailure> failure;
  if (failed) failure = RankFailure{rank, " on agent " + agent.description.name};
  json whole = CombineRanks(std::move(by_rank), failure, /*replicas=*/false);
  // The ranks heard from so far may be fewer than the gang's (one failed first): each
  // entry is read on its own, the result without them.
  json entries = std::move(whole["ranks"]);
  whole.erase("ranks");
  auto parsed = ParseWorkerResult(whole);
  if (!parsed.ok()) {
    Reject(agent, job, parsed.status().message());
    return true;
  }
  WorkerResult combined = std::move(*parsed);
  auto heard = gang.ranks.begin();
  for (const json& entry : entries) {
    auto rank_entry = ParseRankEntry(entry, "result");
    if (!rank_entry.ok()) {
      Reject(agent, job, rank_entry.status().message());
      return true;
    }
    rank_entry->host_id = heard++->second.host_id;  // each rank ran on its own agent's host
    combined.ranks.push_back(std::move(*rank_entry));
  }
  Agent* rank0 = ctx_.registry.FindByName(lease.agent);
  const int64_t host_id = failed ? agent.host_id : (rank0 ? rank0->host_id : agent.host_id);
  std::string rejection;
  std::optional<JudgedResult> judged;
  auto outcome = ctx_.store.results().Write(job.job_id, job.attempt, host_id, lease.agent, combined,
                                            &rejection, &judged);
  if (!outcome.ok()) {
    ++ctx_.counters.store_errors;  // no ack: the ranks' agents send their results again
    LOG_ERROR("cannot store the result of gang job " << job.job_id << ": "
                                                     << outcome.status().message());
    return true;
  }
  if (*outcome == ResultOutcome::kRejected) {
    gang_results_.erase(job.job_id);
    Reject(agent, job, rejection);  // the attempt is lost, every rank stopped
    return true;
  }
  // Judged, counted and its sweep's progress told as any other job's result.
  Written(job, failed ? agent.description.name : lease.agent, *outcome, combined, judged);
  // Every rank heard from is acknowledged; the others are stopped.
  std::vector<std::string> acked;
  for (const auto& [r, item] : gang.ranks) acked.push_back(holders[static_cast<size_t>(r)]);
  gang_results_.erase(job.job_id);
  ctx_.leases.Release(job.job_id, "its ranks' result came");
  for (const std::string& name : holders) {
    Agent* holder = ctx_.registry.FindByName(name);
    if (holder == nullptr) continue;
    holder->refusal_backoff_ms = 0;
    if (std::find(acked.begin(), acked.end(), name) != acked.end()) {
      ctx_.Reply(Side::kAgents, holder->routing_id,
                 ToMessage(ResultAck{job, AckOutcome(*outcome), ""}));
    } else {
      ctx_.Reply(Side::kAgents, holder->routing_id,
                 ToMessage(StopOrder{job, combined.error.substr(0, 1000)}));
    }
  }
  dispatcher_.Dispatch();
  return true;
}

}  // namespace benchfleet
