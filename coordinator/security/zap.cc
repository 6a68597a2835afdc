#include "coordinator/security/zap.h"

#include <pthread.h>
#include <signal.h>
#include <zmq.h>

#include <map>

#include "common/log.h"
#include "common/roles.h"
#include "common/transport.h"

namespace benchfleet {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr const char* kZapVersion = "1.0";
// Commands on the control pipe.
constexpr const char* kReloadCommand = "RELOAD";
constexpr const char* kStopCommand = "STOP";
// Wait without end for a request or a command: the thread has nothing else to do.
constexpr long kWaitForever = -1;

// The allow-list's size for the log: how many keys of each role.
std::string Summary(const AllowList& keys) {
  std::map<Role, int> per_role;
  for (const auto& [key, role] : keys) ++per_role[role];
  std::string roles;
  for (const auto& [role, count] : per_role) {
    roles += (roles.empty() ? "" : ", ") + std::to_string(count) + " " + RoleName(role);
  }
  return std::to_string(keys.size()) + " public keys" + (roles.empty() ? "" : " (" + roles + ")");
}

// Which socket a ZAP domain is, for people reading a refusal.
std::string SocketOf(const std::string& domain) {
  if (domain == kAgentsZapDomain) return "the agents' socket";
  if (domain == kClientsZapDomain) return "the clients' socket";
  return "ZAP domain \"" + domain + "\"";
}

}  // namespace

StatusOr<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t& context,
                                                        const std::string& allow_list_path) {
  ASSIGN_OR_RETURN(AllowList allowed, ReadAllowList(allow_list_path));
  LOG_INFO("allow-list " << allow_list_path << ": " << Summary(allowed));
  try {
    zmq::socket_t zap(context, zmq::socket_type::rep);
    zap.set(zmq::sockopt::linger, 0);
    zap.bind(kZapEndpoint);
    // One pipe per handler; the address only has to be unique within the context.
    const std::string control_endpoint =
        "inproc://benchfleet-zap-control-" + std::to_string(reinterpret_cast<uintptr_t>(&context));
    zmq::socket_t control(context, zmq::socket_type::pair);
    control.set(zmq::sockopt::linger, 0);
    control.bind(control_endpoint);
    zmq::socket_t control_peer(context, zmq::socket_type::pair);
    control_peer.set(zmq::sockopt::linger, 0);
    control_peer.connect(control_endpoint);
    std::unique_ptr<ZapHandler> handler(new ZapHandler(std::move(zap), std::move(control),
                                                       std::move(control_peer), allow_list_path,
                                                       std::move(allowed)));
    return handler;
  } catch (const zmq::error_t& e) {
    return Internal(std::string("cannot start the ZAP handler: ") + e.what());
  } catch (const std::system_error& e) {
    return Internal(std::string("cannot start the ZAP handler's thread: ") + e.what());
  }
}

ZapHandler::ZapHandler(zmq::socket_t zap, zmq::socket_t control, zmq::socket_t control_peer,
                       std::string path, AllowList allowed)
    : zap_(std::move(zap)),
      control_(std::move(control)),
      path_(std::move(path)),
      allowed_(std::move(allowed)),
      control_peer_(std::move(control_peer)) {
  // Signals (SIGHUP, SIGTERM) belong to the coordinator's main thread, which polls its
  // flags; the handler's thread starts with every signal blocked.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  try {
    thread_ = std::thread([this] { Serve(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;  // Start() reports it
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

ZapHandler::~ZapHandler() {
  if (!Post(kStopCommand).ok()) LOG_ERROR("cannot stop the ZAP handler's thread");
  if (thread_.joinable()) thread_.join();
}

Status ZapHandler::Post(const std::string& command) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  try {
    if (control_peer_.send(zmq::buffer(command), zmq::send_flags::none)) return Status::Ok();
  } catch (const zmq::error_t& e) {
    return Unavailable("cannot reach the ZAP handler's thread: " + std::string(e.what()));
  }
  return Unavailable("cannot reach the ZAP handler's thread");
}

Status ZapHandler::Reload() { return Post(kReloadCommand); }

void ZapHandler::Serve() {
  while (true) {
    auto readable = PollReadable({&control_, &zap_}, kWaitForever);
    // Commands first: a handshake that arrives after a reload was asked for is judged
    // by the new list.
    if (readable[0]) {
      auto frames = ReceiveFrames(control_);
      if (frames.ok() && frames->has_value() && !(*frames)->empty()) {
        const std::string& command = (*frames)->front();
        if (command == kStopCommand) return;
        if (command == kReloadCommand) ReloadNow();
      }
    }
    if (readable[1]) Answer();
  }
}

void ZapHandler::ReloadNow() {
  auto keys = ReadAllowList(path_);
  if (!keys.ok()) {
    LOG_ERROR("allow-list not reloaded, the old one stays: " << keys.status().message());
    return;
  }
  allowed_ = std::move(*keys);
  LOG_INFO("allow-list " << path_ << ": " << Summary(allowed_));
}

void ZapHandler::Answer() {
  while (true) {
    auto frames = ReceiveFrames(zap_);
    if (!frames.ok() || !frames->has_value()) return;
    const Frames& request = **frames;
    // version, request id, domain, address, identity, mechanism, credentials...
    std::string request_id = request.size() > 1 ? request[1] : "";
    bool allowed = false;
    std::string reason = "malformed ZAP request";
    std::string key;
    const char* role = "";
    if (request.size() >= 7 && request[0] == kZapVersion && request[5] == "CURVE" &&
        request[6].size() == 32) {
      char z85[41];
      zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(request[6].data()), 32);
      key = z85;
      const std::string& domain = request[2];
      auto listed = allowed_.find(key);
      if (listed == allowed_.end()) {
        reason = "public key not on the allow-list";
      } else if (domain != ZapDomainOf(listed->second)) {
        // A listed key on the wrong socket: an agent key cannot act as a client (nor a
        // client's key register as an agent), whatever role it has.
        ++refused_wrong_socket_;
        reason = std::string("a key of role ") + RoleName(listed->second) + " is not admitted on " +
                 SocketOf(domain);
      } else {
        allowed = true;
        role = RoleName(listed->second);
        reason = "OK";
      }
    }
    if (allowed) {
      ++admitted_;
    } else {
      ++refused_;
      LOG_WARN("refused a connection from " << (request.size() > 3 ? request[3] : "?") << ": "
                                            << reason << (key.empty() ? "" : " (" + key + ")"));
    }
    // The User-Id is the role: the coordinator reads it from each message of the
    // connection (ReceiveFrames) to check the request against common/roles.h's table.
    (void)SendFrames(zap_, {kZapVersion, request_id, allowed ? "200" : "400", reason, role, ""});
  }
}

}  // namespace benchfleet
