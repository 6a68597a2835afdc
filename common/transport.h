// ZeroMQ plumbing shared by every daemon: socket set-up with the protocol's limits,
// and multipart send/receive that report problems as Status instead of throwing.
// "Nothing to read" is an empty optional, not an error (cppzmq's convention).
#pragma once

#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/curve.h"
#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

using Frames = std::vector<std::string>;

// A ROUTER bound to `endpoint` (e.g. "tcp://*:5555", "tcp://127.0.0.1:*"), with
// ROUTER_MANDATORY (sending to a vanished peer fails instead of vanishing silently)
// and the maximum message size. Returns the endpoint actually bound (wildcard port
// resolved) through `bound`. With `curve`, the socket is a CURVE server whose peers are
// vetted by the ZAP handler (coordinator/security/zap.h) under `zap_domain`: the domain says which
// keys this socket admits (common/roles.h: kAgentsZapDomain, kClientsZapDomain).
StatusOr<zmq::socket_t> BindRouter(zmq::context_t& context, const std::string& endpoint,
                                   std::string* bound, const CurveKeyPair* curve = nullptr,
                                   const std::string& zap_domain = "");

// A DEALER connected to `endpoint` with the given routing id (empty: libzmq picks one);
// with `curve`, a CURVE client of the server key it holds.
StatusOr<zmq::socket_t> ConnectDealer(zmq::context_t& context, const std::string& endpoint,
                                      const std::string& routing_id,
                                      const CurveClientKeys* curve = nullptr);

// Non-blocking receive of one multipart message. With `user_id`, also the message's
// "User-Id" property: what the ZAP handler named the peer's key when its connection was
// admitted (its role, coordinator/security/zap.h); "" on a socket without CURVE.
StatusOr<std::optional<Frames>> ReceiveFrames(zmq::socket_t& socket,
                                              std::string* user_id = nullptr);

// Non-blocking send; kNotFound when a ROUTER has no peer of that routing id (it
// disconnected), kUnavailable when the peer's queue is full.
Status SendFrames(zmq::socket_t& socket, const Frames& frames);

// Sends one protocol message from a DEALER.
Status SendMessage(zmq::socket_t& dealer, const Message& message);

// Sends one protocol message from a ROUTER to the peer with `routing_id`.
Status SendMessageTo(zmq::socket_t& router, const std::string& routing_id, const Message& message);

// Waits up to `timeout_ms` for any of `sockets` to become readable. Returns which are
// readable (same order); an interrupted wait (a signal) returns all false.
std::vector<bool> PollReadable(const std::vector<zmq::socket_t*>& sockets, long timeout_ms);

}  // namespace benchfleet
