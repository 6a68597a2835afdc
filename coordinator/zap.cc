#include "coordinator/zap.h"

#include <zmq.h>

#include "common/log.h"
#include "common/transport.h"
#include "coordinator/allow_list.h"

namespace benchfleet {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr const char* kZapVersion = "1.0";

}  // namespace

StatusOr<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context,
                                                        const std::string& allow_list_path) {
  try {
    zmq::socket_t socket(context, zmq::socket_type::rep);
    socket.set(zmq::sockopt::linger, 0);
    socket.bind(kZapEndpoint);
    std::unique_ptr<ZapHandler> handler(new ZapHandler(std::move(socket), allow_list_path));
    RETURN_IF_ERROR(handler->Reload());
    return handler;
  } catch (const zmq::error_t& e) {
    return Internal(std::string("cannot start the ZAP handler: ") + e.what());
  }
}

Status ZapHandler::Reload() {
  auto keys = ReadAllowList(path_);
  if (!keys.ok()) return keys.status();
  allowed_ = std::move(*keys);
  LOG_INFO("allow-list " << path_ << ": " << allowed_.size() << " public keys");
  return Status::Ok();
}

void ZapHandler::Handle() {
  while (true) {
    auto frames = ReceiveFrames(socket_);
    if (!frames.ok() || !frames->has_value()) return;
    const Frames& request = **frames;
    // version, request id, domain, address, identity, mechanism, credentials...
    std::string request_id = request.size() > 1 ? request[1] : "";
    bool allowed = false;
    std::string reason = "malformed ZAP request";
    std::string key;
    if (request.size() >= 7 && request[0] == kZapVersion && request[5] == "CURVE" &&
        request[6].size() == 32) {
      char z85[41];
      zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(request[6].data()), 32);
      key = z85;
      allowed = request[2] == kZapDomain && allowed_.count(key) > 0;
      reason = allowed ? "OK" : "public key not on the allow-list";
    }
    if (allowed) {
      ++admitted_;
    } else {
      ++refused_;
      LOG_WARN("refused a connection from " << (request.size() > 3 ? request[3] : "?") << ": "
                                            << reason << (key.empty() ? "" : " (" + key + ")"));
    }
    (void)SendFrames(socket_, {kZapVersion, request_id, allowed ? "200" : "400", reason,
                               allowed ? key : "", ""});
  }
}

}  // namespace benchfleet
