// Round: the coordinator's group commit. Between Begin and End every store write joins
// one transaction, and every message that reports or depends on those writes (acks, job
// offers, replies) waits; End commits once, then sends them. When the commit fails, the
// round's writes are undone in memory too: every component that changes state in a round
// registered itself (RoundParticipant) and is told to undo, newest first; clients are
// told the store is unavailable, agents nothing (their results stay spooled and come
// again; offers were taken back). Heartbeats and read replies never wait for a round.
//
// Outside a round (tests driving the coordinator message by message) every write
// commits at once and every message is sent at once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coordinator/loop/lease_table.h"
#include "coordinator/loop/outlet.h"
#include "coordinator/store/store.h"
#include "metrics/histogram.h"

namespace benchfleet {

// A component whose memory a round changes.
class RoundParticipant {
 public:
  virtual ~RoundParticipant() = default;
  // A round begins: take the marks an undo goes back to.
  virtual void RoundBegins() {}
  // The round's commit failed: undo in memory what it did (the store undid its writes).
  virtual void RoundFailed() = 0;
  // The round committed: forget the marks.
  virtual void RoundCommitted() {}
};

// What the round asks of whoever hands out jobs about the offers it holds.
class OfferKeeper {
 public:
  virtual ~OfferKeeper() = default;
  // Whether `hand_out`'s lease still stands after the commit (its agent may have been
  // dropped and the attempt lost during the round: such an offer is not sent).
  virtual bool StillLeased(const Lease& hand_out) = 0;
  // The offer left: its lease runs from now.
  virtual void OfferSent(const Lease& hand_out) = 0;
  // The offer could not be sent: taken back.
  virtual void OfferUndelivered(const Lease& hand_out, const std::string& routing_id,
                                const Status& sent) = 0;
};

class Round {
 public:
  Round(Store& store, Outlet& outlet) : store_(store), outlet_(outlet) {}

  void set_offer_keeper(OfferKeeper* keeper) { offers_ = keeper; }
  // Participants are told in the order they joined when a round begins and commits,
  // and in reverse order when it fails. Not owned.
  void Join(RoundParticipant* participant) { participants_.push_back(participant); }
  // Each commit that had writes to make is timed into `histogram` (--metrics); null:
  // none is. Not owned.
  void set_commit_histogram(LatencyHistogram* histogram) { commit_seconds_ = histogram; }

  bool open() const { return open_; }
  void Begin();
  // Commits and sends what waited; returns the commit's status.
  Status End();

  // Sends now, or at the round's end when one is open. By value: a reply held for the
  // commit is moved in, not copied (a status reply to a thousand-agent fleet is large).
  Status Send(Side side, const std::string& routing_id, Message message);
  // Sends at once, round or not: what depends on no write (heartbeats, read replies).
  Status SendNow(Side side, const std::string& routing_id, const Message& message) {
    return outlet_.Send(side, routing_id, message);
  }
  // A job offer under `lease`, stamped with its commit time (`committed_at_us`) and sent
  // once the hand-out is committed; outside a round, at once.
  // Returns false when it could not be sent now (outside a round only).
  bool SendOffer(const std::string& routing_id, Message offer, const Lease& lease);

 private:
  struct Outgoing {
    Side side;
    std::string routing_id;
    Message message;
    std::optional<Lease> hand_out;  // a job offer: taken back if it cannot be sent
    // The message encoded while the round ran (empty with an outbox), so that after the
    // commit only the sends remain: dispatch latency is counted from the commit.
    std::string encoded;
  };
  void Hold(Side side, const std::string& routing_id, Message message,
            std::optional<Lease> hand_out);
  void SendHeld(Outgoing& out, int64_t committed_at_us);

  Store& store_;
  Outlet& outlet_;
  OfferKeeper* offers_ = nullptr;
  LatencyHistogram* commit_seconds_ = nullptr;
  std::vector<RoundParticipant*> participants_;
  bool open_ = false;
  std::vector<Outgoing> outgoing_;
};

}  // namespace benchfleet
