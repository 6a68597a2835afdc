#include "metrics/metrics_server.h"

#include <httplib.h>

#include <chrono>
#include <regex>

#include "common/clock.h"
#include "common/log.h"
#include "metrics/exposition_writer.h"

namespace benchfleet {

bool MetricsAddress::IsLoopback() const {
  if (ipv6) return host == "::1";
  return host == "localhost" || host.rfind("127.", 0) == 0;
}

StatusOr<MetricsAddress> ParseMetricsAddress(const std::string& text) {
  static const std::regex kIpv6("^\\[([0-9A-Fa-f:.]+)\\]:([0-9]{1,5})$");
  static const std::regex kHost("^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})$");
  std::smatch match;
  MetricsAddress address;
  std::string port;
  if (std::regex_match(text, match, kIpv6)) {
    address.host = match[1];
    address.ipv6 = true;
    port = match[2];
  } else if (std::regex_match(text, match, kHost)) {
    address.host = match[1];
    port = match[3];
  } else {
    return InvalidArgument(
        "--metrics: expected HOST:PORT (127.0.0.1:9464, [::1]:9464; port 0 "
        "picks a free one), got \"" +
        text + "\"");
  }
  address.port = std::stoi(port);  // at most 5 digits: cannot overflow
  if (address.port > 65535) {
    return InvalidArgument("--metrics: port must be 0 to 65535, got " + port);
  }
  return address;
}

MetricsServer::MetricsServer() : server_(std::make_unique<httplib::Server>()) {}

MetricsServer::~MetricsServer() {
  server_->stop();
  if (listener_.joinable()) listener_.join();
}

StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const MetricsAddress& address,
                                                              Render render) {
  std::unique_ptr<MetricsServer> metrics(new MetricsServer());
  metrics->render_ = std::move(render);
  httplib::Server& server = *metrics->server_;
  server.new_task_queue = [] { return new httplib::ThreadPool(kMetricsServerThreads); };
  server.set_read_timeout(kMetricsIoTimeoutS);
  server.set_write_timeout(kMetricsIoTimeoutS);
  server.set_address_family(address.ipv6 ? AF_INET6 : AF_UNSPEC);
  // httplib's default is SO_REUSEPORT, which lets a second daemon bind the same
  // port and share the scrapes (two daemons answering as one); SO_REUSEADDR alone rebinds after a
  // restart and no more.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    (void)setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  MetricsServer* self = metrics.get();
  server.Get("/metrics", [self](const httplib::Request&, httplib::Response& response) {
    std::optional<std::string> text = self->render_();
    if (!text) {
      response.status = 503;
      response.set_content("no metrics published yet\n", "text/plain");
      return;
    }
    response.set_content(std::move(*text), kExpositionContentType);
  });
  // Anything else is 404, httplib's answer for a path with no handler.
  const std::string where = (address.ipv6 ? "[" + address.host + "]" : address.host);
  int port = address.port;
  if (port == 0) {
    port = server.bind_to_any_port(address.host);
    if (port < 0) port = 0;
  } else if (!server.bind_to_port(address.host, port)) {
    port = 0;
  }
  if (port == 0) {
    return Unavailable("--metrics: cannot listen on " + where + ":" + std::to_string(address.port) +
                       " (the port is in use, or the host is not an address of this machine)");
  }
  metrics->url_ = "http://" + where + ":" + std::to_string(port) + "/metrics";
  metrics->listener_ = std::thread([&server] { server.listen_after_bind(); });
  // stop() only ends a server that is running: wait for it, so the destructor cannot
  // miss it.
  const MonoTime deadline = MonoNow() + Millis(kMetricsStartTimeoutMs);
  while (!server.is_running() && MonoNow() < deadline) std::this_thread::sleep_for(Millis(1));
  if (!server.is_running()) return Internal("--metrics: the HTTP server did not start");
  if (address.IsLoopback()) {
    LOG_INFO("metrics at " << metrics->url_);
  } else {
    LOG_WARN("metrics at " << metrics->url_
                           << ", beyond loopback: anyone who reaches the port "
                              "can read them (no authentication; they hold no secrets)");
  }
  return metrics;
}

}  // namespace benchfleet
