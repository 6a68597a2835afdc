// ZapHandler: the ZeroMQ Authentication Protocol (RFC 27) endpoint of the coordinator.
// libzmq asks it, for every CURVE handshake on a socket of domain kZapDomain, whether
// the peer's public key may connect; only keys on the allow-list are admitted. The
// allow-list is re-read on demand (SIGHUP), so keys are added or revoked without a
// restart. Runs in the coordinator's loop: Handle() answers pending requests.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <zmq.hpp>

#include "common/status.h"

namespace benchfleet {

class ZapHandler {
 public:
  // Binds inproc://zeromq.zap.01 in `context`; must happen before any CURVE server
  // socket of that context accepts a connection.
  static StatusOr<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context,
                                                     const std::string& allow_list_path);
  // Re-reads the allow-list; on error the previous list stays in force.
  Status Reload();
  // Answers every pending request (non-blocking).
  void Handle();
  zmq::socket_t& socket() { return socket_; }
  int64_t admitted() const { return admitted_; }
  int64_t refused() const { return refused_; }

 private:
  ZapHandler(zmq::socket_t socket, std::string path) : socket_(std::move(socket)), path_(std::move(path)) {}
  zmq::socket_t socket_;
  std::string path_;
  std::set<std::string> allowed_;  // Z85 public keys
  int64_t admitted_ = 0;
  int64_t refused_ = 0;
};

}  // namespace benchfleet
