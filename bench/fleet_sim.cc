#include "bench/fleet_sim.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/clock.h"
#include "common/messages.h"
#include "common/transport.h"

namespace benchfleet::fleet_load {

Status Simulator::Connect() {
  context_.set(zmq::ctxopt::max_sockets, options_.agents + 64);
  agents_.resize(options_.agents);
  for (int i = 0; i < options_.agents; ++i) {
    SimAgent& agent = agents_[i];
    agent.name = "load-" + std::to_string(i);
    auto socket = benchfleet::ConnectDealer(context_, agents_endpoint_,
                                            agent.name + "/" + std::to_string(getpid()));
    if (!socket.ok()) return socket.status();
    agent.socket = std::make_unique<zmq::socket_t>(std::move(socket).value());
  }
  auto client = benchfleet::ConnectDealer(context_, clients_endpoint_, "");
  if (!client.ok()) return client.status();
  client_ = std::make_unique<zmq::socket_t>(std::move(client).value());
  return Status::Ok();
}

void Simulator::Send(zmq::socket_t& socket, const Message& message) {
  AfterSend(socket, benchfleet::SendMessage(socket, message));
}

void Simulator::SendRaw(zmq::socket_t& socket, const benchfleet::Frames& frames) {
  AfterSend(socket, benchfleet::SendFrames(socket, frames));
}

void Simulator::AfterSend(zmq::socket_t& socket, const benchfleet::Status& sent) {
  if (!sent.ok()) RecordError("send", sent.message());
  if (auto it = socket_index_.find(socket.handle()); it != socket_index_.end()) {
    CheckBeforeWaiting(it->second);
  }
}

void Simulator::CheckBeforeWaiting(size_t index) {
  if (index >= check_queued_.size() || check_queued_[index]) return;
  check_queued_[index] = 1;
  to_check_.push_back(index);
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

Status Simulator::RegisterAll() {
  for (SimAgent& agent : agents_) SendRegister(agent);
  bool all = Serve(Clock::now() + kRegisterTimeout, [&] {
    return std::all_of(agents_.begin(), agents_.end(),
                       [](const SimAgent& a) { return a.registered; });
  });
  if (!all) {
    const auto registered = std::count_if(agents_.begin(), agents_.end(),
                                          [](const SimAgent& a) { return a.registered; });
    return DeadlineExceeded(
        std::to_string(registered) + " of " + std::to_string(agents_.size()) +
        " agents registered within " + std::to_string(kRegisterTimeout.count()) + " s (" +
        std::to_string(tally_.registers_sent) + " register messages sent, " +
        std::to_string(tally_.reregistrations) + " re-registrations after not_found, " +
        std::to_string(tally_.coordinator_silences) + " after a silent coordinator, heartbeats " +
        "at most " + std::to_string(static_cast<int>(tally_.heartbeat_late_max_ms)) + " ms late)");
  }
  return Status::Ok();
}

void Simulator::SendClient(const std::string& type, json fields, const std::string& tag) {
  int64_t id = next_request_id_++;
  fields["request_id"] = id;
  requests_[id] = {tag.empty() ? type : tag, Clock::now()};
  Send(*client_, benchfleet::MakeMessage(type, std::move(fields)));
}

Status Simulator::RunJobs() {
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
    SendClient(msg::kSubmit,
               benchfleet::SubmitRequest{
                   sweep_file, "load-" + std::to_string(getpid()) + "-" + std::to_string(sweep)}
                   .ToJson());
  }
  const size_t submits =
      static_cast<size_t>((options_.jobs + kMaxJobsPerSweep - 1) / kMaxJobsPerSweep);
  auto next_status = Clock::now();
  auto next_probe = Clock::now();
  int probes = 0;
  int64_t stored_at_last_status = -1;
  bool finished = Serve(deadline, [&] {
    if (submit_refused_) return true;
    // Status from the start: while the large sweeps go in too, a user asks.
    bool status_in_flight = std::any_of(requests_.begin(), requests_.end(), [](const auto& r) {
      return r.second.first == msg::kStatus;
    });
    // Once every job is acknowledged, ask at once instead of at the next interval.
    const int64_t stored = tally_.acks["stored"];
    const bool news = stored >= options_.jobs && stored > stored_at_last_status;
    if (!status_in_flight && (Clock::now() >= next_status || news)) {
      SendClient(msg::kStatus, benchfleet::SweepRequest{}.ToJson());
      next_status = Clock::now() + kStatusInterval;
      stored_at_last_status = stored;
    }
    if (sweep_ids_.size() < submits) return false;
    // A user's small sweep at full load: one job no agent matches (it stays queued and
    // changes nothing for the fleet), stored and answered like any other.
    const bool probe_in_flight = std::any_of(requests_.begin(), requests_.end(), [](const auto& r) {
      return r.second.first == "probe";
    });
    // At most kMaxProbes, so that status's latest sweeps still hold all of ours.
    if (!probe_in_flight && probes < kMaxProbes && Clock::now() >= next_probe &&
        tally_.acks["stored"] < options_.jobs) {
      const json probe = {
          {"name", "probe-" + std::to_string(probes++)},
          {"placement", "any"},
          {"select", {{"gpu_model", "no-such-gpu"}}},
          {"matrix", {{"model", {"mlp"}}, {"batch_size", {1}}}},
          {"timing", {{"warmup_s", 0.01}, {"min_time_s", 0.01}, {"max_time_s", 0.01}}}};
      SendClient(msg::kSubmit, benchfleet::SubmitRequest{probe, ""}.ToJson(), "probe");
      next_probe = Clock::now() + std::chrono::seconds(1);
    }
    if (!last_status_) return false;
    int found = 0;
    for (const SweepOverview& sweep : last_status_->sweeps) {
      if (std::find(sweep_ids_.begin(), sweep_ids_.end(), sweep.sweep_id) == sweep_ids_.end())
        continue;
      if (sweep.state == "running") return false;
      ++found;
    }
    return found == static_cast<int>(sweep_ids_.size());
  });
  if (!finished) return DeadlineExceeded("the jobs did not finish within --timeout-s");
  if (submit_refused_) return FailedPrecondition("the coordinator refused a submit");
  return Status::Ok();
}

void Simulator::Idle(double seconds) {
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  Serve(end, [] { return false; });
}

StatusOr<benchfleet::StatusReply> Simulator::StatusReply() {
  last_status_.reset();
  SendClient(msg::kStatus, benchfleet::SweepRequest{}.ToJson());
  Serve(Clock::now() + std::chrono::milliseconds(benchfleet::kClientReplyTimeoutMs),
        [&] { return last_status_.has_value(); });
  if (!last_status_) return DeadlineExceeded("no status reply within the client timeout");
  return *last_status_;
}

json Simulator::QueryValue(const std::string& sql) {
  last_rows_ = nullptr;
  SendClient(msg::kQuery, benchfleet::QueryRequest{sql}.ToJson());
  Serve(Clock::now() + std::chrono::milliseconds(benchfleet::kClientReplyTimeoutMs),
        [&] { return last_rows_.is_object(); });
  if (!last_rows_.is_object() || last_rows_["rows"].empty() || last_rows_["rows"][0].empty())
    return nullptr;
  return last_rows_["rows"][0][0];
}

template <typename Done>
bool Simulator::Serve(Clock::time_point deadline, Done done) {
  // zmq_poll over 1,000 sockets asks each of them for its events before and after it
  // waits: milliseconds per call, which showed up as dispatch latency that was the
  // simulator's own. epoll over the sockets' ZMQ_FD wakes for the few that changed.
  // ZMQ_FD only signals, edge-like, that the socket's state may have changed, and a
  // send can take that signal in: so each socket signalled or sent on is asked for
  // ZMQ_EVENTS (and drained) before the next wait.
  std::vector<zmq::socket_t*> sockets;
  for (SimAgent& agent : agents_) sockets.push_back(agent.socket.get());
  sockets.push_back(client_.get());
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) {
    RecordError("epoll", std::strerror(errno));
    return false;
  }
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() { close(fd); }
  } close_epoll{epoll_fd};
  socket_index_.clear();
  to_check_.clear();
  check_queued_.assign(sockets.size(), 0);
  for (size_t i = 0; i < sockets.size(); ++i) {
    socket_index_[sockets[i]->handle()] = i;
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = i;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, sockets[i]->get(zmq::sockopt::fd), &event) != 0) {
      RecordError("epoll", std::strerror(errno));
      return false;
    }
    CheckBeforeWaiting(i);  // messages may wait from before Serve
  }
  std::vector<epoll_event> events(1024);
  while (!done()) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    const auto wake = std::min(deadline, TimersDue(now));
    const auto wait =
        std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, Clock::duration()));
    const int timeout_ms =
        to_check_.empty()
            ? static_cast<int>(std::min(wait, std::chrono::milliseconds(kStatusInterval)).count())
            : 0;
    const int fired =
        epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int e = 0; e < fired; ++e) CheckBeforeWaiting(static_cast<size_t>(events[e].data.u64));
    std::vector<size_t> readable;
    for (size_t i : to_check_) {
      check_queued_[i] = 0;
      if (sockets[i]->get(zmq::sockopt::events) & ZMQ_POLLIN) readable.push_back(i);
    }
    to_check_.clear();
    // Everything waiting is taken off the sockets first, each message stamped as it is
    // received, and only then handled: the time the simulator spends answering one
    // agent's job must not count as another agent's dispatch latency.
    struct Inbound {
      size_t index;
      benchfleet::Frames frames;
      int64_t received_at_us;
    };
    std::vector<Inbound> inbound;
    for (size_t i : readable) {
      zmq::socket_t& socket = *sockets[i];
      while (true) {
        auto frames = benchfleet::ReceiveFrames(socket);
        if (!frames.ok()) {
          RecordError("receive", frames.status().message());
          break;
        }
        if (!frames->has_value()) break;
        inbound.push_back({i, std::move(**frames), benchfleet::UnixMicrosNow()});
      }
    }
    for (Inbound& in : inbound) {
      auto decoded = in.frames.size() == 1 ? benchfleet::Decode(in.frames[0])
                                           : benchfleet::StatusOr<benchfleet::Message>(
                                                 benchfleet::InvalidArgument("expected one frame"));
      if (!decoded.ok()) {
        ++tally_.malformed_from_coordinator;
        RecordError("malformed", decoded.status().message());
        continue;
      }
      if (in.index < agents_.size()) {
        HandleAgentMessage(agents_[in.index], *decoded, in.received_at_us);
      } else {
        HandleClientMessage(*decoded, in.frames[0]);
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
      const auto resend_at = pending.sent + std::chrono::milliseconds(pending.resend_interval_ms);
      if (now >= resend_at) {
        SendRaw(*agent.socket, {pending.frame});
        pending.sent = now;
        pending.resend_interval_ms =
            std::min(pending.resend_interval_ms * 2, benchfleet::kResultResendMaxIntervalMs);
        ++tally_.result_resends;
      }
      next = std::min(next, pending.sent + std::chrono::milliseconds(pending.resend_interval_ms));
    }
  }
  return next;
}

void Simulator::HandleAgentMessage(SimAgent& agent, const benchfleet::Message& decoded,
                                   int64_t received_at_us) {
  const json& body = decoded.body;
  const std::string& type = decoded.type;
  agent.last_heard = Clock::now();
  if (type == msg::kRegistered) {
    agent.registered = true;
    agent.silence_backoff_ms = kSilenceBackoffMinMs;
    agent.heartbeat_ms = body.value("heartbeat_ms", options_.heartbeat_ms);
    agent.liveness = body.value("liveness", options_.liveness);
    agent.next_heartbeat = Clock::now() + std::chrono::milliseconds(agent.heartbeat_ms);
  } else if (type == msg::kJob) {
    OnJob(agent, body, received_at_us);
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

void Simulator::OnJob(SimAgent& agent, const json& job, int64_t received_at_us) {
  ++tally_.jobs_received;
  const auto now = Clock::now();
  // Same host, same wall clock: the offer's commit stamp gives job committed -> received.
  if (const auto it = job.find("committed_at_us"); it != job.end() && it->is_number_integer()) {
    (agent.jobs_received++ == 0 ? tally_.commit_to_received_first_ms : tally_.commit_to_received_ms)
        .push_back(static_cast<double>(received_at_us - it->get<int64_t>()) / 1000.0);
  }
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
  double delay_ms = options_.job_delay_ms;
  if (options_.job_delay_jitter > 0) {
    std::uniform_real_distribution<double> factor(1 - options_.job_delay_jitter,
                                                  1 + options_.job_delay_jitter);
    delay_ms *= factor(delay_rng_);
  }
  agent.answer_at = now + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double, std::milli>(delay_ms));
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
  SendRaw(*agent.socket, {frame});
  agent.unacked[{job_id, attempt}] = {frame, now};
  agent.result_sent = now;
  ++tally_.results_sent;
}

void Simulator::HandleClientMessage(const benchfleet::Message& decoded, const std::string& frame) {
  const json& body = decoded.body;
  const json& id = body.contains("request_id") ? body["request_id"] : json();
  auto request = id.is_number_integer() ? requests_.find(id.get<int64_t>()) : requests_.end();
  if (request == requests_.end()) {
    RecordError("unexpected", "a reply to no request: " + frame.substr(0, 200));
    return;
  }
  const double ms = Ms(Clock::now() - request->second.second);
  const std::string request_type = request->second.first;
  requests_.erase(request);
  if (request_type == "probe" && decoded.type == msg::kSubmitted) {
    probe_submit_ms_.push_back(ms);
  } else if (decoded.type == msg::kSubmitted) {
    max_submit_ms_ = std::max(max_submit_ms_, ms);
    sweep_ids_.push_back(body.value("sweep_id", int64_t{0}));
  } else if (decoded.type == msg::kStatusReply) {
    status_ms_.push_back(ms);
    auto status = benchfleet::StatusReply::FromJson(body);
    if (status.ok()) {
      last_status_ = std::move(*status);
    } else {
      RecordError("status_reply", status.status().message());
    }
  } else if (decoded.type == msg::kRows) {
    last_rows_ = body;
  } else if (decoded.type == msg::kError) {
    RecordError(request_type + " " + body.value("code", "?"), body.value("message", ""));
    if (request_type == msg::kSubmit) submit_refused_ = true;
  }
}

}  // namespace benchfleet::fleet_load
