#include "common/transport.h"

#include <cerrno>

#include "common/limits.h"

namespace benchfleet {
namespace {

void ApplyCommonOptions(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::maxmsgsize, kMaxMessageBytes);
  // Daemons must be able to exit promptly even with undelivered messages queued; what
  // must not be lost is kept by the application (spool, database) until acknowledged.
  socket.set(zmq::sockopt::linger, 0);
}

// "127.0.0.1:5555" is the commonest slip; ZeroMQ's own answer is "Invalid argument".
Status CheckEndpoint(const std::string& endpoint) {
  if (endpoint.find("://") != std::string::npos) return Status::Ok();
  return InvalidArgument("endpoint \"" + endpoint +
                         "\" names no transport: write tcp://HOST:PORT, e.g. tcp://" +
                         (endpoint.empty() ? std::string("127.0.0.1:5555") : endpoint));
}

}  // namespace

StatusOr<zmq::socket_t> BindRouter(zmq::context_t& context, const std::string& endpoint,
                                   std::string* bound, const CurveKeyPair* curve,
                                   const std::string& zap_domain) {
  RETURN_IF_ERROR(CheckEndpoint(endpoint));
  // Without a domain the ZAP handler could not tell which keys this socket admits.
  if (curve != nullptr && zap_domain.empty()) {
    return Internal("a CURVE server socket needs a ZAP domain (" + endpoint + ")");
  }
  try {
    zmq::socket_t socket(context, zmq::socket_type::router);
    ApplyCommonOptions(socket);
    socket.set(zmq::sockopt::router_mandatory, 1);
    // A peer that reconnects under the same routing id (an agent after a network
    // partition) takes over its old connection instead of being ignored.
    socket.set(zmq::sockopt::router_handover, 1);
    if (curve != nullptr) {
      socket.set(zmq::sockopt::curve_server, 1);
      socket.set(zmq::sockopt::curve_secretkey, curve->secret_key);
      socket.set(zmq::sockopt::zap_domain, zap_domain);
    }
    socket.bind(endpoint);
    if (bound != nullptr) *bound = socket.get(zmq::sockopt::last_endpoint);
    return socket;
  } catch (const zmq::error_t& e) {
    return Unavailable("cannot bind " + endpoint + ": " + e.what());
  }
}

StatusOr<zmq::socket_t> ConnectDealer(zmq::context_t& context, const std::string& endpoint,
                                      const std::string& routing_id, const CurveClientKeys* curve) {
  RETURN_IF_ERROR(CheckEndpoint(endpoint));
  try {
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    ApplyCommonOptions(socket);
    if (!routing_id.empty()) socket.set(zmq::sockopt::routing_id, routing_id);
    if (curve != nullptr) {
      socket.set(zmq::sockopt::curve_serverkey, curve->server_public_key);
      socket.set(zmq::sockopt::curve_publickey, curve->client.public_key);
      socket.set(zmq::sockopt::curve_secretkey, curve->client.secret_key);
    }
    socket.connect(endpoint);
    return socket;
  } catch (const zmq::error_t& e) {
    return InvalidArgument("cannot connect to " + endpoint + ": " + e.what());
  }
}

StatusOr<std::optional<Frames>> ReceiveFrames(zmq::socket_t& socket, std::string* user_id) {
  try {
    std::vector<zmq::message_t> parts;
    auto received =
        zmq::recv_multipart(socket, std::back_inserter(parts), zmq::recv_flags::dontwait);
    if (!received) return std::optional<Frames>();
    if (user_id != nullptr) {
      // Read from the last part, which came off the wire (a ROUTER makes the first).
      // zmq_msg_gets, not message_t::gets: that one throws when the property is absent.
      const char* value = parts.empty() ? nullptr : zmq_msg_gets(parts.back().handle(), "User-Id");
      *user_id = value != nullptr ? value : "";
    }
    Frames frames;
    frames.reserve(parts.size());
    for (auto& part : parts) frames.push_back(part.to_string());
    return std::optional<Frames>(std::move(frames));
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return std::optional<Frames>();
    return Unavailable(std::string("receive failed: ") + e.what());
  }
}

Status SendFrames(zmq::socket_t& socket, const Frames& frames) {
  try {
    for (size_t i = 0; i < frames.size(); ++i) {
      auto flags = zmq::send_flags::dontwait;
      if (i + 1 < frames.size()) flags = flags | zmq::send_flags::sndmore;
      auto sent = socket.send(zmq::buffer(frames[i]), flags);
      if (!sent) return Unavailable("peer queue full; message not sent");
    }
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    // EHOSTUNREACH under ROUTER_MANDATORY: the peer disconnected; it is gone for good
    // (a reconnecting agent comes back as a new peer and registers again).
    if (e.num() == EHOSTUNREACH) return NotFound(std::string("peer is gone: ") + e.what());
    return Unavailable(std::string("send failed: ") + e.what());
  }
}

Status SendMessage(zmq::socket_t& dealer, const Message& message) {
  return SendFrames(dealer, {Encode(message)});
}

Status SendMessageTo(zmq::socket_t& router, const std::string& routing_id, const Message& message) {
  return SendFrames(router, {routing_id, Encode(message)});
}

std::vector<bool> PollReadable(const std::vector<zmq::socket_t*>& sockets, long timeout_ms) {
  std::vector<zmq::pollitem_t> items;
  for (zmq::socket_t* s : sockets) items.push_back({s->handle(), 0, ZMQ_POLLIN, 0});
  std::vector<bool> readable(sockets.size(), false);
  try {
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(timeout_ms));
  } catch (const zmq::error_t&) {
    return readable;  // EINTR: the caller's loop checks its stop flag and polls again
  }
  for (size_t i = 0; i < items.size(); ++i) readable[i] = (items[i].revents & ZMQ_POLLIN) != 0;
  return readable;
}

}  // namespace benchfleet
