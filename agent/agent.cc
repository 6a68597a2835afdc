#include "agent/agent.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "agent/host_pace.h"
#include "agent/host_probe.h"
#include "agent/worker_probe.h"
#include "common/agent_messages.h"
#include "common/cpu_list.h"
#include "common/log.h"
#include "common/transport.h"

namespace benchfleet {
namespace {

// Reconnect backoff after the coordinator went silent: 1 s doubling up to 32 s.
constexpr int kReconnectBackoffMaxMs = 32000;
// Longest the loop sleeps in one poll, so timers stay punctual.
constexpr int kAgentTickMs = 100;
// A spread gang's rendezvous (and each collective call) is bounded by the job's timeout
// and by this.
constexpr double kMaxGangRendezvousS = 600;
// A model chunk asked for and not answered within this is asked for again (the
// coordinator answers in milliseconds; a reconnect loses what was in flight).
constexpr int kModelFetchRetryMs = 5000;

// The local address the kernel routes from towards the coordinator's endpoint
// ("tcp://HOST:PORT"): what the ranks of a gang advertise by default. A UDP socket's
// connect() picks the route without sending anything.
StatusOr<std::string> AddressTowards(const std::string& endpoint) {
  std::string rest = endpoint.rfind("tcp://", 0) == 0 ? endpoint.substr(6) : endpoint;
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos)
    return InvalidArgument("coordinator endpoint " + endpoint + " has no port");
  std::string host = rest.substr(0, colon);
  const std::string port = rest.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return InvalidArgument("cannot resolve the coordinator's host " + host +
                           " to an IPv4 address; give --advertise-address");
  }
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  socklen_t size = sizeof local;
  const bool ok = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) == 0;
  freeaddrinfo(found);
  if (fd >= 0) close(fd);
  if (!ok)
    return Unavailable("no route to the coordinator's host " + host + "; give --advertise-address");
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  return std::string(text);
}

}  // namespace

std::string NewInstanceId() {
  std::random_device random;
  char id[17];
  snprintf(id, sizeof id, "%08x%08x", random(), random());
  return id;
}

AgentDaemon::AgentDaemon(AgentOptions options)
    : options_(std::move(options)),
      heartbeat_ms_(options_.heartbeat_ms),
      liveness_(options_.liveness) {}

AgentDaemon::~AgentDaemon() = default;

Status AgentDaemon::Start() {
  // Refuse what cannot work: an agent without a working worker would register and fail
  // every job it is given.
  if (options_.workers.empty()) return InvalidArgument("no worker: give --worker PATH");
  if (options_.workers.size() > kMaxAgentWorkers) {
    return InvalidArgument("--worker: at most " + std::to_string(kMaxAgentWorkers) +
                           " workers, got " + std::to_string(options_.workers.size()));
  }
  std::vector<TorchFacts> workers;
  for (const std::string& path : options_.workers) {
    ASSIGN_OR_RETURN(nlohmann::json probe, ProbeWorker(path, Millis(kWorkerProbeTimeoutMs)));
    // The probe is sent on as capabilities.torch (and workers[i]): one the coordinator
    // would refuse is refused here, where it can be fixed.
    auto torch = TorchFacts::FromJson(probe, "capabilities.torch");
    if (!torch.ok()) {
      return FailedPrecondition("worker " + path + " --probe printed " + torch.status().message() +
                                "; the coordinator would refuse this agent, so it does not start "
                                "(fix the worker or point --worker at one)");
    }
    torch->worker_path = path;
    LOG_INFO("worker " << path << ": torch " << torch->torch_version.value_or("(unknown)"));
    workers.push_back(std::move(torch).value());
  }
  if (options_.cpus.empty()) options_.cpus = AllowedCpus();
  if (options_.advertise_address.empty()) {
    ASSIGN_OR_RETURN(options_.advertise_address, AddressTowards(options_.coordinator));
  } else if (!FreePort(options_.advertise_address).ok()) {
    return InvalidArgument("--advertise-address " + options_.advertise_address +
                           ": not an IPv4 address of this host");
  }
  spool_ = std::make_unique<SpoolDirectory>(options_.state_dir + "/spool");
  RETURN_IF_ERROR(spool_->Open());
  if (options_.package_cache.empty()) options_.package_cache = options_.state_dir + "/packages";
  const RunnerOptions runner_options{options_.workers.front(), options_.state_dir + "/jobs",
                                     options_.cpus, options_.package_cache};
  runner_ = std::make_unique<WorkerRunner>(runner_options);
  pair_runner_ = std::make_unique<PairRunner>(runner_options);
  ASSIGN_OR_RETURN(models_,
                   ModelCache::Open(options_.state_dir + "/models", options_.model_cache_bytes));

  capabilities_.host = ProbeHost();
  capabilities_.torch = workers.front();
  // A list only where there is a choice: an agent of one worker registers as before.
  if (workers.size() > 1) capabilities_.workers = workers;
  capabilities_.gpus = capabilities_.torch.gpus.value_or(std::vector<GpuInfo>());
  capabilities_.cpus = FormatCpuList(options_.cpus);
  if (!runner_->topology().cpus.empty()) capabilities_.cpu_shape = runner_->topology().Shape();
  exit_.emplace(options_.exit, Now());
  // A new routing id per process: a restarted agent is a new peer to the coordinator.
  routing_id_ = options_.name + "/" + std::to_string(getpid());
  RETURN_IF_ERROR(StartMetrics());
  RETURN_IF_ERROR(Connect());
  size_t pending = spool_->size();
  LOG_INFO("agent " << options_.name << " on CPUs " << FormatCpuList(options_.cpus) << ", address "
                    << options_.advertise_address << ", " << pending
                    << " spooled results to deliver, coordinator " << options_.coordinator);
  return Status::Ok();
}

Status AgentDaemon::Connect() {
  // Paranoid Pirate: a fresh socket drops whatever was queued for the silent peer.
  socket_.reset();
  auto socket = ConnectDealer(context_, options_.coordinator, routing_id_,
                              options_.curve ? &*options_.curve : nullptr);
  if (!socket.ok()) {
    reconnect_at_ = Now() + Millis(std::max(reconnect_backoff_ms_, kHeartbeatIntervalMs));
    return socket.status();
  }
  socket->set(zmq::sockopt::reconnect_ivl, kHeartbeatIntervalMs);
  socket->set(zmq::sockopt::reconnect_ivl_max, kReconnectBackoffMaxMs);
  socket_ = std::make_unique<zmq::socket_t>(std::move(*socket));
  registered_ = false;
  MonoTime now = Now();
  last_heard_ = now;
  next_register_ = now;
  next_heartbeat_ = now;
  next_resend_ = now;
  return Status::Ok();
}

void AgentDaemon::Send(const Message& message) {
  if (!socket_) return;
  Status sent = SendMessage(*socket_, message);
  if (!sent.ok()) LOG_DEBUG("send " << message.type << ": " << sent.message());
}

Status AgentDaemon::Run(const std::atomic<bool>* stop) {
  while (!left_) {
    if (stop->load()) Leave("stopped by a signal");
    Tick(kAgentTickMs);
  }
  return Status::Ok();
}

void AgentDaemon::Tick(int wait_ms) {
  PublishHealth();  // as the last pass left it
  if (left_) return;
  if (leaving_until_) return AwaitLeft(wait_ms);
  if (!socket_ && Now() >= reconnect_at_) {
    Status connected = Connect();
    if (!connected.ok()) LOG_ERROR(connected.message());
  }
  if (!socket_) {
    if (wait_ms > 0) usleep(wait_ms * 1000);  // backing off before the next connection attempt
    if (auto ended = PollWorkers())
      Store(ended->first, ended->second.job_id, ended->second.attempt);
    LeaveWhenDue();  // with nothing left to deliver, a coordinator out of reach keeps no one
    return;
  }
  // While a cached model is being checked, a slice per pass: the poll does not wait.
  const bool checking =
      waiting_ && !waiting_->needed.empty() && models_->checking(waiting_->needed.front());
  auto readable = PollReadable({socket_.get()}, checking ? 0 : wait_ms);
  for (int i = 0; readable[0] && i < 100; ++i) {
    auto frames = ReceiveFrames(*socket_);
    if (!frames.ok() || !frames->has_value()) break;
    last_heard_ = Now();
    reconnect_backoff_ms_ = 0;  // the coordinator is there again: a reconnect goes at once
    if ((*frames)->size() != 1) {
      LOG_WARN("dropped a message of " << (*frames)->size() << " frames from the coordinator");
      continue;
    }
    auto decoded = Decode((*frames)->front());
    if (!decoded.ok()) {
      LOG_WARN("dropped a malformed message from the coordinator: " << decoded.status().message());
      continue;
    }
    Handle(*decoded);
  }
  if (auto ended = PollWorkers()) {
    const WorkerJob& job = ended->second;
    const json* result = &ended->first;
    // The pace again, at once, on the CPUs the worker ran on: the two readings bracket it
    // (a pair's runner reads it around each side itself).
    if (!job.pair && around_timing_ && around_timing_->job.job_id == job.job_id &&
        around_timing_->job.attempt == job.attempt) {
      MeasureHostPaceAfter(&around_timing_->pace);
    }
    LOG_INFO("job " << job.job_id << " attempt " << job.attempt << " finished: "
                    << (result->value("ok", false)
                            ? "ok"
                            : result->value("error", std::string("failed"))));
    Store(*result, job.job_id, job.attempt);
  }
  if (checking) AdvanceModels();
  AdvanceHostCheck();
  Timers();
  LeaveWhenDue();
}

void AgentDaemon::Handle(const Message& message) {
  // Parsed once, here; a message that does not parse is logged and dropped (the
  // coordinator that sent it is newer or broken: nothing in it can be acted on).
  auto malformed = [&](const Status& status) {
    LOG_WARN("ignored a malformed \"" << message.type
                                      << "\" from the coordinator: " << status.message());
  };
  if (message.type == msg::kRegistered) {
    auto registered = RegisteredReply::FromJson(message.body);
    if (!registered.ok()) return malformed(registered.status());
    if (!registered_) LOG_INFO("registered with " << options_.coordinator);
    registered_ = true;
    if (!ever_registered_) WriteReadyFile();
    ever_registered_ = true;
    heartbeat_ms_ = std::max(10, registered->heartbeat_ms);
    liveness_ = registered->liveness;
    reconnect_backoff_ms_ = 0;
    SendSpooled();
  } else if (message.type == msg::kHeartbeat) {
    // last_heard_ is enough.
  } else if (message.type == msg::kJob) {
    auto offer = JobOffer::FromJson(message.body);
    if (offer.ok()) return StartJob(*offer);
    // An offer whose ids are readable ends in a failed result naming what was wrong
    // (a malformed `gang`, say), so its attempt ends now rather than at its lease.
    const json& body = message.body;
    if (body["job_id"].get<int64_t>() >= 1 && body["attempt"].get<int64_t>() >= 1 &&
        body["attempt"].get<int64_t>() <= std::numeric_limits<int>::max()) {
      WorkerJob job;
      job.job_id = body["job_id"].get<int64_t>();
      job.attempt = static_cast<int>(body["attempt"].get<int64_t>());
      job.spec = body["spec"];
      Store(FailedResult(job, "cannot run the job offered: " + offer.status().message()),
            job.job_id, job.attempt);
      return;
    }
    malformed(offer.status());
  } else if (message.type == msg::kModelChunk) {
    auto chunk = ModelChunkReply::FromJson(message.body);
    if (!chunk.ok()) return malformed(chunk.status());
    ModelChunk(*chunk);
  } else if (message.type == msg::kStop) {
    auto stop = StopOrder::FromJson(message.body);
    if (!stop.ok()) return malformed(stop.status());
    StopJob(*stop);
  } else if (message.type == msg::kAck) {
    auto ack = ResultAck::FromJson(message.body);
    if (!ack.ok()) return malformed(ack.status());
    // Every outcome ends the result's life in the spool. "rejected": the coordinator
    // can never store it (it names the field at fault), so resending would only bring
    // the same answer after every reconnect.
    resend_interval_ms_ = kResultResendIntervalMs;  // the coordinator keeps up again
    Status removed = spool_->Remove(ack->job.job_id, ack->job.attempt);
    if (!removed.ok()) LOG_ERROR(removed.message());
    if (ack->outcome == ResultAck::Outcome::kRejected) {
      LOG_WARN("result of job " << ack->job.job_id << " attempt " << ack->job.attempt
                                << " rejected by the coordinator and dropped from the spool: "
                                << (ack->reason.empty() ? "(no reason given)" : ack->reason));
    } else {
      LOG_DEBUG("ack job " << ack->job.job_id << ": " << ResultAck::OutcomeName(ack->outcome));
    }
  } else if (message.type == msg::kError) {
    auto error = ErrorReport::FromJson(message.body);
    if (!error.ok()) return malformed(error.status());
    if (error->code == StatusCodeName(StatusCode::kNotFound)) {
      registered_ = false;  // the coordinator restarted or took us for dead
      next_register_ = Now();
    } else {
      LOG_WARN("coordinator says " << error->code << ": " << error->message);
    }
  } else {
    LOG_WARN("ignored unexpected message \"" << message.type << "\" from the coordinator");
  }
}

void AgentDaemon::StartJob(const JobOffer& offer) {
  WorkerJob job;
  job.job_id = offer.job.job_id;
  job.attempt = offer.job.attempt;
  job.timeout_s = offer.timeout_s;
  job.spec = offer.spec;
  job.needs = offer.needs;
  exit_->Active(Now());
  if (!exit_->TakesJobs()) {
    // The coordinator takes the offer back without costing an attempt.
    Send(ToMessage(ErrorReport{
        StatusCodeName(StatusCode::kFailedPrecondition),
        "agent is leaving: --max-jobs " + std::to_string(exit_->jobs_ended()) + " reached",
        offer.job, nullptr}));
    return;
  }
  if (Busy()) {
    Send(ToMessage(ErrorReport{StatusCodeName(StatusCode::kFailedPrecondition),
                               "agent is busy with job " + std::to_string(CurrentJob()->job_id),
                               offer.job, nullptr}));
    return;
  }
  if (!(job.timeout_s > 0)) job.timeout_s = kJobStartupAllowanceS;
  // The worker it runs on: the coordinator offered it here because one satisfies it.
  const std::vector<TorchFacts> workers = capabilities_.Workers();
  const std::optional<size_t> worker = PickWorker(workers, job.needs.worker);
  if (!worker) {
    Store(FailedResult(job, "this agent has no worker for " + job.needs.worker.Describe() +
                                " (its workers have torch " + DescribeTorchVersions(workers) + ")"),
          job.job_id, job.attempt);
    return;
  }
  job.worker_path = options_.workers.at(*worker);
  if (offer.versus) {
    // A pair is two jobs of one process each: never a gang's rank, never replicas.
    Status attached = offer.gang || LocalRanks(job) > 1
                          ? InvalidArgument("job.versus: a side of a pair is one worker process")
                          : AttachPair(*offer.versus, &job);
    if (!attached.ok()) {
      Store(FailedResult(job, "cannot run the pair: " + attached.message()), job.job_id,
            job.attempt);
      return;
    }
  }
  std::string rendezvous_store;
  if (offer.gang) {
    Status joined = JoinGang(*offer.gang, &job, &rendezvous_store);
    if (!joined.ok()) {
      Store(FailedResult(job, "cannot join the gang: " + joined.message()), job.job_id,
            job.attempt);
      return;
    }
  }
  auto needed = ModelsToPlace(&job);
  if (!needed.ok()) {
    Store(FailedResult(job, needed.status().message()), job.job_id, job.attempt);
    return;
  }
  if (!needed->empty()) {
    // Checked (or fetched) first, a slice or a chunk per pass of the loop, while
    // heartbeats go on (the job counts as running: its lease holds). Jobs with models
    // are one process: never a gang's rank.
    waiting_ = WaitingForModels{std::move(job), std::move(*needed), {}, Now()};
    AdvanceModels();
    return;
  }
  RunJob(std::move(job), rendezvous_store);
}

void AgentDaemon::RunJob(WorkerJob job, const std::string& rendezvous_store) {
  // A gang's ranks meet at a rendezvous that does not wait: they start at once.
  if (!rendezvous_store.empty() || LocalRanks(job) > 1 || IsCalibration(job) ||
      job.spec.contains("distributed")) {
    return StartWorker(std::move(job), rendezvous_store);
  }
  // Where its threads go (agent/thread_placement.h): a placement this agent cannot give
  // fails the job, with the reason.
  auto placement = runner_->PlacementFor(job);
  if (!placement.ok()) {
    Store(FailedResult(job, placement.status().message()), job.job_id, job.attempt);
    return;
  }
  const json& policy = job.spec.value("host_check", json("record"));
  // The host check reads the host's CPU use over a real window: the system clock's.
  checking_host_ = CheckingHost{std::move(job),
                                policy.is_string() ? policy.get<std::string>() : "record",
                                host_checker_.Read(),
                                MonoNow(),
                                MonoNow(),
                                std::move(placement).value()};
}

void AgentDaemon::AdvanceHostCheck() {
  if (!checking_host_) return;
  const MonoTime now = MonoNow();
  if (now - checking_host_->since < Millis(kHostCheckWindowMs)) return;
  const HostReading after = host_checker_.Read();
  const double window_s = std::chrono::duration<double>(now - checking_host_->since).count();
  HostCheck check =
      host_checker_.Judge(checking_host_->before, after, window_s, checking_host_->placement.cpus);
  const double waited_s = std::chrono::duration<double>(now - checking_host_->started).count();
  if (check.busy() && checking_host_->policy == "wait" && waited_s < kHostCheckMaxWaitS) {
    checking_host_->before = after;  // another window
    checking_host_->since = now;
    return;
  }
  check.facts["policy"] = checking_host_->policy;
  check.facts["waited_s"] = std::round(waited_s * 10) / 10;
  CheckingHost checked = std::move(*checking_host_);
  checking_host_.reset();
  if (check.busy() && checked.policy == "refuse") {
    std::string reasons;
    for (const json& reason : check.facts["reasons"])
      reasons += (reasons.empty() ? "" : "; ") + reason.get<std::string>();
    json failed = FailedResult(checked.job, "host_check \"refuse\": the host is busy: " + reasons);
    failed["host_check"] = check.facts;
    Store(failed, checked.job.job_id, checked.job.attempt);
    return;
  }
  if (check.busy()) {
    LOG_WARN("job " << checked.job.job_id << " attempt " << checked.job.attempt
                    << ": the host is busy (" << check.facts["reasons"].dump()
                    << "); it runs, flagged");
  }
  // The host's pace last, just before the worker starts (agent/host_pace.h): nothing of
  // the agent ran in the check's window.
  around_timing_ =
      AroundTiming{JobAttempt{checked.job.job_id, checked.job.attempt},
                   json{{"host_check", check.facts}, {"placement", checked.placement.ToJson()}},
                   checked.job.pair ? HostPace{} : MeasureHostPace(checked.placement.cpus)};
  // On the CPUs the check read; a pair's runner reads the pace around each side itself.
  checked.job.cpus = checked.placement.cpus;
  StartWorker(std::move(checked.job), "");
}

void AgentDaemon::StartWorker(WorkerJob job, const std::string& rendezvous_store) {
  if (job.pair) {
    const std::shared_ptr<PairJob> pair = job.pair;
    PairOffer offer;
    offer.pairing = pair->pairing;
    offer.first = pair->first;
    Status started = pair_runner_->Start(job, pair->b, offer, job.cpus);
    if (!started.ok()) {
      Store(FailedResult(job, "cannot start the pair: " + started.message()), job.job_id,
            job.attempt);
    }
    return;
  }
  Status started = runner_->Start(job);
  if (!started.ok()) {
    Store(FailedResult(job, "cannot start the worker: " + started.message()), job.job_id,
          job.attempt);
    return;
  }
  if (!rendezvous_store.empty()) {
    RendezvousReport rendezvous;
    rendezvous.job = JobAttempt{job.job_id, job.attempt};
    const size_t colon = rendezvous_store.rfind(':');
    rendezvous.store_host = rendezvous_store.substr(0, colon);
    rendezvous.store_port = std::stol(rendezvous_store.substr(colon + 1));
    Send(ToMessage(rendezvous));
  }
}

namespace {

// The model_args of `job` that name a file (a TorchScript module, an AOTInductor
// package: its model's, then its reference's), each with the field prefix its errors name.
std::vector<std::pair<json*, std::string>> ModelArgsOfFiles(WorkerJob* job) {
  std::vector<std::pair<json*, std::string>> out;
  auto add = [&](json& spec, const std::string& where) {
    const json model = spec.value("model", json());
    if (model.is_string() && IsModelFile(model.get<std::string>()) && spec.contains("model_args") &&
        spec["model_args"].is_object()) {
      out.emplace_back(&spec["model_args"], where);
    }
  };
  add(job->spec, "");
  if (job->spec.contains("reference") && job->spec["reference"].is_object())
    add(job->spec["reference"], "reference.");
  if (job->pair) {
    json& b = job->pair->b.spec;
    add(b, "versus.b.");
    if (b.contains("reference") && b["reference"].is_object())
      add(b["reference"], "versus.b.reference.");
  }
  return out;
}

}  // namespace

StatusOr<std::vector<std::string>> AgentDaemon::ModelsToPlace(WorkerJob* job) {
  std::vector<std::string> needed;
  for (auto& [args, where] : ModelArgsOfFiles(job)) {
    if (args->contains("sha256") && (*args)["sha256"].is_string()) {
      const std::string sha256 = (*args)["sha256"].get<std::string>();
      args->erase("path");
      if (std::find(needed.begin(), needed.end(), sha256) == needed.end()) needed.push_back(sha256);
    } else if (args->contains("agent_path") && (*args)["agent_path"].is_string()) {
      auto local = AllowedLocalModel((*args)["agent_path"].get<std::string>(), options_.models_dir);
      if (!local.ok()) return Status(local.status().code(), where + local.status().message());
      (*args)["path"] = *local;
    } else {
      // A path straight from the coordinator would let any client read this host's files.
      return PermissionDenied(
          where +
          "model_args.path: this agent loads a model file only by "
          "model_args.sha256 (uploaded by benchfleet submit) or by model_args.agent_path "
          "under its --models-dir");
    }
  }
  return needed;
}

void AgentDaemon::AdvanceModels() {
  while (waiting_ && !waiting_->needed.empty()) {
    const std::string sha256 = waiting_->needed.front();
    if (models_->fetching(sha256)) return;  // its chunks come as messages
    if (!models_->checking(sha256)) {
      if (!models_->Holds(sha256)) {
        LOG_INFO("job " << waiting_->job.job_id << " attempt " << waiting_->job.attempt
                        << ": fetching model " << sha256);
        models_->Begin(sha256);
        FetchNextChunk();
        return;
      }
      models_->BeginCheck(sha256);
    }
    auto checked = models_->StepCheck(kModelCheckSliceBytes);
    if (!checked) return;          // more next pass
    if (!checked->ok()) continue;  // changed on disk and removed: fetched next
    waiting_->placed[sha256] = **checked;
    waiting_->needed.erase(waiting_->needed.begin());
  }
  if (!waiting_) return;
  WorkerJob job = std::move(waiting_->job);
  const std::map<std::string, std::string> placed = std::move(waiting_->placed);
  waiting_.reset();
  for (auto& [args, where] : ModelArgsOfFiles(&job)) {
    if (args->contains("sha256")) (*args)["path"] = placed.at((*args)["sha256"].get<std::string>());
  }
  RunJob(std::move(job), "");
}

void AgentDaemon::FailWaitingJob(const std::string& reason) {
  WorkerJob job = std::move(waiting_->job);
  waiting_.reset();
  Store(FailedResult(job, reason), job.job_id, job.attempt);
}

void AgentDaemon::FetchNextChunk() {
  if (!waiting_) return;
  waiting_->asked = Now();
  Send(ToMessage(ModelFetchRequest{waiting_->needed.front(), models_->received()}));
}

void AgentDaemon::ModelChunk(const ModelChunkReply& chunk) {
  if (!waiting_ || !models_->fetching(chunk.sha256) || chunk.offset != models_->received()) {
    return;  // an answer to a fetch given up, or a duplicate of a chunk re-asked for
  }
  auto progress = models_->Append(chunk);
  if (!progress.ok()) {
    return FailWaitingJob("model_args.sha256: cannot fetch model " + chunk.sha256 + ": " +
                          progress.status().message());
  }
  if (!progress->done) return FetchNextChunk();
  // Checked as it arrived: in place.
  waiting_->placed[chunk.sha256] = progress->path;
  waiting_->needed.erase(waiting_->needed.begin());
  AdvanceModels();
}

std::optional<std::pair<json, WorkerJob>> AgentDaemon::PollWorkers() {
  if (auto result = runner_->Poll()) return std::make_pair(std::move(*result), runner_->job());
  if (auto result = pair_runner_->Poll())
    return std::make_pair(std::move(*result), pair_runner_->job());
  return std::nullopt;
}

Status AgentDaemon::AttachPair(const PairOffer& pair, WorkerJob* job) {
  auto paired = std::make_shared<PairJob>();
  paired->pairing = pair.pairing;
  paired->first = pair.first;
  WorkerJob& b = paired->b;
  b.job_id = pair.b_job_id;
  b.attempt = job->attempt;
  b.spec = pair.b_spec;
  b.needs = pair.b_needs;
  // Run one after the other, each side has half of the pair's time.
  b.timeout_s = pair.pairing == "interleaved" ? job->timeout_s / 2 : job->timeout_s;
  if (pair.pairing == "interleaved") job->timeout_s /= 2;
  const std::vector<TorchFacts> workers = capabilities_.Workers();
  if (pair.pairing == "in_process") {
    // One worker runs both: the first that satisfies each side's needs.
    std::optional<size_t> both;
    for (size_t i = 0; i < workers.size() && !both; ++i) {
      const std::vector<TorchFacts> one = {workers[i]};
      if (PickWorker(one, job->needs.worker) && PickWorker(one, b.needs.worker)) both = i;
    }
    if (!both) {
      return FailedPrecondition("no worker of this agent runs both sides of the in-process pair (" +
                                job->needs.worker.Describe() + "; " + b.needs.worker.Describe() +
                                ")");
    }
    job->worker_path = b.worker_path = options_.workers.at(*both);
  } else {
    const std::optional<size_t> worker = PickWorker(workers, b.needs.worker);
    if (!worker) {
      return FailedPrecondition("this agent has no worker for side B (" +
                                b.needs.worker.Describe() + "; its workers have torch " +
                                DescribeTorchVersions(workers) + ")");
    }
    b.worker_path = options_.workers.at(*worker);
  }
  job->pair = std::move(paired);
  return Status::Ok();
}

std::optional<JobAttempt> AgentDaemon::CurrentJob() const {
  if (runner_->busy()) return JobAttempt{runner_->job().job_id, runner_->job().attempt};
  if (pair_runner_->busy())
    return JobAttempt{pair_runner_->job().job_id, pair_runner_->job().attempt};
  if (waiting_) return JobAttempt{waiting_->job.job_id, waiting_->job.attempt};
  if (checking_host_) return JobAttempt{checking_host_->job.job_id, checking_host_->job.attempt};
  return std::nullopt;
}

Status AgentDaemon::JoinGang(const GangRole& role, WorkerJob* job, std::string* rendezvous_store) {
  std::string store = role.store;
  if (role.rank == 0) {
    ASSIGN_OR_RETURN(int port, FreePort(options_.advertise_address));
    store = options_.advertise_address + ":" + std::to_string(port);
    *rendezvous_store = store;
  }
  job->spec["distributed"] = {{"rank", role.rank},
                              {"world_size", role.world_size},
                              {"store", store},
                              {"address", options_.advertise_address},
                              {"timeout_s", std::min(job->timeout_s, kMaxGangRendezvousS)}};
  LOG_INFO("job " << job->job_id << " attempt " << job->attempt << ": rank " << role.rank << " of "
                  << role.world_size << ", store " << store << ", address "
                  << options_.advertise_address);
  return Status::Ok();
}

void AgentDaemon::StopJob(const StopOrder& stop) {
  if (const std::optional<JobAttempt> current = CurrentJob();
      current && current->job_id == stop.job.job_id && current->attempt == stop.job.attempt) {
    ++health_.jobs["stopped"];
  }
  if (checking_host_ && checking_host_->job.job_id == stop.job.job_id &&
      checking_host_->job.attempt == stop.job.attempt) {
    LOG_WARN("job " << stop.job.job_id << " attempt " << stop.job.attempt
                    << " stopped by the coordinator during its host check: " << stop.reason);
    checking_host_.reset();
    return;
  }
  if (waiting_ && waiting_->job.job_id == stop.job.job_id &&
      waiting_->job.attempt == stop.job.attempt) {
    LOG_WARN("job " << stop.job.job_id << " attempt " << stop.job.attempt
                    << " stopped by the coordinator while its model was fetched: " << stop.reason);
    waiting_.reset();
    return;
  }
  if (pair_runner_->busy() && pair_runner_->job().job_id == stop.job.job_id &&
      pair_runner_->job().attempt == stop.job.attempt) {
    LOG_WARN("job " << stop.job.job_id << " attempt " << stop.job.attempt
                    << " stopped by the coordinator: " << stop.reason);
    pair_runner_->Kill();
    return;
  }
  if (!runner_->busy() || runner_->job().job_id != stop.job.job_id ||
      runner_->job().attempt != stop.job.attempt) {
    return;
  }
  LOG_WARN("job " << stop.job.job_id << " attempt " << stop.job.attempt
                  << " stopped by the coordinator: " << stop.reason);
  runner_->Kill();  // its outcome is decided elsewhere: no result
}

void AgentDaemon::Store(const json& given, int64_t job_id, int attempt) {
  ++health_.jobs[JobOutcome(given)];
  exit_->JobEnded(Now());
  json result = given;
  // The host check and the pace around its worker go with the result.
  if (around_timing_ && around_timing_->job.job_id == job_id &&
      around_timing_->job.attempt == attempt) {
    json facts = std::move(around_timing_->facts);
    facts["host_pace"] = around_timing_->pace.ToJson();
    for (const auto& [key, value] : facts.items()) {
      if (result.is_object() && !result.contains(key)) result[key] = value;
    }
    around_timing_.reset();
  }
  Status spooled = spool_->Put({job_id, attempt, result});
  if (!spooled.ok()) {
    // It stays in the spool's memory and is resent until acknowledged; only an agent
    // restart before the ack would lose it.
    LOG_ERROR("cannot spool result of job " << job_id << ": " << spooled.message());
  }
  if (registered_) {
    Send(ResultReport::Make({job_id, attempt}, result));
    // It was just sent: the spool's resend timer, perhaps already due, must not send it
    // again in this same tick before the coordinator could answer.
    next_resend_ = std::max(next_resend_, Now() + Millis(resend_interval_ms_));
  } else if (socket_) {
    // Registrations queued on a connection the coordinator has not answered yet list
    // the spool as it was before this result: the first to arrive would let the
    // coordinator hand the job out again before the result comes, and fence it as
    // stale. A fresh socket drops them; the next registration names this result too.
    Status connected = Connect();
    if (!connected.ok()) LOG_ERROR(connected.message());
  }
}

// Resends come from the spool's memory: no file is read or parsed on this path.
void AgentDaemon::SendSpooled() {
  for (const SpooledResult& entry : spool_->List()) {
    Send(ResultReport::Make({entry.job_id, entry.attempt}, entry.result));
  }
  next_resend_ = Now() + Millis(resend_interval_ms_);
  if (spool_->size() > 0) {
    resend_interval_ms_ = std::min(resend_interval_ms_ * 2, kResultResendMaxIntervalMs);
  }
}

void AgentDaemon::Timers() {
  MonoTime now = Now();
  if (!registered_) {
    if (now >= next_register_) {
      RegisterRequest registration;
      registration.agent = options_.name;
      registration.tags = options_.tags;
      registration.capabilities = capabilities_;
      // Only until the first registration went through: a re-registration (after a
      // coordinator restart) is not an agent start.
      registration.calibrate = options_.calibrate_at_start && !ever_registered_;
      // Results waiting in the spool: the coordinator keeps those jobs for us until
      // they arrive, instead of handing them out again.
      for (const SpooledResult& entry : spool_->List())
        registration.spooled.push_back({entry.job_id, entry.attempt});
      // Sent with every registration; the coordinator records it when it changed.
      registration.price = options_.price;
      // Registering again after a reconnect, mid-job: this keeps the job's lease, which
      // no heartbeat renews until the coordinator answers.
      registration.running = CurrentJob();
      registration.instance = instance_;
      Send(ToMessage(registration));
      next_register_ = now + Millis(kRegisterRetryMs);
    }
  } else {
    if (now >= next_heartbeat_) {
      benchfleet::Heartbeat heartbeat;
      heartbeat.running = CurrentJob();
      Send(ToMessage(heartbeat));
      next_heartbeat_ = now + Millis(heartbeat_ms_);
    }
    if (now >= next_resend_) SendSpooled();
    // A chunk asked for and never answered (lost with a connection): asked again.
    if (waiting_ && !waiting_->needed.empty() && models_->fetching(waiting_->needed.front()) &&
        now - waiting_->asked > Millis(kModelFetchRetryMs)) {
      FetchNextChunk();
    }
  }
  if (socket_ && now - last_heard_ > Millis(int64_t{heartbeat_ms_} * liveness_)) {
    LOG_WARN("coordinator silent for " << (int64_t{heartbeat_ms_} * liveness_)
                                       << " ms; reconnecting in " << reconnect_backoff_ms_
                                       << " ms");
    // Drop the socket now; Run() makes a new one when the backoff has passed: at once the
    // first time, so that a job running here is named to the coordinator again (its
    // registration keeps the lease) before the liveness window of its last heartbeat
    // runs out; then 1 s on, doubling. The worker keeps running meanwhile and its result
    // is spooled as soon as it ends.
    socket_.reset();
    registered_ = false;
    ++health_.reconnects;
    reconnect_at_ = now + Millis(reconnect_backoff_ms_);
    reconnect_backoff_ms_ = reconnect_backoff_ms_ == 0
                                ? kHeartbeatIntervalMs
                                : std::min(reconnect_backoff_ms_ * 2, kReconnectBackoffMaxMs);
  }
}

}  // namespace benchfleet
