#include "coordinator/loop/outlet.h"

#include "common/log.h"
#include "common/transport.h"

namespace benchfleet {

Status Outlet::Send(Side side, const std::string& routing_id, const Message& message) {
  if (outbox_) return Delivered(side, message.type, outbox_(side, routing_id, message));
  return SendEncoded(side, routing_id, message.type, Encode(message));
}

Status Outlet::SendEncoded(Side side, const std::string& routing_id, const std::string& type,
                           const std::string& encoded) {
  zmq::socket_t* socket = side == Side::kAgents ? agents_ : clients_;
  if (socket == nullptr)
    return Delivered(side, type, Unavailable("the coordinator has no socket to send on"));
  return Delivered(side, type, SendFrames(*socket, {routing_id, encoded}));
}

Status Outlet::Delivered(Side side, const std::string& type, Status sent) {
  if (!sent.ok()) {
    ++send_failures_;
    LOG_WARN("message " << type << " to " << (side == Side::kAgents ? "agent" : "client")
                        << " peer lost: " << sent.message());
  }
  return sent;
}

}  // namespace benchfleet
