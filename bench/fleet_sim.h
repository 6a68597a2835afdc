// bench_fleet_load: N simulated agents, each on its own DEALER socket, and a client,
// all served by one thread through zmq_poll. Agents behave as benchfleet-agent does on
// the wire (schemas/protocol.md): register (again after not_found or a silent
// coordinator), heartbeat naming the running job, answer each job with a valid result
// echoing its spec, resend unacknowledged results, refuse offers while busy.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "common/limits.h"
#include "common/protocol.h"
#include "common/status.h"
#include "common/status_reply.h"
#include "common/transport.h"

namespace benchfleet::fleet_load {

using Clock = std::chrono::steady_clock;

// A sweep expands into at most this many combinations (schemas/sweep.md, Limits).
constexpr int64_t kMaxJobsPerSweep = 100000;
// How often the client asks for status while jobs run; also at once when the last
// result is acknowledged, so the end of the run is seen promptly.
constexpr auto kStatusInterval = std::chrono::milliseconds(250);
// Small submits made while the fleet runs (Simulator::probe_submit_ms): status lists the
// 20 latest sweeps, and a run has at most 10 of its own.
constexpr int kMaxProbes = 10;
// Registration of the whole fleet must finish within this.
constexpr auto kRegisterTimeout = std::chrono::seconds(60);
// Like benchfleet-agent: after a silent coordinator, register again after a backoff
// that doubles from 1 s up to 32 s.
constexpr int kSilenceBackoffMinMs = 1000;
constexpr int kSilenceBackoffMaxMs = 32000;
// Errors kept verbatim for the report; the rest are only counted.
constexpr size_t kKeptErrors = 5;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
inline double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

inline double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(p * static_cast<double>(values.size() - 1))];
}

struct Options {
  int agents = 100;
  int64_t jobs = 2000;
  int job_delay_ms = 0;
  // Each simulated job takes job_delay_ms x U(1 - jitter, 1 + jitter), from a fixed seed.
  // With 0 every agent finishes in step with the others, so results and offers come in
  // waves as large as the fleet; real jobs differ in length and spread them out.
  double job_delay_jitter = 0;
  double idle_s = 0;
  double timeout_s = 600;
  int heartbeat_ms = benchfleet::kHeartbeatIntervalMs;
  int liveness = benchfleet::kHeartbeatLiveness;
  std::string coordinator;  // the benchfleet-coordinator to run
  bool keep_dir = false;
};

struct PendingResult {
  std::string frame;
  Clock::time_point sent;
  int resend_interval_ms =
      benchfleet::kResultResendIntervalMs;  // doubles per resend, as the agent's
};

struct SimAgent {
  std::string name;
  std::unique_ptr<zmq::socket_t> socket;
  bool registered = false;
  int heartbeat_ms = benchfleet::kHeartbeatIntervalMs;
  int liveness = benchfleet::kHeartbeatLiveness;
  Clock::time_point last_heard;  // any message from the coordinator
  int silence_backoff_ms = kSilenceBackoffMinMs;
  Clock::time_point next_heartbeat;
  Clock::time_point next_register;
  // The job being "run" (only with --job-delay-ms): its offer and when it is answered.
  std::optional<json> running;
  Clock::time_point answer_at;
  // When this agent last sent a result, until its next job arrives.
  std::optional<Clock::time_point> result_sent;
  int64_t jobs_received = 0;
  std::map<std::pair<int64_t, int64_t>, PendingResult> unacked;
};

// Counters the simulator keeps; printed in the report.
struct Tally {
  int64_t jobs_received = 0, results_sent = 0, result_resends = 0, duplicate_answers = 0;
  int64_t offers_while_busy = 0, coordinator_heartbeats = 0, reregistrations = 0,
          registers_sent = 0;
  int64_t malformed_from_coordinator = 0, coordinator_silences = 0;
  double heartbeat_late_max_ms = 0;
  std::map<std::string, int64_t> acks;    // by outcome
  std::map<std::string, int64_t> errors;  // by code
  std::vector<std::string> error_texts;
  std::vector<double> dispatch_latency_ms;  // this agent's result sent -> its next job received
  // The offer's committed_at_us -> received here, for each agent's first job (the whole
  // fleet idle at once: one burst of offers as large as the fleet) and for the rest.
  std::vector<double> commit_to_received_first_ms;
  std::vector<double> commit_to_received_ms;
  std::set<int64_t> answered_jobs;
};

class Simulator {
 public:
  Simulator(const Options& options, std::string agents_endpoint, std::string clients_endpoint)
      : options_(options),
        agents_endpoint_(std::move(agents_endpoint)),
        clients_endpoint_(std::move(clients_endpoint)) {}

  Status Connect();
  Status RegisterAll();
  // Submits the jobs as sweeps, waits until none of them is running. DeadlineExceeded on
  // --timeout-s, FailedPrecondition when a submit was refused.
  Status RunJobs();
  // Heartbeats for `seconds`.
  void Idle(double seconds);
  // A status_reply, or DeadlineExceeded if none came within the timeout.
  StatusOr<benchfleet::StatusReply> StatusReply();
  // The first value of the first row of `sql` (the coordinator's read-only query), or
  // null.
  json QueryValue(const std::string& sql);

  const Tally& tally() const { return tally_; }
  double max_submit_ms() const { return max_submit_ms_; }
  // Each status reply's time, in the order they came.
  const std::vector<double>& status_ms() const { return status_ms_; }
  const std::vector<double>& probe_submit_ms() const { return probe_submit_ms_; }
  int sweeps() const { return static_cast<int>(sweep_ids_.size()); }

 private:
  // Serves every agent and the client until `done()` or `deadline`; false on deadline.
  template <typename Done>
  bool Serve(Clock::time_point deadline, Done done);
  // One decoded frame from the coordinator (decoded once, in the poll loop).
  void HandleAgentMessage(SimAgent& agent, const benchfleet::Message& decoded,
                          int64_t received_at_us);
  void HandleClientMessage(const benchfleet::Message& decoded, const std::string& frame);
  void OnJob(SimAgent& agent, const json& job, int64_t received_at_us);
  void Answer(SimAgent& agent, const json& job);
  void SendRegister(SimAgent& agent);
  // Every send goes through Send or SendRaw, then AfterSend: a send can take in the
  // socket's pending signal (its ZMQ_FD then stays quiet), so the socket is asked for its
  // events before the next wait.
  void Send(zmq::socket_t& socket, const Message& message);
  void SendRaw(zmq::socket_t& socket, const benchfleet::Frames& frames);
  void AfterSend(zmq::socket_t& socket, const benchfleet::Status& sent);
  void CheckBeforeWaiting(size_t index);
  // `tag` names the request in requests_ when it differs from its type ("probe").
  void SendClient(const std::string& type, json fields, const std::string& tag = "");
  void RecordError(const std::string& code, const std::string& text);
  Clock::time_point TimersDue(Clock::time_point now);

  const Options& options_;
  std::string agents_endpoint_, clients_endpoint_;
  zmq::context_t context_;
  std::vector<SimAgent> agents_;
  std::unique_ptr<zmq::socket_t> client_;
  Tally tally_;
  // Client requests in flight: request id -> sent at.
  std::map<int64_t, std::pair<std::string, Clock::time_point>> requests_;
  int64_t next_request_id_ = 1;
  std::vector<int64_t> sweep_ids_;
  std::optional<benchfleet::StatusReply> last_status_;  // read at the edge
  json last_rows_;
  double max_submit_ms_ = 0;
  std::vector<double> status_ms_;
  // Reply times of the small submits made while the fleet is at full load (one a second
  // once the big sweeps are in): what a user's submit waits for then.
  std::vector<double> probe_submit_ms_;
  bool submit_refused_ = false;
  std::mt19937_64 delay_rng_{42};
  // Serve's socket bookkeeping: index by handle (agents', then the client's), and the
  // sockets to ask for ZMQ_EVENTS before the next epoll wait.
  std::unordered_map<const void*, size_t> socket_index_;
  std::vector<size_t> to_check_;
  std::vector<char> check_queued_;
};

}  // namespace benchfleet::fleet_load
