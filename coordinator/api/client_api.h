// ClientApi: the coordinator's answers to the `benchfleet` CLI (schemas/protocol.md,
// "Client ↔ coordinator"). Each request is parsed once, here, into its typed struct and
// answered, or handed on: a submit to the sweep intake, a schedule request to the
// schedule runner, reads (results, query, a schedule's history) to the query thread,
// and a prune to short steps of its own between rounds.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/client_replies.h"
#include "common/messages.h"
#include "common/roles.h"
#include "coordinator/fleet/agent_sessions.h"
#include "coordinator/fleet/dispatcher.h"
#include "coordinator/intake/schedule_runner.h"
#include "coordinator/intake/sweep_intake.h"
#include "coordinator/loop/context.h"
#include "coordinator/results/sweep_progress.h"
#include "coordinator/store/pruner.h"
#include "coordinator/store/query_runner.h"

namespace benchfleet {

class ClientApi {
 public:
  struct Parts {
    Dispatcher& dispatcher;
    AgentSessions& sessions;
    ScheduleRunner& schedules;
    const SweepProgress& progress;
    QueryRunner& reads;
    SweepIntake& intake;  // a submit: the reply, or nullopt when it is answered later
  };
  ClientApi(const CoordinatorContext& context, Parts parts)
      : ctx_(context), parts_(std::move(parts)) {}

  // A client's request: its reply, or nullopt when it is answered later (a large
  // submit, a read, a prune) or was refused as malformed (the refusal is sent). A
  // request that `role` may not send (common/roles.h) is answered with a
  // permission_denied error naming the role needed and the role held, and nothing is
  // done for it.
  std::optional<Message> Reply(const std::string& routing_id, const Message& message, Role role);
  // Hands a read to the query thread: nullopt, or the error when too many wait.
  std::optional<Message> PostRead(ReadRequest request);
  // A step of the prune under way, if any (outside the rounds: its own short
  // transactions); its client is answered once it is done.
  void AdvancePrune();
  bool pruning() const { return prune_.has_value(); }

 private:
  Message StatusReply(const json& request_id, const SweepRequest& request);
  Message Cancel(const json& request_id, const SweepRequest& request);
  Message Calibrate(const json& request_id, const CalibrateRequest& request);
  // Starts `benchfleet prune`; its reply comes from AdvancePrune once done.
  std::optional<Message> StartPrune(const std::string& routing_id, const json& request_id,
                                    const PruneRequest& request);

  const CoordinatorContext& ctx_;
  Parts parts_;
  // The prune under way, if any, and whom to answer.
  struct PendingPrune {
    std::string routing_id;
    json request_id;
    SamplePruner pruner;
  };
  std::optional<PendingPrune> prune_;
};

}  // namespace benchfleet
