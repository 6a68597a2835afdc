// Outlet: where the coordinator's messages leave. Its two ROUTER sockets, or, in process
// (tests, fuzzing), an outbox function. A send that fails is counted and logged here,
// once, whoever sent it.
#pragma once

#include <functional>
#include <string>
#include <zmq.hpp>

#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

// Which socket a message goes out on.
enum class Side { kAgents, kClients };
// Where outgoing messages go when the coordinator runs in process (tests, fuzzing).
using Outbox = std::function<Status(Side side, const std::string& routing_id, const Message&)>;

class Outlet {
 public:
  // `send_failures` counts every failed send.
  explicit Outlet(int64_t& send_failures) : send_failures_(send_failures) {}

  void UseSockets(zmq::socket_t* agents, zmq::socket_t* clients) {
    agents_ = agents;
    clients_ = clients;
  }
  void UseOutbox(Outbox outbox) { outbox_ = std::move(outbox); }

  // Whether messages are sent as encoded text (the sockets): a message held for later
  // can then be encoded ahead of its send. The outbox takes messages.
  bool takes_encoded() const { return !outbox_; }

  Status Send(Side side, const std::string& routing_id, const Message& message);
  // The same, already encoded (takes_encoded() only).
  Status SendEncoded(Side side, const std::string& routing_id, const std::string& type,
                     const std::string& encoded);

 private:
  // Counts and logs a send that failed; returns `sent`.
  Status Delivered(Side side, const std::string& type, Status sent);

  int64_t& send_failures_;
  zmq::socket_t* agents_ = nullptr;
  zmq::socket_t* clients_ = nullptr;
  Outbox outbox_;
};

}  // namespace benchfleet
