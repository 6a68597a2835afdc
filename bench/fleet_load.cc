// The coordinator at fleet scale: starts a real benchfleet-coordinator on a fresh
// SQLite file (loopback TCP, no CURVE), simulates N agents on real DEALER sockets
// (one socket each, all served by this one thread through zmq_poll), submits M tiny
// jobs as sweeps of placement `any` and answers every job with a valid result at once
// (or after --job-delay-ms). Reports throughput, the coordinator's CPU per job and peak
// RSS, dispatch latency (an agent's result sent -> its next job received), reply times,
// and the simulator's own CPU, so that it is seen not to be the bottleneck.
// With --idle-s S: N registered agents heartbeat for S seconds, nothing submitted; the
// coordinator's CPU fraction of one core over that window.
// usage: bench_fleet_load [--agents N] [--jobs M] [--job-delay-ms D] [--idle-s S]
//                         [--coordinator PATH] [--timeout-s T] [--keep-dir]
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/protocol.h"
#include "common/transport.h"

using benchfleet::json;
using benchfleet::Message;
using Clock = std::chrono::steady_clock;
namespace msg = benchfleet::msg;

namespace {

// A sweep expands into at most this many combinations (schemas/sweep.md, Limits).
constexpr int64_t kMaxJobsPerSweep = 100000;
// How long the coordinator may take to write its ready file, and to exit on SIGTERM.
constexpr auto kCoordinatorStartTimeout = std::chrono::seconds(30);
constexpr auto kCoordinatorStopGrace = std::chrono::seconds(10);
// How often the client asks for status while jobs run; also at once when the last
// result is acknowledged, so the end of the run is seen promptly.
constexpr auto kStatusInterval = std::chrono::milliseconds(250);
// Registration of the whole fleet must finish within this.
constexpr auto kRegisterTimeout = std::chrono::seconds(60);
// Like benchfleet-agent: after a silent coordinator, register again after a backoff
// that doubles from 1 s up to 32 s.
constexpr int kSilenceBackoffMinMs = 1000;
constexpr int kSilenceBackoffMaxMs = 32000;
// Errors kept verbatim for the report; the rest are only counted.
constexpr size_t kKeptErrors = 5;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(p * static_cast<double>(values.size() - 1))];
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// utime + stime of `pid` in seconds (/proc/<pid>/stat fields 14 and 15), or -1.
double ProcessCpuSeconds(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::vector<std::string> tokens;
  for (std::string token; fields >> token;) tokens.push_back(token);
  if (tokens.size() < 13) return -1;  // tokens[0] is field 3 (state)
  double ticks = std::stod(tokens[11]) + std::stod(tokens[12]);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// VmHWM of `pid` in MiB, or -1.
double PeakRssMb(pid_t pid) {
  std::istringstream status(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(usage.ru_utime) + s(usage.ru_stime);
}

// One TCP connection per agent: raise the descriptor limit as far as allowed.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The coordinator as a child process, its output in `log`.
class CoordinatorProcess {
 public:
  ~CoordinatorProcess() { Stop(); }

  // Starts it and waits for its ready file; false (with *error) if it is not serving.
  bool Start(const std::vector<std::string>& argv, const std::string& log,
             const std::string& ready_file, std::string* error) {
    std::vector<std::string> copy = argv;
    std::vector<char*> args;
    for (auto& a : copy) args.push_back(a.data());
    args.push_back(nullptr);
    FILE* out = std::fopen(log.c_str(), "a");
    if (out == nullptr) return Fail(error, "cannot open " + log);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fileno(out), STDOUT_FILENO);
      dup2(fileno(out), STDERR_FILENO);
      execv(args[0], args.data());
      _exit(127);
    }
    std::fclose(out);
    if (pid_ < 0) return Fail(error, "fork failed");
    const auto deadline = Clock::now() + kCoordinatorStartTimeout;
    while (!std::filesystem::exists(ready_file)) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return Fail(error, "the coordinator exited at start; see " + log);
      }
      if (Clock::now() > deadline)
        return Fail(error, "the coordinator wrote no ready file; see " + log);
      usleep(10000);  // polling a file: no descriptor to wait on
    }
    ready_ = json::parse(ReadFile(ready_file), nullptr, false);
    if (!ready_.is_object() || !ready_.contains("agents") || !ready_.contains("clients")) {
      return Fail(error, "unreadable ready file " + ready_file);
    }
    return true;
  }

  // SIGTERM, SIGKILL after kCoordinatorStopGrace; the exit status or -1.
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = -1;
    const auto deadline = Clock::now() + kCoordinatorStopGrace;
    while (waitpid(pid_, &status, WNOHANG) != pid_) {
      if (Clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      usleep(10000);
    }
    pid_ = -1;
    return status;
  }

  pid_t pid() const { return pid_; }
  std::string agents_endpoint() const { return ready_["agents"]; }
  std::string clients_endpoint() const { return ready_["clients"]; }

 private:
  static bool Fail(std::string* error, const std::string& why) {
    *error = why;
    return false;
  }
  pid_t pid_ = -1;
  json ready_;
};

struct Options {
  int agents = 100;
  int64_t jobs = 2000;
  int job_delay_ms = 0;
  double idle_s = 0;
  double timeout_s = 600;
  int heartbeat_ms = benchfleet::kHeartbeatIntervalMs;
  int liveness = benchfleet::kHeartbeatLiveness;
  std::string coordinator = BENCHFLEET_COORDINATOR_BIN;
  bool keep_dir = false;
};

struct PendingResult {
  std::string frame;
  Clock::time_point sent;
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
  std::vector<double> dispatch_latency_ms;
  std::set<int64_t> answered_jobs;
};

class Simulator {
 public:
  Simulator(const Options& options, std::string agents_endpoint, std::string clients_endpoint)
      : options_(options),
        agents_endpoint_(std::move(agents_endpoint)),
        clients_endpoint_(std::move(clients_endpoint)) {}

  bool Connect(std::string* error);
  bool RegisterAll(std::string* error);
  // Submits the jobs as sweeps, waits until none of them is running. False on timeout.
  bool RunJobs(std::string* error);
  // Heartbeats for `seconds`.
  void Idle(double seconds);
  // A status_reply, or null if none came within the timeout.
  json Status();
  // The first value of the first row of `sql` (the coordinator's read-only query), or
  // null.
  json QueryValue(const std::string& sql);

  const Tally& tally() const { return tally_; }
  double max_submit_ms() const { return max_submit_ms_; }
  double max_status_ms() const { return Percentile(status_ms_, 1.0); }
  double median_status_ms() const { return Percentile(status_ms_, 0.5); }
  int64_t status_replies() const { return static_cast<int64_t>(status_ms_.size()); }
  const json& last_status() const { return last_status_; }
  int sweeps() const { return static_cast<int>(sweep_ids_.size()); }

 private:
  // Serves every agent and the client until `done()` or `deadline`; false on deadline.
  template <typename Done>
  bool Serve(Clock::time_point deadline, Done done);
  void HandleAgentFrame(SimAgent& agent, const std::string& frame);
  void HandleClientFrame(const std::string& frame);
  void OnJob(SimAgent& agent, const json& job);
  void Answer(SimAgent& agent, const json& job);
  void SendRegister(SimAgent& agent);
  void Send(zmq::socket_t& socket, const Message& message);
  void SendClient(const std::string& type, json fields);
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
  json last_status_;
  json last_rows_;
  double max_submit_ms_ = 0;
  std::vector<double> status_ms_;
  bool submit_refused_ = false;
};

bool Simulator::Connect(std::string* error) {
  context_.set(zmq::ctxopt::max_sockets, options_.agents + 64);
  agents_.resize(options_.agents);
  for (int i = 0; i < options_.agents; ++i) {
    SimAgent& agent = agents_[i];
    agent.name = "load-" + std::to_string(i);
    auto socket = benchfleet::ConnectDealer(context_, agents_endpoint_,
                                            agent.name + "/" + std::to_string(getpid()));
    if (!socket.ok()) {
      *error = socket.status().message();
      return false;
    }
    agent.socket = std::make_unique<zmq::socket_t>(std::move(socket).value());
  }
  auto client = benchfleet::ConnectDealer(context_, clients_endpoint_, "");
  if (!client.ok()) {
    *error = client.status().message();
    return false;
  }
  client_ = std::make_unique<zmq::socket_t>(std::move(client).value());
  return true;
}

void Simulator::Send(zmq::socket_t& socket, const Message& message) {
  benchfleet::Status sent = benchfleet::SendMessage(socket, message);
  if (!sent.ok()) RecordError("send", sent.message());
}

void Simulator::RecordError(const std::string& code, const std::string& text) {
  ++tally_.errors[code];
  if (tally_.error_texts.size() < kKeptErrors) tally_.error_texts.push_back(code + ": " + text);
}

void Simulator::SendRegister(SimAgent& agent) {
  // A CPU-only host of its own (distinct machine_id), without calibration.
  json host = {{"hostname", agent.name},   {"machine_id", "load-machine-" + agent.name},
               {"cpu_model", "simulated"}, {"logical_cpus", 2},
               {"allowed_cpus", "0-1"},    {"memory_mb", 4096},
               {"kernel", "Linux"},        {"arch", "x86_64"},
               {"os", "simulated"},        {"nvidia_driver", nullptr}};
  json torch = {
      {"torch_version", "simulated"}, {"cuda_available", false}, {"cuda_device_count", 0}};
  Send(*agent.socket,
       benchfleet::MakeMessage(
           msg::kRegister,
           {{"agent", agent.name},
            {"tags", json::array({"load"})},
            {"capabilities",
             {{"host", host}, {"torch", torch}, {"gpus", json::array()}, {"cpus", "0-1"}}}}));
  // Repeated while unanswered, as benchfleet-agent does.
  agent.next_register = Clock::now() + std::chrono::milliseconds(benchfleet::kRegisterRetryMs);
  ++tally_.registers_sent;
}

bool Simulator::RegisterAll(std::string* error) {
  for (SimAgent& agent : agents_) SendRegister(agent);
  bool all = Serve(Clock::now() + kRegisterTimeout, [&] {
    return std::all_of(agents_.begin(), agents_.end(),
                       [](const SimAgent& a) { return a.registered; });
  });
  if (!all) {
    const auto registered = std::count_if(agents_.begin(), agents_.end(),
                                          [](const SimAgent& a) { return a.registered; });
    *error = std::to_string(registered) + " of " + std::to_string(agents_.size()) +
             " agents registered within " + std::to_string(kRegisterTimeout.count()) + " s (" +
             std::to_string(tally_.registers_sent) + " register messages sent, " +
             std::to_string(tally_.reregistrations) + " re-registrations after not_found, " +
             std::to_string(tally_.coordinator_silences) +
             " after a silent coordinator, heartbeats " + "at most " +
             std::to_string(static_cast<int>(tally_.heartbeat_late_max_ms)) + " ms late)";
  }
  return all;
}

void Simulator::SendClient(const std::string& type, json fields) {
  int64_t id = next_request_id_++;
  fields["request_id"] = id;
  requests_[id] = {type, Clock::now()};
  Send(*client_, benchfleet::MakeMessage(type, std::move(fields)));
}

bool Simulator::RunJobs(std::string* error) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.timeout_s));
  int64_t remaining = options_.jobs;
  for (int sweep = 0; remaining > 0; ++sweep) {
    int64_t count = std::min(remaining, kMaxJobsPerSweep);
    remaining -= count;
    json batch_sizes = json::array();
    for (int64_t b = 1; b <= count; ++b) batch_sizes.push_back(b);
    // The tiniest timing budget: the simulated worker does not run it, but the
    // coordinator derives the job's timeout from it.
    json sweep_file = {
        {"name", "fleet-load-" + std::to_string(sweep)},
        {"placement", "any"},
        {"select", {{"device", "cpu"}}},
        {"matrix", {{"model", {"mlp"}}, {"batch_size", batch_sizes}}},
        {"models", {{"mlp", {{"layers", {8, 8}}}}}},
        {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.01}}}};
    SendClient(msg::kSubmit, {{"sweep", sweep_file},
                              {"submission_id",
                               "load-" + std::to_string(getpid()) + "-" + std::to_string(sweep)}});
  }
  const size_t submits =
      static_cast<size_t>((options_.jobs + kMaxJobsPerSweep - 1) / kMaxJobsPerSweep);
  auto next_status = Clock::now();
  int64_t stored_at_last_status = -1;
  bool finished = Serve(deadline, [&] {
    if (submit_refused_) return true;
    if (sweep_ids_.size() < submits) return false;
    bool status_in_flight = std::any_of(requests_.begin(), requests_.end(), [](const auto& r) {
      return r.second.first == msg::kStatus;
    });
    // Once every job is acknowledged, ask at once instead of at the next interval.
    const int64_t stored = tally_.acks["stored"];
    const bool news = stored >= options_.jobs && stored > stored_at_last_status;
    if (!status_in_flight && (Clock::now() >= next_status || news)) {
      SendClient(msg::kStatus, json::object());
      next_status = Clock::now() + kStatusInterval;
      stored_at_last_status = stored;
    }
    if (!last_status_.is_object()) return false;
    int found = 0;
    for (const json& sweep : last_status_["sweeps"]) {
      if (std::find(sweep_ids_.begin(), sweep_ids_.end(), sweep.value("sweep_id", int64_t{0})) ==
          sweep_ids_.end()) {
        continue;
      }
      if (sweep.value("state", "") == "running") return false;
      ++found;
    }
    return found == static_cast<int>(sweep_ids_.size());
  });
  if (submit_refused_) *error = "the coordinator refused a submit";
  if (!finished) *error = "the jobs did not finish within --timeout-s";
  return finished && !submit_refused_;
}

void Simulator::Idle(double seconds) {
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  Serve(end, [] { return false; });
}

json Simulator::Status() {
  last_status_ = nullptr;
  SendClient(msg::kStatus, json::object());
  Serve(Clock::now() + std::chrono::milliseconds(benchfleet::kClientReplyTimeoutMs),
        [&] { return last_status_.is_object(); });
  return last_status_;
}

json Simulator::QueryValue(const std::string& sql) {
  last_rows_ = nullptr;
  SendClient(msg::kQuery, {{"sql", sql}});
  Serve(Clock::now() + std::chrono::milliseconds(benchfleet::kClientReplyTimeoutMs),
        [&] { return last_rows_.is_object(); });
  if (!last_rows_.is_object() || last_rows_["rows"].empty() || last_rows_["rows"][0].empty())
    return nullptr;
  return last_rows_["rows"][0][0];
}

template <typename Done>
bool Simulator::Serve(Clock::time_point deadline, Done done) {
  std::vector<zmq::pollitem_t> items;
  for (SimAgent& agent : agents_) items.push_back({agent.socket->handle(), 0, ZMQ_POLLIN, 0});
  items.push_back({client_->handle(), 0, ZMQ_POLLIN, 0});
  while (!done()) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    const auto wake = std::min(deadline, TimersDue(now));
    const auto wait =
        std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, Clock::duration()));
    try {
      zmq::poll(items.data(), items.size(),
                std::min(wait, std::chrono::milliseconds(kStatusInterval)));
    } catch (const zmq::error_t&) {
      continue;  // EINTR
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if ((items[i].revents & ZMQ_POLLIN) == 0) continue;
      zmq::socket_t& socket = i < agents_.size() ? *agents_[i].socket : *client_;
      while (true) {
        auto frames = benchfleet::ReceiveFrames(socket);
        if (!frames.ok()) {
          RecordError("receive", frames.status().message());
          break;
        }
        if (!frames->has_value()) break;
        if ((*frames)->size() != 1) {
          ++tally_.malformed_from_coordinator;
          continue;
        }
        if (i < agents_.size()) {
          HandleAgentFrame(agents_[i], (**frames)[0]);
        } else {
          HandleClientFrame((**frames)[0]);
        }
      }
    }
  }
  return true;
}

// Sends what is due (heartbeats, delayed answers, resends, registrations); returns when
// the next timer falls due.
Clock::time_point Simulator::TimersDue(Clock::time_point now) {
  Clock::time_point next = now + std::chrono::hours(1);
  for (SimAgent& agent : agents_) {
    if (!agent.registered) {
      if (now >= agent.next_register) SendRegister(agent);
      next = std::min(next, agent.next_register);
      continue;
    }
    if (now - agent.last_heard >
        std::chrono::milliseconds(int64_t{agent.heartbeat_ms} * agent.liveness)) {
      // The coordinator has said nothing for its liveness window (it may have dropped
      // us without telling): register again after the backoff, as an agent does.
      agent.registered = false;
      ++tally_.coordinator_silences;
      agent.next_register = now + std::chrono::milliseconds(agent.silence_backoff_ms);
      agent.silence_backoff_ms = std::min(agent.silence_backoff_ms * 2, kSilenceBackoffMaxMs);
      next = std::min(next, agent.next_register);
      continue;
    }
    if (agent.running && now >= agent.answer_at) {
      json job = std::move(*agent.running);
      agent.running.reset();
      Answer(agent, job);
    }
    if (agent.running) next = std::min(next, agent.answer_at);
    if (now >= agent.next_heartbeat) {
      json running = nullptr;
      if (agent.running)
        running = {{"job_id", (*agent.running)["job_id"]},
                   {"attempt", (*agent.running)["attempt"]}};
      Send(*agent.socket, benchfleet::MakeMessage(msg::kHeartbeat, {{"running", running}}));
      // How late the simulator itself is: a late heartbeat would be its fault, not the
      // coordinator's.
      tally_.heartbeat_late_max_ms =
          std::max(tally_.heartbeat_late_max_ms, Ms(now - agent.next_heartbeat));
      agent.next_heartbeat = now + std::chrono::milliseconds(agent.heartbeat_ms);
    }
    next = std::min(next, agent.next_heartbeat);
    for (auto& [key, pending] : agent.unacked) {
      const auto resend_at =
          pending.sent + std::chrono::milliseconds(benchfleet::kResultResendIntervalMs);
      if (now >= resend_at) {
        benchfleet::Status sent = benchfleet::SendFrames(*agent.socket, {pending.frame});
        if (!sent.ok()) RecordError("send", sent.message());
        pending.sent = now;
        ++tally_.result_resends;
      }
      next = std::min(
          next, pending.sent + std::chrono::milliseconds(benchfleet::kResultResendIntervalMs));
    }
  }
  return next;
}

void Simulator::HandleAgentFrame(SimAgent& agent, const std::string& frame) {
  auto decoded = benchfleet::Decode(frame);
  if (!decoded.ok()) {
    ++tally_.malformed_from_coordinator;
    RecordError("malformed", decoded.status().message());
    return;
  }
  const json& body = decoded->body;
  const std::string& type = decoded->type;
  agent.last_heard = Clock::now();
  if (type == msg::kRegistered) {
    agent.registered = true;
    agent.silence_backoff_ms = kSilenceBackoffMinMs;
    agent.heartbeat_ms = body.value("heartbeat_ms", options_.heartbeat_ms);
    agent.liveness = body.value("liveness", options_.liveness);
    agent.next_heartbeat = Clock::now() + std::chrono::milliseconds(agent.heartbeat_ms);
  } else if (type == msg::kJob) {
    OnJob(agent, body);
  } else if (type == msg::kAck) {
    agent.unacked.erase({body.value("job_id", int64_t{0}), body.value("attempt", int64_t{0})});
    ++tally_.acks[body.value("outcome", "?")];
    if (body.value("outcome", "") == "rejected") RecordError("rejected", body.value("reason", ""));
  } else if (type == msg::kHeartbeat) {
    ++tally_.coordinator_heartbeats;
  } else if (type == msg::kError) {
    const std::string code = body.value("code", "?");
    RecordError(code, body.value("message", ""));
    if (code == "not_found" && !body.contains("job_id")) {
      // The coordinator does not know this agent (it was dropped): register again.
      agent.registered = false;
      ++tally_.reregistrations;
      SendRegister(agent);
    }
  } else {
    RecordError("unexpected", "a \"" + type + "\" on an agent socket");
  }
}

void Simulator::OnJob(SimAgent& agent, const json& job) {
  ++tally_.jobs_received;
  const auto now = Clock::now();
  if (agent.running) {
    // What a real agent does with an offer while busy (protocol.md, job).
    ++tally_.offers_while_busy;
    Send(*agent.socket, benchfleet::MakeMessage(msg::kError, {{"code", "failed_precondition"},
                                                              {"message", "agent is busy"},
                                                              {"job_id", job["job_id"]},
                                                              {"attempt", job["attempt"]}}));
    return;
  }
  if (agent.result_sent) {
    tally_.dispatch_latency_ms.push_back(Ms(now - *agent.result_sent));
    agent.result_sent.reset();
  }
  if (options_.job_delay_ms <= 0) return Answer(agent, job);
  agent.running = job;
  agent.answer_at = now + std::chrono::milliseconds(options_.job_delay_ms);
}

void Simulator::Answer(SimAgent& agent, const json& job) {
  const int64_t job_id = job.value("job_id", int64_t{0});
  const int64_t attempt = job.value("attempt", int64_t{0});
  const json& spec = job["spec"];
  if (!tally_.answered_jobs.insert(job_id).second) ++tally_.duplicate_answers;
  // What benchfleet-worker reports (schemas/worker.md), with the job's configuration
  // echoed from its spec and the agent's fields (protocol.md, result).
  json result = {{"ok", true}, {"job_id", job_id}, {"attempt", attempt}};
  for (const char* key :
       {"device", "model", "mode", "dtype", "batch_size", "threads", "interop_threads"}) {
    if (spec.contains(key)) result[key] = spec[key];
  }
  result["stats"] = {{"n", 20},
                     {"median_ms", 1.0},
                     {"mean_ms", 1.0},
                     {"stdev_ms", 0.01},
                     {"min_ms", 0.98},
                     {"max_ms", 1.05},
                     {"p90_ms", 1.02},
                     {"p99_ms", 1.05},
                     {"q1_ms", 0.99},
                     {"q3_ms", 1.01},
                     {"iqr_ms", 0.02},
                     {"noisy", false},
                     {"iters_per_sample", 1},
                     {"timed_s", 0.02},
                     {"warmup_s", 0.01}};
  result["samples_ms"] = json::array({1.0, 0.98, 1.05});
  result["throughput_per_s"] = spec.value("batch_size", 1) * 1000.0;
  result["effective_threads"] = 1.0;
  result["peak_rss_mb"] = 50.0;
  result["worker_wall_s"] = 0.05;
  result["exit"] = "exited with code 0";
  const std::string frame = benchfleet::Encode(benchfleet::MakeMessage(
      msg::kResult, {{"job_id", job_id}, {"attempt", attempt}, {"result", std::move(result)}}));
  const auto now = Clock::now();
  benchfleet::Status sent = benchfleet::SendFrames(*agent.socket, {frame});
  if (!sent.ok()) RecordError("send", sent.message());
  agent.unacked[{job_id, attempt}] = {frame, now};
  agent.result_sent = now;
  ++tally_.results_sent;
}

void Simulator::HandleClientFrame(const std::string& frame) {
  auto decoded = benchfleet::Decode(frame);
  if (!decoded.ok()) {
    ++tally_.malformed_from_coordinator;
    RecordError("malformed", decoded.status().message());
    return;
  }
  const json& body = decoded->body;
  const json& id = body.contains("request_id") ? body["request_id"] : json();
  auto request = id.is_number_integer() ? requests_.find(id.get<int64_t>()) : requests_.end();
  if (request == requests_.end()) {
    RecordError("unexpected", "a reply to no request: " + frame.substr(0, 200));
    return;
  }
  const double ms = Ms(Clock::now() - request->second.second);
  const std::string request_type = request->second.first;
  requests_.erase(request);
  if (decoded->type == msg::kSubmitted) {
    max_submit_ms_ = std::max(max_submit_ms_, ms);
    sweep_ids_.push_back(body.value("sweep_id", int64_t{0}));
  } else if (decoded->type == msg::kStatusReply) {
    status_ms_.push_back(ms);
    last_status_ = body;
  } else if (decoded->type == msg::kRows) {
    last_rows_ = body;
  } else if (decoded->type == msg::kError) {
    RecordError(request_type + " " + body.value("code", "?"), body.value("message", ""));
    if (request_type == msg::kSubmit) submit_refused_ = true;
  }
}

// Sums the jobs of our sweeps in a status_reply by state.
json SweepTotals(const json& status) {
  json totals = {{"total", 0}, {"queued", 0}, {"running", 0},
                 {"done", 0},  {"failed", 0}, {"cancelled", 0}};
  if (!status.is_object()) return totals;
  for (const json& sweep : status["sweeps"]) {
    if (sweep.value("name", "").rfind("fleet-load-", 0) != 0) continue;
    for (auto& [state, count] : totals.items())
      count = count.get<int64_t>() + sweep["jobs"].value(state, int64_t{0});
  }
  return totals;
}

json Round(double value, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

int Run(const Options& options) {
  RaiseDescriptorLimit();
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "bench-fleet-load-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::cerr << "cannot create a temporary directory\n";
    return 1;
  }
  const std::string dir = dir_template;
  struct RemoveDir {
    std::string path;
    bool keep;
    ~RemoveDir() {
      std::error_code ec;
      if (!keep) std::filesystem::remove_all(path, ec);
    }
  } remove_dir{dir, options.keep_dir};

  CoordinatorProcess coordinator;
  std::string error;
  const std::vector<std::string> argv = {options.coordinator,
                                         "--db",
                                         dir + "/results.db",
                                         "--agents",
                                         "tcp://127.0.0.1:*",
                                         "--clients",
                                         "tcp://127.0.0.1:*",
                                         "--heartbeat-ms",
                                         std::to_string(options.heartbeat_ms),
                                         "--liveness",
                                         std::to_string(options.liveness),
                                         "--ready-file",
                                         dir + "/coordinator.ready"};
  if (!coordinator.Start(argv, dir + "/coordinator.log", dir + "/coordinator.ready", &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  const pid_t pid = coordinator.pid();
  Simulator simulator(options, coordinator.agents_endpoint(), coordinator.clients_endpoint());
  const auto register_start = Clock::now();
  if (!simulator.Connect(&error) || !simulator.RegisterAll(&error)) {
    std::cerr << error << "; coordinator log: " << dir
              << "/coordinator.log (--keep-dir keeps it)\n";
    return 1;
  }
  const double register_s = Seconds(Clock::now() - register_start);

  const bool idle = options.idle_s > 0;
  const double cpu_before = ProcessCpuSeconds(pid);
  const double own_before = OwnCpuSeconds();
  const auto start = Clock::now();
  bool ok = true;
  if (idle) {
    simulator.Idle(options.idle_s);
  } else {
    ok = simulator.RunJobs(&error);
  }
  const double wall_s = Seconds(Clock::now() - start);
  const double cpu_s = ProcessCpuSeconds(pid) - cpu_before;
  const double own_s = OwnCpuSeconds() - own_before;
  const json status = simulator.Status();
  // What the SQLite file holds, read back through the coordinator.
  const json stored_rows = idle ? json() : simulator.QueryValue("SELECT COUNT(*) FROM results");
  const double peak_rss_mb = PeakRssMb(pid);
  coordinator.Stop();

  const Tally& tally = simulator.tally();
  const json counters = status.is_object() ? status["counters"] : json::object();
  const json totals = SweepTotals(status);
  json report = {{"mode", idle ? "idle" : "jobs"},
                 {"agents", options.agents},
                 {"wall_s", Round(wall_s, 3)},
                 {"coordinator_cpu_s", Round(cpu_s, 3)},
                 {"coordinator_cpu_fraction", Round(cpu_s / wall_s, 4)},
                 {"coordinator_peak_rss_mb", Round(peak_rss_mb, 1)},
                 {"simulator_cpu_s", Round(own_s, 3)},
                 {"status_reply_max_ms", Round(simulator.max_status_ms(), 2)},
                 {"status_reply_p50_ms", Round(simulator.median_status_ms(), 2)},
                 {"status_replies", simulator.status_replies()},
                 {"coordinator_heartbeats", tally.coordinator_heartbeats},
                 {"register_s", Round(register_s, 3)},
                 {"registers_sent", tally.registers_sent},
                 {"simulator_heartbeat_late_max_ms", Round(tally.heartbeat_late_max_ms, 2)},
                 {"reregistrations", tally.reregistrations},
                 {"coordinator_silences", tally.coordinator_silences},
                 {"errors", tally.errors},
                 {"counters", counters}};
  if (!idle) {
    report["jobs"] = options.jobs;
    report["job_delay_ms"] = options.job_delay_ms;
    report["sweeps"] = simulator.sweeps();
    report["jobs_done"] = totals["done"];
    report["result_rows_in_db"] = stored_rows;
    report["jobs_per_s"] = Round(totals["done"].get<double>() / wall_s, 1);
    report["coordinator_cpu_ms_per_job"] =
        Round(1000 * cpu_s / std::max<double>(1, options.jobs), 3);
    report["dispatch_latency_ms"] = {{"n", tally.dispatch_latency_ms.size()},
                                     {"p50", Round(Percentile(tally.dispatch_latency_ms, 0.5), 3)},
                                     {"p99", Round(Percentile(tally.dispatch_latency_ms, 0.99), 3)},
                                     {"max", Round(Percentile(tally.dispatch_latency_ms, 1.0), 3)}};
    report["submit_reply_max_ms"] = Round(simulator.max_submit_ms(), 2);
    report["jobs_failed"] = totals["failed"];
    report["attempts_lost"] = counters.value("requeued_jobs", int64_t{0});
    report["duplicate_answers"] = tally.duplicate_answers;
    report["results_sent"] = tally.results_sent;
    report["result_resends"] = tally.result_resends;
    report["offers_while_busy"] = tally.offers_while_busy;
    report["acks"] = tally.acks;
  }
  std::cout << report.dump() << std::endl;

  std::cerr << "fleet load: " << options.agents << " agents, "
            << (idle ? "idle for " + std::to_string(options.idle_s) + " s"
                     : std::to_string(options.jobs) + " jobs")
            << "\n";
  auto row = [](const std::string& what, const json& value) {
    std::cerr << "  " << what << std::string(what.size() < 38 ? 38 - what.size() : 1, ' ')
              << (value.is_string() ? value.get<std::string>() : value.dump()) << "\n";
  };
  row("fleet registered in s", report["register_s"]);
  row("wall s", report["wall_s"]);
  if (!idle) {
    row("jobs done / failed", json(totals["done"].dump() + " / " + totals["failed"].dump()));
    row("result rows in the database", report["result_rows_in_db"]);
    row("jobs/s", report["jobs_per_s"]);
    row("coordinator CPU ms per job", report["coordinator_cpu_ms_per_job"]);
    row("dispatch latency p50 / p99 ms", json(report["dispatch_latency_ms"]["p50"].dump() + " / " +
                                              report["dispatch_latency_ms"]["p99"].dump()));
    row("submit reply max ms", report["submit_reply_max_ms"]);
    row("attempts lost", report["attempts_lost"]);
    row("duplicate answers", report["duplicate_answers"]);
    row("result resends", report["result_resends"]);
  }
  row("coordinator CPU s", report["coordinator_cpu_s"]);
  row("coordinator CPU, fraction of a core", report["coordinator_cpu_fraction"]);
  row("coordinator peak RSS MiB", report["coordinator_peak_rss_mb"]);
  row("status reply p50 / max ms",
      json(report["status_reply_p50_ms"].dump() + " / " + report["status_reply_max_ms"].dump()));
  row("simulator CPU s", report["simulator_cpu_s"]);
  row("simulator heartbeat lateness max ms", report["simulator_heartbeat_late_max_ms"]);
  for (const std::string& text : tally.error_texts) row("error", json(text));
  if (options.keep_dir) row("kept", json(dir));
  if (!ok) {
    std::cerr << error << "; coordinator log: " << dir
              << "/coordinator.log (--keep-dir keeps it)\n";
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"bench_fleet_load: a real coordinator under N simulated agents and M jobs"};
  app.add_option("--agents", options.agents, "simulated agents, one DEALER socket each")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--jobs", options.jobs, "jobs to submit (sweeps of at most 100000)")
      ->check(CLI::Range(int64_t{1}, int64_t{2000000}))
      ->capture_default_str();
  app.add_option("--job-delay-ms", options.job_delay_ms,
                 "how long an agent holds a job before its result")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option(
         "--idle-s", options.idle_s,
         "submit nothing; heartbeat this many seconds and report the coordinator's idle CPU")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout-s", options.timeout_s, "give up when the jobs are not done by then")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--heartbeat-ms", options.heartbeat_ms, "the coordinator's heartbeat interval")
      ->check(CLI::Range(50, 60000))
      ->capture_default_str();
  app.add_option("--liveness", options.liveness, "the coordinator's liveness")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--coordinator", options.coordinator, "benchfleet-coordinator to run")
      ->capture_default_str();
  app.add_flag("--keep-dir", options.keep_dir,
               "keep the temporary directory (database, coordinator log)");
  CLI11_PARSE(app, argc, argv);
  return Run(options);
}
