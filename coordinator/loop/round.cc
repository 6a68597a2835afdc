#include "coordinator/loop/round.h"

#include "common/clock.h"
#include "common/log.h"

namespace benchfleet {

void Round::Begin() {
  if (open_) return;
  open_ = true;
  for (RoundParticipant* p : participants_) p->RoundBegins();
  store_.OpenGroup();
}

Status Round::End() {
  if (!open_) return Status::Ok();
  open_ = false;
  // A round that wrote nothing commits nothing: it is not a commit to time.
  const bool timed = commit_seconds_ != nullptr && store_.GroupWrote();
  const MonoTime commit_started = timed ? MonoNow() : MonoTime();
  const Status committed = store_.CommitGroup();
  if (timed)
    commit_seconds_->Record(std::chrono::duration<double>(MonoNow() - commit_started).count());
  if (committed.ok()) {
    for (RoundParticipant* p : participants_) p->RoundCommitted();
  } else {
    LOG_ERROR(
        "could not commit a round of work, so all of it is undone (agents send their "
        "results again): "
        << committed.message());
    for (auto it = participants_.rbegin(); it != participants_.rend(); ++it) (*it)->RoundFailed();
  }
  std::vector<Outgoing> outgoing = std::move(outgoing_);
  outgoing_.clear();
  const int64_t committed_at_us = UnixMicrosNow();
  for (Outgoing& out : outgoing) {
    if (!committed.ok() && out.message.type != msg::kError) {
      // Nothing this round wrote was kept. Agents are told nothing; clients learn why.
      if (out.side == Side::kClients) {
        (void)outlet_.Send(Side::kClients, out.routing_id,
                           MakeError(Unavailable("the coordinator's store is unavailable and kept "
                                                 "nothing of this request (" +
                                                 committed.message() + ")"),
                                     out.message.body.value("request_id", json())));
      }
      continue;
    }
    SendHeld(out, committed_at_us);
  }
  return committed;
}

void Round::SendHeld(Outgoing& out, int64_t committed_at_us) {
  if (out.hand_out) {
    // An offer whose lease ended during the round (its agent was dropped, the attempt
    // lost and requeued) is not sent: the job would run for nothing.
    if (offers_ == nullptr || !offers_->StillLeased(*out.hand_out)) return;
    if (out.encoded.empty()) {
      out.message.body["committed_at_us"] = committed_at_us;
    } else {
      // Encoded in the round, before its commit time was known: an encoded object ends
      // with '}', and the field goes in before it.
      out.encoded.pop_back();
      out.encoded += ",\"committed_at_us\":" + std::to_string(committed_at_us) + "}";
    }
  }
  const Status sent = out.encoded.empty() ? outlet_.Send(out.side, out.routing_id, out.message)
                                          : outlet_.SendEncoded(out.side, out.routing_id,
                                                                out.message.type, out.encoded);
  if (!out.hand_out) return;
  if (sent.ok()) {
    offers_->OfferSent(*out.hand_out);
  } else {
    offers_->OfferUndelivered(*out.hand_out, out.routing_id, sent);
  }
}

Status Round::Send(Side side, const std::string& routing_id, Message message) {
  if (open_) {
    Hold(side, routing_id, std::move(message), std::nullopt);
    return Status::Ok();
  }
  return outlet_.Send(side, routing_id, message);
}

bool Round::SendOffer(const std::string& routing_id, Message offer, const Lease& lease) {
  if (open_) {
    Hold(Side::kAgents, routing_id, std::move(offer), lease);
    return true;
  }
  offer.body["committed_at_us"] = UnixMicrosNow();  // outside a round each write commits at once
  const Status sent = outlet_.Send(Side::kAgents, routing_id, offer);
  if (!sent.ok()) {
    if (offers_ != nullptr) offers_->OfferUndelivered(lease, routing_id, sent);
    return false;
  }
  return true;
}

void Round::Hold(Side side, const std::string& routing_id, Message message,
                 std::optional<Lease> hand_out) {
  std::string encoded = outlet_.takes_encoded() ? Encode(message) : std::string();
  outgoing_.push_back(
      {side, routing_id, std::move(message), std::move(hand_out), std::move(encoded)});
}

}  // namespace benchfleet
