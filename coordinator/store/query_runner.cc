#include "coordinator/store/query_runner.h"

#include "common/client_replies.h"
#include "common/log.h"
#include "common/transport.h"
#include "sqlite/reader.h"

namespace benchfleet {
namespace {

// Requests waiting beyond this are refused at once ("busy, try again") rather than
// queued for minutes behind slow statements.
constexpr size_t kMaxPendingReads = 64;

}  // namespace

QueryRunner::QueryRunner(zmq::context_t& context, std::string db_path)
    : context_(context), db_path_(std::move(db_path)) {
  endpoint_ = "inproc://benchfleet-query-" + std::to_string(reinterpret_cast<uintptr_t>(this));
}

QueryRunner::~QueryRunner() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status QueryRunner::Start() {
  try {
    replies_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::pull);
    replies_->set(zmq::sockopt::linger, 0);
    replies_->bind(endpoint_);
  } catch (const zmq::error_t& e) {
    return Unavailable(std::string("cannot open the query thread's socket: ") + e.what());
  }
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

bool QueryRunner::Post(ReadRequest request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_.size() >= kMaxPendingReads) return false;
    pending_.push_back(std::move(request));
  }
  wake_.notify_one();
  return true;
}

std::optional<std::pair<std::string, std::string>> QueryRunner::TakeReply() {
  try {
    zmq::message_t peer, body;
    if (!replies_->recv(peer, zmq::recv_flags::dontwait)) return std::nullopt;
    if (!peer.more() || !replies_->recv(body, zmq::recv_flags::none)) return std::nullopt;
    return std::make_pair(peer.to_string(), body.to_string());
  } catch (const zmq::error_t& e) {
    LOG_ERROR("query reply lost: " << e.what());
    return std::nullopt;
  }
}

void QueryRunner::Serve() {
  zmq::socket_t push(context_, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 0);
  push.connect(endpoint_);
  std::unique_ptr<StoreReader> reader;
  while (true) {
    ReadRequest request;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      request = std::move(pending_.front());
      pending_.pop_front();
    }
    Message reply;
    try {
      if (!reader) {
        auto opened = StoreReader::Open(db_path_);
        if (opened.ok())
          reader = std::move(*opened);
        else
          reply = MakeError(opened.status(), request.request_id);
      }
      if (reader) {
        auto rows = request.sql ? reader->Query(*request.sql, request.max_rows)
                                : reader->ResultSummary(request.sweep_id, request.max_rows);
        reply = rows.ok() ? ToMessage(RowsReply{request.request_id, std::move(rows->columns),
                                                std::move(rows->rows), rows->truncated})
                          : MakeError(rows.status(), request.request_id);
      }
    } catch (const std::exception& e) {
      reply = MakeError(Internal(std::string("query failed: ") + e.what()), request.request_id);
    }
    try {
      push.send(zmq::buffer(request.peer), zmq::send_flags::sndmore);
      push.send(zmq::buffer(Encode(reply)), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      LOG_ERROR("query reply not handed to the loop: " << e.what());
    }
  }
}

}  // namespace benchfleet
