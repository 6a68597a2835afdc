// A request/reply client for the coordinator's client socket. One DEALER; each request
// carries a request_id and waits for the reply with that id, up to a deadline.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "common/curve.h"
#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

class CoordinatorClient {
 public:
  static StatusOr<std::unique_ptr<CoordinatorClient>> Connect(
      const std::string& endpoint, int timeout_ms, const CurveClientKeys* curve = nullptr);
  // Whether a request may be sent twice: a resend of status, results, query, cancel or
  // a submit with its submission id changes nothing; a second calibrate or prune would.
  enum class Retry { kOnce, kNever };
  // Sends `type` with `fields` and returns the reply. An `error` reply becomes a Status
  // with the coordinator's message. With no reply within the timeout, a request that may
  // be sent twice goes once more on a fresh connection (ZeroMQ's Lazy Pirate: the old
  // socket may hold a stuck connection); then the coordinator is said not to answer.
  StatusOr<Message> Call(const std::string& type, json fields, Retry retry = Retry::kOnce);

 private:
  CoordinatorClient(std::string endpoint, int timeout_ms, const CurveClientKeys* curve)
      : endpoint_(std::move(endpoint)), timeout_ms_(timeout_ms) {
    if (curve != nullptr) curve_ = *curve;
  }
  Status Reconnect();
  // Waits for the reply to `request_id`; nullopt when the timeout passed.
  StatusOr<std::optional<Message>> AwaitReply(const std::string& request_id);
  std::string endpoint_;
  int timeout_ms_;
  std::optional<CurveClientKeys> curve_;
  int64_t next_request_ = 1;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;
};

}  // namespace benchfleet
