// How the agent goes: by itself when its exit policy says so (--exit-when-idle,
// --max-jobs; agent/exit_policy.h), or when told to stop (Run); either way it says `leave`.
#include "agent/agent.h"
#include "common/log.h"

namespace benchfleet {
namespace {

// How long a leaving agent's last message (`leave`) may take to go out before its socket
// closes: the coordinator is on a live connection, so milliseconds; an agent that
// could not send it is taken for gone at its next heartbeat anyway.
constexpr int kLeaveLingerMs = 1000;

}  // namespace

void AgentDaemon::Leave(const std::string& reason) {
  if (left_) return;
  const LeaveNotice notice{reason, CurrentJob()};
  runner_->Kill();
  if (socket_ && registered_) {
    Send(ToMessage(notice));
    socket_->set(zmq::sockopt::linger, kLeaveLingerMs);
  }
  socket_.reset();
  left_ = true;
  const size_t spooled = spool_->size();
  LOG_INFO("leaving: " << reason
                       << (notice.running
                               ? "; stopped job " + std::to_string(notice.running->job_id)
                               : std::string())
                       << (spooled > 0 ? "; " + std::to_string(spooled) +
                                             " results stay in the spool, sent by the next agent "
                                             "started with state dir " +
                                             options_.state_dir
                                       : std::string()));
}

void AgentDaemon::LeaveWhenDue() {
  if (Busy()) exit_->Active(Now());
  if (auto reason = exit_->Due(Now(), Busy(), spool_->size())) Leave(*reason);
}

}  // namespace benchfleet
