// How the agent goes: by itself when its exit policy says so (--exit-when-idle,
// --max-jobs; agent/exit_policy.h), or when told to stop (Run). Either way it says `leave`
// and waits for the coordinator's `left` before it closes the connection
// (schemas/protocol.md).
#include "agent/agent.h"
#include "common/log.h"
#include "common/transport.h"

namespace benchfleet {

void AgentDaemon::Leave(const std::string& reason) {
  if (left_ || leaving_until_) return;
  const LeaveNotice notice{reason, CurrentJob()};
  runner_->Kill();
  pair_runner_->Kill();
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
  if (!socket_ || !registered_) return Close();
  Send(ToMessage(notice));
  leaving_until_ = Now() + Millis(kLeaveAnswerMs);
}

void AgentDaemon::AwaitLeft(int wait_ms) {
  // Offers that crossed the leave are not run: the coordinator takes them back.
  if (PollReadable({socket_.get()}, wait_ms)[0]) {
    for (auto frames = ReceiveFrames(*socket_); frames.ok() && frames->has_value();
         frames = ReceiveFrames(*socket_)) {
      if ((*frames)->size() != 1) continue;
      auto message = Decode((*frames)->front());
      if (message.ok() && message->type == msg::kLeft) return Close();
    }
  }
  if (Now() >= *leaving_until_) {
    LOG_WARN("the coordinator did not answer the leave within " << kLeaveAnswerMs
                                                                << " ms; closing anyway");
    Close();
  }
}

void AgentDaemon::Close() {
  socket_.reset();
  left_ = true;
}

void AgentDaemon::LeaveWhenDue() {
  if (Busy()) exit_->Active(Now());
  if (auto reason = exit_->Due(Now(), Busy(), spool_->size())) Leave(*reason);
}

}  // namespace benchfleet
