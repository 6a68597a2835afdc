// ZapHandler: the ZeroMQ Authentication Protocol (RFC 27) endpoint of the coordinator.
// libzmq asks it, for every CURVE handshake on the coordinator's sockets, whether the
// peer's public key may connect. A key is admitted only when it is on the allow-list
// and the socket's ZAP domain is its role's (common/roles.h): agent keys on the agents'
// socket, viewer, operator and admin keys on the clients' socket. The reply's User-Id
// is the key's role, which libzmq attaches to every message of that connection; the
// coordinator reads it there (ReceiveFrames) to check each client request.
//
// It serves on a thread of its own, as CZMQ's zauth actor does, so authentication never
// runs on (or waits for) the coordinator's loop thread, whatever the handshake rate. The
// loop talks to that thread only through a control pipe: Reload() asks it to re-read
// the allow-list (SIGHUP), so keys are added or revoked without a restart.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/status.h"
#include "coordinator/security/allow_list.h"

namespace benchfleet {

class ZapHandler {
 public:
  // Reads the allow-list, binds inproc://zeromq.zap.01 in `context` and starts serving
  // on its own thread. Must happen before any CURVE server socket of that context
  // accepts a connection. An unreadable allow-list is an error and nothing is started.
  static StatusOr<std::unique_ptr<ZapHandler>> Start(zmq::context_t& context,
                                                     const std::string& allow_list_path);
  // Stops the thread and closes its sockets (before `context` may be terminated).
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Asks the handler's thread to re-read the allow-list and returns at once; that
  // thread logs the outcome, and on error the previous list stays in force. An error
  // here means only that the request could not be posted.
  Status Reload();
  int64_t admitted() const { return admitted_.load(); }
  // Every refused handshake, and among them those of a listed key on the other socket
  // (an agent key used by a client, or a client key by an agent).
  int64_t refused() const { return refused_.load(); }
  int64_t refused_wrong_socket() const { return refused_wrong_socket_.load(); }

 private:
  ZapHandler(zmq::socket_t zap, zmq::socket_t control, zmq::socket_t control_peer, std::string path,
             AllowList allowed);
  // The handler's thread: answers ZAP requests and control commands until told to stop.
  void Serve();
  // Answers every pending ZAP request (non-blocking).
  void Answer();
  void ReloadNow();
  Status Post(const std::string& command);

  // Used only by the handler's thread once it runs.
  zmq::socket_t zap_;      // REP on inproc://zeromq.zap.01
  zmq::socket_t control_;  // PAIR: commands from the owner
  const std::string path_;
  AllowList allowed_;
  // The owner's end of the control pipe; Reload() may come from any thread.
  std::mutex control_mutex_;
  zmq::socket_t control_peer_;  // guarded by control_mutex_
  std::atomic<int64_t> admitted_{0};
  std::atomic<int64_t> refused_{0};
  std::atomic<int64_t> refused_wrong_socket_{0};
  std::thread thread_;
};

}  // namespace benchfleet
