// Test support: a TCP relay between an agent and the coordinator that can be "cut" to
// simulate a network partition. While blocked it neither reads nor writes nor accepts:
// bytes wait in the kernel's buffers like packets on a dead link, and flow again when
// the partition heals.
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace benchfleet::testing {

class TcpProxy {
 public:
  // Relays 127.0.0.1:<ephemeral> to `target` ("tcp://127.0.0.1:PORT").
  explicit TcpProxy(const std::string& target);
  ~TcpProxy();
  bool ok() const { return listen_fd_ >= 0; }
  // The endpoint to give the agent instead of the coordinator's.
  std::string endpoint() const;
  void SetBlocked(bool blocked) { blocked_ = blocked; }

 private:
  void Loop();
  int listen_fd_ = -1;
  int port_ = 0;
  int target_port_ = 0;
  std::atomic<bool> blocked_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace benchfleet::testing
