#include "cli/client.h"

#include <unistd.h>

#include "common/clock.h"
#include "common/transport.h"

namespace benchfleet {

StatusOr<std::unique_ptr<CoordinatorClient>> CoordinatorClient::Connect(
    const std::string& endpoint, int timeout_ms, const CurveClientKeys* curve) {
  std::unique_ptr<CoordinatorClient> client(new CoordinatorClient(endpoint, timeout_ms));
  ASSIGN_OR_RETURN(auto socket, ConnectDealer(client->context_, endpoint, "", curve));
  client->socket_ = std::make_unique<zmq::socket_t>(std::move(socket));
  return client;
}

StatusOr<Message> CoordinatorClient::Call(const std::string& type, json fields) {
  const std::string request_id =
      "cli-" + std::to_string(getpid()) + "-" + std::to_string(next_request_++);
  fields["request_id"] = request_id;
  // A DEALER queues while the TCP connection is being made, so a send right after
  // connect is fine; with no coordinator at all the reply deadline below fires.
  RETURN_IF_ERROR(SendMessage(*socket_, MakeMessage(type, std::move(fields))));
  MonoTime deadline = MonoNow() + Millis(timeout_ms_);
  while (true) {
    int64_t left = MillisUntil(deadline);
    if (left == 0) {
      return Unavailable("no reply from the coordinator at " + endpoint_ + " within " +
                         std::to_string(timeout_ms_ / 1000.0).substr(0, 4) +
                         " s; is benchfleet-coordinator running there? (set --coordinator or "
                         "BENCHFLEET_COORDINATOR; with CURVE, is this client's public key on "
                         "its allow-list?)");
    }
    auto readable = PollReadable({socket_.get()}, left);
    if (!readable[0]) continue;
    ASSIGN_OR_RETURN(auto frames, ReceiveFrames(*socket_));
    if (!frames || frames->size() != 1) continue;
    ASSIGN_OR_RETURN(Message reply, Decode(frames->front()));
    if (reply.body.value("request_id", json()) != request_id) continue;  // a late reply
    if (reply.type == msg::kError) {
      StatusCode code = StatusCode::kInternal;
      const std::string name = reply.body["code"];
      for (auto c :
           {StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kFailedPrecondition,
            StatusCode::kUnavailable, StatusCode::kDeadlineExceeded}) {
        if (name == StatusCodeName(c)) code = c;
      }
      return Status(code, reply.body["message"].get<std::string>());
    }
    return reply;
  }
}

}  // namespace benchfleet
