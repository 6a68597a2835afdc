// Runs users' reads (`query`, `results`) on a thread of their own with a read-only
// connection, so that a slow statement (up to kQueryTimeLimitS) never holds up the loop
// that serves heartbeats and results. The loop hands a request over with Post() and
// polls reply_socket(): each finished request arrives there as [peer, encoded reply],
// and the loop sends it on to the client (a ZeroMQ socket is used by one thread only).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/protocol.h"
#include "common/status.h"

namespace benchfleet {

struct ReadRequest {
  std::string peer;  // the client's routing id
  nlohmann::json request_id;
  // One of: a user's SQL (query), or result_summary of an optional sweep (results).
  std::optional<std::string> sql;
  std::optional<int64_t> sweep_id;
  int max_rows = 0;
};

class QueryRunner {
 public:
  // Opens nothing yet: the read-only connection is made on the thread, on first use.
  QueryRunner(zmq::context_t& context, std::string db_path);
  ~QueryRunner();  // finishes the running request (bounded by the time limit) and joins

  Status Start();
  // Queues a request; false (and nothing queued) when too many are waiting.
  bool Post(ReadRequest request);
  zmq::socket_t& reply_socket() { return *replies_; }
  // Reads one finished reply: {peer, encoded message}, or nullopt when none is waiting.
  std::optional<std::pair<std::string, std::string>> TakeReply();

 private:
  void Serve();

  zmq::context_t& context_;
  std::string db_path_;
  std::string endpoint_;
  std::unique_ptr<zmq::socket_t> replies_;  // PULL, the loop's end
  std::thread thread_;
  // State below is protected by mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<ReadRequest> pending_;
  bool stopping_ = false;
};

}  // namespace benchfleet
