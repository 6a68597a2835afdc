#include "tests/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

namespace benchfleet::testing {

TcpProxy::TcpProxy(const std::string& target) {
  target_port_ = std::stoi(target.substr(target.rfind(':') + 1));
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    return;
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Loop(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

std::string TcpProxy::endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

void TcpProxy::Loop() {
  struct Pair {
    int a, b;  // a: the agent's side, b: the coordinator's side
  };
  std::vector<Pair> pairs;
  char buffer[65536];
  while (!stop_) {
    if (blocked_) {
      usleep(10000);  // a dead link: nothing moves
      continue;
    }
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
    for (const Pair& p : pairs) {
      fds.push_back({p.a, POLLIN, 0});
      fds.push_back({p.b, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), 20) <= 0) continue;
    std::vector<Pair> alive;
    // `fds` describes the pairs as they were before poll(); a connection accepted
    // below joins on the next round.
    const size_t polled = (fds.size() - 1) / 2;
    for (size_t i = 0; i < polled; ++i) {
      bool open = true;
      for (int side = 0; side < 2 && open; ++side) {
        const pollfd& fd = fds[1 + 2 * i + side];
        if (!(fd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        int from = side == 0 ? pairs[i].a : pairs[i].b;
        int to = side == 0 ? pairs[i].b : pairs[i].a;
        ssize_t n = read(from, buffer, sizeof buffer);
        if (n <= 0) {
          open = false;
          break;
        }
        for (ssize_t done = 0; done < n;) {
          ssize_t w = write(to, buffer + done, static_cast<size_t>(n - done));
          if (w <= 0) {
            open = false;
            break;
          }
          done += w;
        }
      }
      if (open) {
        alive.push_back(pairs[i]);
      } else {
        close(pairs[i].a);
        close(pairs[i].b);
      }
    }
    pairs = alive;
    if (fds[0].revents & POLLIN) {
      int a = accept(listen_fd_, nullptr, nullptr);
      int b = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(target_port_));
      if (a >= 0 && connect(b, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        pairs.push_back({a, b});
      } else {
        if (a >= 0) close(a);
        close(b);
      }
    }
  }
  for (const Pair& p : pairs) {
    close(p.a);
    close(p.b);
  }
}

}  // namespace benchfleet::testing
