#include "cli/client.h"

#include <unistd.h>

#include <iostream>

#include "common/clock.h"
#include "common/transport.h"

namespace benchfleet {

StatusOr<std::unique_ptr<CoordinatorClient>> CoordinatorClient::Connect(
    const std::string& endpoint, int timeout_ms, const CurveClientKeys* curve) {
  std::unique_ptr<CoordinatorClient> client(new CoordinatorClient(endpoint, timeout_ms, curve));
  RETURN_IF_ERROR(client->Reconnect());
  return client;
}

Status CoordinatorClient::Reconnect() {
  socket_.reset();  // linger 0: whatever the old socket queued is dropped
  ASSIGN_OR_RETURN(auto socket,
                   ConnectDealer(context_, endpoint_, "", curve_ ? &*curve_ : nullptr));
  socket_ = std::make_unique<zmq::socket_t>(std::move(socket));
  return Status::Ok();
}

StatusOr<Message> CoordinatorClient::Call(const std::string& type, json fields, Retry retry) {
  const std::string request_id =
      "cli-" + std::to_string(getpid()) + "-" + std::to_string(next_request_++);
  fields["request_id"] = request_id;
  const Message request = MakeMessage(type, std::move(fields));
  const std::string wait = std::to_string(timeout_ms_ / 1000.0).substr(0, 4) + " s";
  const int tries = retry == Retry::kOnce ? 2 : 1;
  for (int attempt = 1; attempt <= tries; ++attempt) {
    if (attempt > 1) {
      std::cerr << "benchfleet: no reply from the coordinator at " << endpoint_ << " within "
                << wait << "; sending once more on a new connection\n";
      RETURN_IF_ERROR(Reconnect());
    }
    // A DEALER queues while the TCP connection is being made, so a send right after
    // connect is fine; with no coordinator at all the reply deadline fires.
    RETURN_IF_ERROR(SendMessage(*socket_, request));
    ASSIGN_OR_RETURN(std::optional<Message> reply, AwaitReply(request_id));
    if (reply) return *reply;
  }
  return Unavailable(
      "the coordinator does not answer at " + endpoint_ + " (no reply within " + wait +
      (tries > 1 ? ", sent twice" : "") +
      "); is benchfleet-coordinator running there? (set --coordinator or "
      "BENCHFLEET_COORDINATOR; with CURVE, is this client's public key on its allow-list, "
      "with a client role (viewer, operator or admin)?)");
}

StatusOr<std::optional<Message>> CoordinatorClient::AwaitReply(const std::string& request_id) {
  MonoTime deadline = MonoNow() + Millis(timeout_ms_);
  while (true) {
    int64_t left = MillisUntil(deadline);
    if (left == 0) return std::optional<Message>();
    auto readable = PollReadable({socket_.get()}, left);
    if (!readable[0]) continue;
    ASSIGN_OR_RETURN(auto frames, ReceiveFrames(*socket_));
    if (!frames || frames->size() != 1) continue;
    ASSIGN_OR_RETURN(Message reply, Decode(frames->front()));
    if (reply.body.value("request_id", json()) != request_id) continue;  // a late reply
    if (reply.type == msg::kError) {
      StatusCode code = StatusCode::kInternal;
      const std::string name = reply.body["code"];
      for (auto c : {StatusCode::kInvalidArgument, StatusCode::kNotFound,
                     StatusCode::kFailedPrecondition, StatusCode::kUnavailable,
                     StatusCode::kDeadlineExceeded, StatusCode::kPermissionDenied}) {
        if (name == StatusCodeName(c)) code = c;
      }
      return Status(code, reply.body["message"].get<std::string>());
    }
    return std::optional<Message>(std::move(reply));
  }
}

}  // namespace benchfleet
