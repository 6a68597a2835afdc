#include "coordinator/loop/context.h"

#include "common/log.h"

namespace benchfleet {
namespace {

// Malformed messages logged one by one before logging thins out to one in 1000.
constexpr int64_t kMalformedLoggedInFull = 10;

}  // namespace

void CoordinatorContext::Refuse(Side side, const std::string& routing_id, const Status& status,
                                const json& request_id) const {
  ++counters.malformed_messages;
  // Logged sparingly: a flood of garbage must not become a flood of log lines.
  if (counters.malformed_messages <= kMalformedLoggedInFull ||
      counters.malformed_messages % 1000 == 0) {
    LOG_WARN("refused a message from " << (side == Side::kAgents ? "an agent" : "a client")
                                       << " peer (" << counters.malformed_messages
                                       << " so far): " << status.message());
  }
  Reply(side, routing_id, MakeError(status, request_id));
}

}  // namespace benchfleet
