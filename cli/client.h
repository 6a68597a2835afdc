// A request/reply client for the coordinator's client socket. One DEALER; each request
// carries a request_id and waits for the reply with that id, up to a deadline.
#pragma once

#include <memory>
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
  // Sends `type` with `fields` and returns the reply. An `error` reply becomes a Status
  // with the coordinator's message.
  StatusOr<Message> Call(const std::string& type, json fields);

 private:
  CoordinatorClient(std::string endpoint, int timeout_ms)
      : endpoint_(std::move(endpoint)), timeout_ms_(timeout_ms) {}
  std::string endpoint_;
  int timeout_ms_;
  int64_t next_request_ = 1;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;
};

}  // namespace benchfleet
