// The agent daemon: registers this host with the coordinator, heartbeats, runs offered
// jobs one at a time in worker processes, and delivers every result (from its spool)
// until the coordinator acknowledges it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "agent/agent_metrics.h"
#include "agent/exit_policy.h"
#include "agent/host_check.h"
#include "agent/host_pace.h"
#include "agent/model_cache.h"
#include "agent/pair_runner.h"
#include "agent/runner.h"
#include "agent/spool.h"
#include "common/agent_messages.h"
#include "common/capabilities.h"
#include "common/clock.h"
#include "common/curve.h"
#include "common/limits.h"
#include "common/model_transfer.h"
#include "common/protocol.h"

namespace benchfleet {

struct AgentOptions {
  std::string coordinator = "tcp://127.0.0.1:5556";
  std::string name;  // default: the host name
  std::vector<std::string> tags;
  std::vector<int> cpus;  // default: every CPU this process may use
  // The workers (--worker, given once per LibTorch the agent carries): each is probed
  // and registered (capabilities.workers); a job runs on the first that satisfies its
  // needs (WorkerNeeds), one that asks nothing on the first. Default: benchfleet-worker
  // beside this program.
  std::vector<std::string> workers;
  std::string state_dir;  // spool/ and jobs/ below it
  int heartbeat_ms = kHeartbeatIntervalMs;
  int liveness = kHeartbeatLiveness;
  // Ask the coordinator for a calibration of this host when the agent starts.
  bool calibrate_at_start = true;
  // --metrics HOST:PORT: serve the agent's health at GET /metrics in Prometheus' text
  // format (port 0: a free one); empty: no HTTP server (docs/metrics.md).
  std::string metrics_address;
  // --ready-file: once the agent first registered, {"agent", "pid"} and with --metrics
  // the "metrics" URL are written there atomically.
  std::string ready_file;
  // The IPv4 address this host's ranks of a gang spread over agents bind and advertise
  // (Gloo would otherwise use what the host name resolves to, 127.0.0.1 on many hosts).
  // Empty: the address this host reaches the coordinator from.
  std::string advertise_address;
  // Set when the coordinator serves CURVE.
  std::optional<CurveClientKeys> curve;
  // What an hour of this host costs (--price-per-hour), sent with each registration.
  std::optional<HostPrice> price;
  // A directory whose files jobs may name by model_args.agent_path (--models-dir);
  // empty: none, every model comes by its SHA-256 from the coordinator.
  std::string models_dir;
  // Where its workers keep the files they compile for the technique axis, by content
  // (--package-cache; default state_dir/packages): agents of one host may share one.
  std::string package_cache;
  // How much the cache of fetched models (state_dir/models) may hold (--model-cache-mb).
  int64_t model_cache_bytes = kDefaultModelCacheBytes;
  // When it leaves by itself (--exit-when-idle, --max-jobs; agent/exit_policy.h).
  ExitPolicyOptions exit;
  // The time the protocol's timers run on: registration retries, heartbeats, the
  // coordinator's liveness, result resends and the reconnect backoff, model fetch
  // retries. A test moves a ManualMonotonicClock on instead of waiting. What measures
  // real work (the host check's window, a worker's timeout) reads the system clock.
  const MonotonicClock* clock = &SystemMonotonicClock();
};

// 16 random hex digits: an agent process's instance id (RegisterRequest::instance).
std::string NewInstanceId();

class AgentDaemon {
 public:
  explicit AgentDaemon(AgentOptions options);
  ~AgentDaemon();

  // Probes the worker (an error when it cannot run or its --probe fails: such an agent
  // could run no job) and the host, opens the spool, connects.
  Status Start();
  // Serves until *stop becomes true or the exit policy says it is time to go, then
  // leaves (Leave): Tick with the loop's tick (100 ms) over and over.
  Status Run(const std::atomic<bool>* stop);
  // One pass of the loop: reconnects when the backoff has passed, takes what the
  // coordinator sent (waiting up to `wait_ms` for it), collects a finished worker's
  // result, and runs the timers due by the clock. Tick(0) never waits: a test drives
  // the agent with it, in its own process, moving the clock between passes.
  void Tick(int wait_ms);
  // Goes: stops its worker and tells the coordinator (`leave`, naming the job it
  // stopped); Tick then only waits for the answer (`left`, or kLeaveAnswerMs on the
  // clock) and closes the connection. An agent not registered closes at once.
  void Leave(const std::string& reason);
  // It left, by its exit policy (in Tick) or by Leave, and its connection is closed.
  bool left() const { return left_; }
  bool registered() const { return registered_; }
  bool connected() const { return socket_ != nullptr; }
  // What it registers with: known once Start() succeeded.
  const Capabilities& capabilities() const { return capabilities_; }

 private:
  Status Connect();
  void Send(const Message& message);
  void Handle(const Message& message);
  void StartJob(const JobOffer& offer);
  // Each TorchScript file `job` names (its model's, its reference's): an allowed local
  // file is put where the worker loads it (model_args.path) now; the hashes named are
  // returned, to be checked in (or fetched into) the cache first. An error (a path this
  // agent does not allow) fails the job.
  StatusOr<std::vector<std::string>> ModelsToPlace(WorkerJob* job);
  // The job waiting for its models goes on: its cached copies are checked a slice per
  // pass of the loop, the missing ones fetched; once all are in place, it runs.
  void AdvanceModels();
  // Starts `job`'s worker (its models in place): a job of one process after the host
  // check (agent/host_check.h), a gang's rank at once.
  void RunJob(WorkerJob job, const std::string& rendezvous_store);
  void StartWorker(WorkerJob job, const std::string& rendezvous_store);
  // The job whose host check is under way goes on once its window has passed: it
  // starts, waits for a quiet host, or is refused, as it asks (`host_check`).
  void AdvanceHostCheck();
  // A chunk of the model being fetched for the job waiting on it.
  void ModelChunk(const ModelChunkReply& chunk);
  void FetchNextChunk();
  void FailWaitingJob(const std::string& reason);
  // Busy: a worker runs, or a job waits for its models or its host check.
  bool Busy() const {
    return runner_->busy() || pair_runner_->busy() || waiting_.has_value() ||
           checking_host_.has_value();
  }
  std::optional<JobAttempt> CurrentJob() const;
  // A job offer's `gang` (one rank of a gang spread over agents): the worker's
  // distributed object. Rank 0 starts the store on a free port and reports it.
  Status JoinGang(const GangRole& role, WorkerJob* job, std::string* rendezvous_store);
  void StopJob(const StopOrder& stop);
  void SendSpooled();
  void Store(const json& result, int64_t job_id, int attempt);
  void Timers();
  // Leaves when the exit policy says it is time (--exit-when-idle, --max-jobs).
  void LeaveWhenDue();
  // Leaving: reads what the coordinator sent until its `left` or the deadline.
  void AwaitLeft(int wait_ms);
  void Close();
  MonoTime Now() const { return options_.clock->Now(); }
  // --metrics and --ready-file (agent/daemon_health.cc): the server started, the health
  // published for scrapes each pass, the ready file written at the first registration.
  Status StartMetrics();
  void PublishHealth();
  void WriteReadyFile();

  AgentOptions options_;
  Capabilities capabilities_;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::unique_ptr<SpoolDirectory> spool_;
  std::unique_ptr<WorkerRunner> runner_;
  std::unique_ptr<PairRunner> pair_runner_;  // side A's hand-out of a pair
  // The job whose worker (or pair) ended, if any: its result and the job it is filed
  // under (side A's for a pair); each runner's poll reaps its own.
  std::optional<std::pair<nlohmann::json, WorkerJob>> PollWorkers();
  // Side A's offer of a pair: side B's job, its worker chosen (an in-process pair runs
  // on one worker that satisfies both sides). An error fails the job.
  Status AttachPair(const PairOffer& pair, WorkerJob* job);
  std::unique_ptr<ModelCache> models_;
  // The job whose models are being fetched (one at a time, in order), if any.
  struct WaitingForModels {
    WorkerJob job;
    std::vector<std::string> needed;            // sha256s still to place; the first is under way
    std::map<std::string, std::string> placed;  // sha256 -> the checked file
    MonoTime asked;                             // when the last chunk was asked for
  };
  std::optional<WaitingForModels> waiting_;
  // The job whose host check is under way: two readings kHostCheckWindowMs apart.
  struct CheckingHost {
    WorkerJob job;
    std::string policy;  // "record", "wait" or "refuse"
    HostReading before;
    MonoTime since;             // of `before`
    MonoTime started;           // of the check: what "wait" waits at most kHostCheckMaxWaitS from
    ThreadPlacement placement;  // the CPUs its worker will run on
  };
  std::optional<CheckingHost> checking_host_;
  HostChecker host_checker_;
  // What the agent measured around the job's worker and where it put it (fields
  // host_check, host_pace and placement), for its result: the pace is read again once
  // the worker ended (MeasureHostPaceAfter).
  struct AroundTiming {
    JobAttempt job;
    nlohmann::json facts;  // host_check, placement
    HostPace pace;
  };
  std::optional<AroundTiming> around_timing_;
  std::string routing_id_;
  std::optional<ExitPolicy> exit_;         // made by Start
  std::optional<MonoTime> leaving_until_;  // set by Leave: when to stop waiting for `left`
  bool left_ = false;
  bool registered_ = false;
  bool ever_registered_ = false;
  // This process's random id, sent with every registration: a registration on a new
  // connection (after a reconnect) is then known for the same agent (schemas/protocol.md).
  const std::string instance_ = NewInstanceId();
  int heartbeat_ms_;  // as the coordinator asked in "registered"
  int liveness_;
  MonoTime last_heard_;  // any message from the coordinator
  MonoTime next_heartbeat_;
  MonoTime next_register_;
  MonoTime next_resend_;
  int resend_interval_ms_ = kResultResendIntervalMs;  // doubles while no ack comes
  MonoTime reconnect_at_;  // while there is no socket: when to make the next one
  // The wait before the next reconnect: 0 (at once) for the first after the coordinator
  // answered, then 1 s doubling (Timers).
  int reconnect_backoff_ms_ = kHeartbeatIntervalMs;
  // What scrapes show: its counters kept here, the rest filled in by PublishHealth.
  AgentHealth health_;
  std::unique_ptr<AgentMetrics> metrics_;  // null without --metrics
};

}  // namespace benchfleet
