// SweepIntake: sweeps taken in (docs/scheduling.md). Every sweep goes the same way:
// checked, accepted (its row stored and its client answered), then its jobs stored. A
// small one takes all three steps within its request; a large one a slice per round,
// so that a 100,000-job submit never holds up anyone else's request, or the agents,
// for more than a slice.
// Schedules' firings come in the same way, with no client: what became of them is
// recorded. A resend with the same submission id is answered with the first sweep.
//
// It joins every round: the intakes' positions are marked when a round begins and go
// back to them when its commit fails.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/messages.h"
#include "common/sweep.h"
#include "coordinator/fleet/agent_sessions.h"
#include "coordinator/fleet/dispatcher.h"
#include "coordinator/intake/schedule_runner.h"
#include "coordinator/loop/context.h"

namespace benchfleet {

// The `submitted` reply (schemas/protocol.md) for a stored sweep: a submit's, a
// resend's, a calibration's.
Message Submitted(const json& request_id, const StoredSweep& stored,
                  const CombinationTally& tally = {});

class SweepIntake : public RoundParticipant {
 public:
  SweepIntake(const CoordinatorContext& context, Dispatcher& dispatcher)
      : ctx_(context), dispatcher_(dispatcher) {}

  // The reply when the sweep is refused before it is taken in (it does not parse, the
  // store cannot be read, too many large ones wait) or was stored before under the same
  // submission id; otherwise nullopt: the sweep is answered once checked and accepted,
  // a small one in this round, a large one by AdvanceIntake. A schedule's firing
  // submits through the same path, with `firing` set and no client (an empty routing
  // id): what became of it is recorded, not answered.
  std::optional<Message> Submit(const std::string& routing_id, const json& request_id,
                                const SubmitRequest& request,
                                const ScheduledFiring* firing = nullptr);
  // One slice of the large submits: check combinations of the oldest not yet answered
  // (then accept it and answer), or store jobs of the oldest answered, in turns when
  // there are both. Run by the loop's timer work, so its writes join the round's commit.
  void AdvanceIntake();
  // At start: sweeps accepted whose jobs are not all stored go on where they stopped.
  Status ResumeIntakes();
  // Whether large submits wait to be checked or stored (the loop then does not sleep).
  bool busy() const { return !intakes_.empty(); }

  // The intakes' positions at the start of a round, and back to them when the round's
  // commit fails.
  void RoundBegins() override;
  void RoundFailed() override;

 private:
  struct Intake;
  StatusOr<PinnedAgents> PinAgents(const Sweep& sweep);
  // Reads what each AOTInductor package `document` names by sha256 was compiled for
  // (device, torch) into sweep->packages; an error names the sweep field of a file that
  // is no package.
  Status ReadPackages(const json& document, Sweep* sweep);
  // An error naming the sweep field and the torch versions the fleet has when no worker
  // of any registered agent satisfies `needs` (of placement `key`).
  Status CheckWorkers(const Sweep& sweep, const std::string& key, const WorkerNeeds& needs) const;
  // A pair's placement (the sweep's versus): side B's worker must be in the fleet and a
  // duet's CPUs on some agent that runs the sweep's jobs (errors name versus.AXIS[1] and
  // versus.pairing); `requirement` gains what the pair asks of one agent (SelectWithVersus).
  Status CheckPair(const Sweep& sweep, const JobPlacement& placement,
                   JobRequirement* requirement) const;
  // An error naming matrix.thread_placement[i] when a combination asks for a placement
  // that no registered agent able to run it can give (spread on one core), by the rule
  // the agent places by (common/thread_placement.h).
  Status CheckThreadPlacements(const Sweep& sweep) const;
  // Returns false when the intake ended (refused: its clients were told why).
  bool CheckOrAccept(Intake& intake);
  void StoreSlice(Intake& intake);
  void AnswerIntake(const Intake& intake, const Message& reply);
  // Intakes of large sweeps (each holds its parsed matrix), bounded by kMaxIntakes.
  size_t LargeIntakes() const;

  const CoordinatorContext& ctx_;
  Dispatcher& dispatcher_;
  // Large submits, oldest first, taken a slice per round: the combinations checked,
  // then the sweep's row stored and the clients answered, then its jobs stored in order.
  struct Intake {
    uint64_t serial = 0;
    Sweep sweep;
    std::string submission_id;
    std::vector<std::pair<std::string, json>> clients;  // routing id, request id
    size_t checked = 0;                                 // combinations checked so far
    int64_t sweep_id = 0;                               // once accepted
    PinnedAgents pinned;                                // once accepted
    size_t next_combination = 0;                        // the first whose jobs are not stored
    bool finished = false;                              // every job stored, or the sweep cancelled
    bool whole = false;  // small: checked, accepted and stored within its request
    std::optional<ScheduledFiring> firing;  // a schedule's, recorded once accepted or refused
  };
  std::deque<Intake> intakes_;
  uint64_t intake_serial_ = 0;
  bool intake_checks_turn_ = true;  // when some intakes wait for checks and some to store
  struct IntakeMark {
    uint64_t serial = 0;
    int64_t sweep_id = 0;
    size_t next_combination = 0;
  };
  std::vector<IntakeMark> intakes_at_round_start_;
};

}  // namespace benchfleet
