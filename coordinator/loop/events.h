// What a component needs done by another it may not call (coordinator/'s folders point
// one way: tests/layering_test.sh): it tells the loop, which routes it. The loop (the
// Coordinator) exists before any component, so no wiring depends on the order in which
// they are made, and no component holds a call back into one that holds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/messages.h"
#include "common/protocol.h"
#include "coordinator/store/query_runner.h"

namespace benchfleet {

struct ScheduledFiring;  // coordinator/intake/schedule_runner.h

class LoopEvents {
 public:
  virtual ~LoopEvents() = default;
  // The dispatcher found an agent gone: an offer to it could not be sent (the ROUTER
  // knows no connection to it). It leaves the registry now, its leases with it.
  virtual void AgentUnreachable(const std::string& routing_id, const std::string& reason) = 0;
  // The dispatcher ended an attempt of a gang spread over agents: the ranks' results
  // gathered so far are forgotten.
  virtual void GangStopped(int64_t job_id) = 0;
  // A schedule's sweep to take in (SweepIntake): the reply for a client (run_now; none
  // when it is answered later), none for a firing, whose outcome is recorded.
  virtual std::optional<Message> SubmitScheduled(const std::string& routing_id,
                                                 const json& request_id,
                                                 const SubmitRequest& request,
                                                 const ScheduledFiring& firing) = 0;
  // A read for the query thread (a schedule's history): nullopt when it went there, or
  // the error when too many wait.
  virtual std::optional<Message> PostRead(ReadRequest request) = 0;
};

}  // namespace benchfleet
