#include "agent/runner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/cpu_list.h"
#include "common/files.h"
#include "common/job_spec.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "common/thread_placement.h"

namespace fs = std::filesystem;

namespace benchfleet {
namespace {

// Bytes of the worker's log kept in a failed result: enough for a stack trace's head.
constexpr size_t kStderrTailBytes = 4096;

// Variables a job's environment must not inherit from the agent's, because the runner
// sets them per job.
const char* kManagedVariables[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                   "MKL_NUM_THREADS", "GOTO_NUM_THREADS",
                                   "OMP_WAIT_POLICY", kPackageCacheVariable};

std::string ReadTail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff start =
      size > static_cast<std::streamoff>(bytes) ? size - static_cast<std::streamoff>(bytes) : 0;
  in.seekg(start);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// Where the ranks of a gang on one agent meet: they never leave the host.
constexpr const char* kLoopback = "127.0.0.1";
// A gang's rendezvous (and each collective call) is bounded by the job's timeout, and
// never by more than this: a rank that cannot come fails the others within it.
constexpr double kMaxRendezvousTimeoutS = 600;

}  // namespace

StatusOr<int> FreePort(const std::string& host) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    close(fd);
    return InvalidArgument("\"" + host + "\" is not an IPv4 address");
  }
  address.sin_port = 0;
  socklen_t size = sizeof address;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0;
  const int saved = errno;
  close(fd);
  if (!ok) {
    return Unavailable("cannot find a free port on " + host +
                       " for the ranks' store: " + std::strerror(saved));
  }
  return static_cast<int>(ntohs(address.sin_port));
}

namespace {

std::string DescribeExit(int wait_status) { return ProcessExit{wait_status, {}}.Describe(); }

}  // namespace

bool IsCalibration(const WorkerJob& job) {
  return job.spec.is_object() && job.spec.value("kind", std::string()) == "calibration";
}

nlohmann::json FailedResult(const WorkerJob& job, const std::string& reason) {
  nlohmann::json result = {
      {"ok", false}, {"job_id", job.job_id}, {"attempt", job.attempt}, {"error", reason}};
  for (const char* key : {"device", "model", "mode", "dtype", "batch_size", "threads"}) {
    if (job.spec.is_object() && job.spec.contains(key)) result[key] = job.spec[key];
  }
  return result;
}

WorkerRunner::~WorkerRunner() { Kill(); }

int LocalRanks(const WorkerJob& job) {
  return static_cast<int>(std::clamp<std::int64_t>(job.needs.local_processes, 1, kMaxWorldSize));
}

bool IsReplicated(const WorkerJob& job) { return job.needs.replicated; }

std::vector<pid_t> WorkerRunner::pids() const {
  std::vector<pid_t> out;
  for (const Process& p : processes_) out.push_back(p.pid);
  return out;
}

std::vector<int> WorkerRunner::CpusFor(int threads, int rank) const {
  // More threads than CPUs is allowed (an oversubscription measurement): all CPUs.
  if (threads <= 0 || static_cast<size_t>(threads) >= options_.cpus.size()) return options_.cpus;
  const size_t first = static_cast<size_t>(rank) * static_cast<size_t>(threads);
  if (first + static_cast<size_t>(threads) > options_.cpus.size()) return options_.cpus;
  return std::vector<int>(options_.cpus.begin() + static_cast<std::ptrdiff_t>(first),
                          options_.cpus.begin() + static_cast<std::ptrdiff_t>(first + threads));
}

StatusOr<ThreadPlacement> WorkerRunner::PlacementFor(const WorkerJob& job) const {
  const int threads = job.spec.is_object() ? job.spec.value("threads", 1) : 1;
  return PlaceThreads(topology_, threads, JobThreadPlacement(job.spec));
}

std::vector<std::string> WorkerRunner::WorkerEnvironment(int threads,
                                                         const std::string& omp_wait_policy) const {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool managed = false;
    for (const char* name : kManagedVariables) {
      if (entry.rfind(std::string(name) + "=", 0) == 0) managed = true;
    }
    if (!managed) env.push_back(entry);
  }
  const std::string n = std::to_string(threads);
  // A pthread build of OpenBLAS keeps its own pool and ignores torch::set_num_threads;
  // its variable sizes it (an OpenMP build shares OpenMP's pool and reads it too).
  env.push_back("OMP_NUM_THREADS=" + n);
  env.push_back("OPENBLAS_NUM_THREADS=" + n);
  env.push_back("MKL_NUM_THREADS=" + n);
  if (!options_.package_cache.empty())
    env.push_back(std::string(kPackageCacheVariable) + "=" + options_.package_cache);
  // The wait policy is the job's: unset unless it asks for one, so that by default the
  // job runs under the OpenMP runtime's own behaviour, as a user's PyTorch does
  // (schemas/worker.md, OpenMP wait policy).
  if (const std::optional<std::string> value = OmpWaitPolicyVariable(omp_wait_policy)) {
    env.push_back("OMP_WAIT_POLICY=" + *value);
  }
  return env;
}

Status WorkerRunner::Start(const WorkerJob& job) {
  if (busy()) return FailedPrecondition("a job is already running");
  job_ = job;
  timed_out_ = false;
  first_failed_rank_ = -1;
  stop_reason_.clear();
  started_ = MonoNow();
  job_dir_ =
      options_.work_dir + "/job-" + std::to_string(job.job_id) + "-" + std::to_string(job.attempt);
  std::error_code ec;
  fs::remove_all(job_dir_, ec);
  fs::create_directories(job_dir_, ec);
  if (ec) return Unavailable("cannot create " + job_dir_ + ": " + ec.message());

  nlohmann::json worker_job = job.spec;
  worker_job["job_id"] = job.job_id;
  worker_job["attempt"] = job.attempt;
  // A calibration measures the whole allowed CPU set.
  const bool calibration = IsCalibration(job);
  const int threads =
      calibration ? static_cast<int>(options_.cpus.size()) : job.spec.value("threads", 1);
  const int ranks = LocalRanks(job);
  if (ranks == 1) {
    if (calibration) return StartProcess(worker_job, threads, 0, job_dir_, options_.cpus);
    if (!job.cpus.empty()) return StartProcess(worker_job, threads, 0, job_dir_, job.cpus);
    ASSIGN_OR_RETURN(const ThreadPlacement placement, PlacementFor(job));
    return StartProcess(worker_job, threads, 0, job_dir_, placement.cpus);
  }

  // A gang (or the replicas) on this agent: each rank its own slice of the CPUs, so that
  // no two ranks share a core and the scaling measured is the ranks', not the scheduler's.
  const size_t needed = static_cast<size_t>(ranks) * static_cast<size_t>(threads);
  const bool replicated = IsReplicated(job);
  if (needed > options_.cpus.size()) {
    return FailedPrecondition(
        "a job of " + std::to_string(ranks) + (replicated ? " replicas of " : " ranks of ") +
        std::to_string(threads) + " threads needs " + std::to_string(needed) +
        " CPUs, one per thread; this agent runs jobs on " + std::to_string(options_.cpus.size()) +
        " (" + FormatCpuList(options_.cpus) + ")");
  }
  if (replicated) {
    // Independent copies: no c10d, only a directory where they mark when they are ready
    // to time and when they are done (schemas/worker.md, Replicas).
    const std::string barrier = fs::absolute(job_dir_ + "/barrier", ec).string();
    fs::create_directories(barrier, ec);
    if (ec) return Unavailable("cannot create " + barrier + ": " + ec.message());
    for (int r = 0; r < ranks; ++r) {
      worker_job["replica"] = {{"index", r}, {"count", ranks}, {"barrier", barrier}};
      Status started = StartProcess(
          worker_job, threads, r, job_dir_ + "/replica-" + std::to_string(r), CpusFor(threads, r));
      if (!started.ok()) {
        KillAll();
        return started;
      }
    }
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(int port, FreePort(kLoopback));
  const double rendezvous_s =
      std::min(job.timeout_s > 0 ? job.timeout_s : kJobStartupAllowanceS, kMaxRendezvousTimeoutS);
  for (int rank = 0; rank < ranks; ++rank) {
    worker_job["distributed"] = {{"rank", rank},
                                 {"world_size", ranks},
                                 {"store", std::string(kLoopback) + ":" + std::to_string(port)},
                                 {"address", kLoopback},
                                 {"timeout_s", rendezvous_s}};
    Status started =
        StartProcess(worker_job, threads, rank, job_dir_ + "/rank-" + std::to_string(rank),
                     CpusFor(threads, rank));
    if (!started.ok()) {
      KillAll();
      return started;
    }
  }
  return Status::Ok();
}

Status WorkerRunner::StartProcess(const nlohmann::json& worker_job, int threads, int rank,
                                  const std::string& dir, const std::vector<int>& cpus) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create " + dir + ": " + ec.message());
  const std::string job_path = dir + "/job.json";
  const std::string result_path = dir + "/result.json";
  const std::string log_path = dir + "/worker.log";
  {
    std::ofstream out(job_path);
    out << worker_job.dump();
    if (!out) return Unavailable("cannot write " + job_path);
  }

  // A calibration prints its JSON on stdout.
  const bool calibration = IsCalibration(job_);
  ProcessOptions options;
  const std::string& worker = job_.worker_path.empty() ? options_.worker_path : job_.worker_path;
  options.argv = {worker, "--job", job_path, "--out", result_path};
  if (calibration) options.argv = {options_.worker_path, "--calibrate"};
  options.environment = WorkerEnvironment(threads, JobOmpWaitPolicy(worker_job));
  options.stdout_path = calibration ? result_path : log_path;
  options.stderr_path = log_path;
  // Its own process group, so a timeout kills its helpers too; and it must not outlive
  // its agent (kill -9 of the agent): its result would have no one to deliver it, and
  // it would disturb the next job on this machine.
  options.own_process_group = true;
  options.die_with_parent = true;
  options.exec_failure_line = "benchfleet-agent: exec of the worker failed";
  options.cpus = cpus;
  auto child = Subprocess::Start(options);
  if (!child.ok()) return child.status();
  const pid_t pid = child->pid();
  Process process;
  process.rank = rank;
  process.pid = pid;
  process.child = std::move(child).value();
  process.dir = dir;
  processes_.push_back(std::move(process));
  LOG_INFO("job " << job_.job_id << " attempt " << job_.attempt
                  << (processes_.size() > 1 || LocalRanks(job_) > 1
                          ? (IsReplicated(job_) ? " replica " : " rank ") + std::to_string(rank)
                          : "")
                  << ": worker " << pid << " on CPUs " << FormatCpuList(cpus) << ", timeout "
                  << job_.timeout_s << " s");
  return Status::Ok();
}

std::optional<nlohmann::json> WorkerRunner::Poll() {
  if (!busy()) return std::nullopt;
  bool running = false;
  int failed_now = -1;  // a rank found ended without success in this poll
  for (Process& p : processes_) {
    if (p.ended) continue;
    std::optional<ProcessExit> exit = p.child.Poll();
    if (!exit) {
      running = true;
      continue;
    }
    p.ended = true;
    p.wall_s = std::chrono::duration<double>(MonoNow() - started_).count();
    p.wait_status = exit->wait_status;  // -1: lost track of it, counted as failed below
    if (exit->wait_status >= 0) p.max_rss_kb = static_cast<double>(exit->usage.ru_maxrss);
    p.child.Signal(SIGKILL);  // reap anything the worker left behind in its group
    const int status = exit->wait_status;
    const bool clean = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    // Of the ranks found failed at once, the cause is the one a signal ended (a crash,
    // a kill): its peers then fail on their own when their calls to it break.
    if (!clean && (failed_now < 0 ||
                   (WIFSIGNALED(status) && !WIFSIGNALED(processes_[failed_now].wait_status)))) {
      failed_now = static_cast<int>(&p - processes_.data());
    }
  }
  if (failed_now >= 0 && processes_.size() > 1 && first_failed_rank_ < 0) {
    // A gang runs whole or not at all: the others would wait for the failed rank until
    // their timeout. Stop them now.
    const Process& cause = processes_[static_cast<size_t>(failed_now)];
    first_failed_rank_ = cause.rank;
    LOG_WARN("job " << job_.job_id << " rank " << cause.rank << " "
                    << DescribeExit(cause.wait_status) << "; stopping the other ranks");
    for (Process& other : processes_) {
      if (!other.ended) {
        other.stopped = true;
        other.child.Signal(SIGKILL);
        running = true;  // reaped by the next poll
      }
    }
  }
  if (running) {
    double elapsed = std::chrono::duration<double>(MonoNow() - started_).count();
    if (!timed_out_ && elapsed > job_.timeout_s) {
      timed_out_ = true;
      LOG_WARN("job " << job_.job_id << " ran past its timeout of " << job_.timeout_s
                      << " s; killing the worker" << (processes_.size() > 1 ? "s" : ""));
      for (Process& p : processes_) {
        if (!p.ended) p.child.Signal(SIGKILL);
      }
    }
    return std::nullopt;
  }
  std::vector<nlohmann::json> results;
  for (const Process& p : processes_) results.push_back(Finish(p));
  processes_.clear();
  nlohmann::json result =
      results.size() == 1 ? std::move(results.front()) : FinishGang(std::move(results));
  std::error_code ec;
  if (result.value("ok", false) == true) fs::remove_all(job_dir_, ec);  // failures keep their files
  return result;
}

nlohmann::json WorkerRunner::Finish(const Process& process) {
  const int wait_status = process.wait_status;
  const std::string log_path = process.dir + "/worker.log";
  // Missing or unreadable: not an object, so the worker is said to have left no result.
  auto read = ReadJsonFile(process.dir + "/result.json");
  nlohmann::json result = read.ok() ? std::move(read).value() : nlohmann::json();
  const std::string exit = wait_status < 0
                               ? "lost track of the worker process: it was reaped elsewhere"
                               : DescribeExit(wait_status);
  const bool clean_exit =
      wait_status >= 0 && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  if (IsCalibration(job_) && clean_exit && result.is_object()) {
    result = {{"ok", true}, {"kind", "calibration"}, {"calibration", result}};
  }
  if (timed_out_) {
    result = FailedResult(
        job_, "worker timed out after " + std::to_string(job_.timeout_s) + " s and was killed");
  } else if (process.stopped) {
    result = FailedResult(job_, !stop_reason_.empty()
                                    ? stop_reason_
                                    : "stopped: rank " + std::to_string(first_failed_rank_) +
                                          " of its gang failed first");
  } else if (result.is_discarded() || !result.is_object()) {
    result = FailedResult(job_, "worker " + exit + " without a result");
  } else if (!clean_exit && result.value("ok", false) == true) {
    result = FailedResult(job_, "worker " + exit + " after writing a result");
  } else if (!clean_exit && !result.contains("error")) {
    result["error"] = "worker " + exit;
  }
  for (const char* key : {"device", "model", "mode", "dtype", "batch_size", "threads"}) {
    if (!result.contains(key) && job_.spec.is_object() && job_.spec.contains(key)) {
      result[key] = job_.spec[key];
    }
  }
  // A rank of a gang spread over agents: its failure still says which rank it was.
  if (!result.contains("distributed") && job_.spec.is_object() &&
      job_.spec.contains("distributed")) {
    result["distributed"] = job_.spec["distributed"];
  }
  result["job_id"] = job_.job_id;
  result["attempt"] = job_.attempt;
  result["peak_rss_mb"] = process.max_rss_kb / 1024.0;  // ru_maxrss is in KiB on Linux
  result["worker_wall_s"] = process.wall_s;
  result["exit"] = exit;
  if (result.value("ok", false) != true)
    result["stderr_tail"] = ReadTail(log_path, kStderrTailBytes);
  return result;
}

nlohmann::json WorkerRunner::FinishGang(std::vector<nlohmann::json> rank_results) {
  // A timeout ended every rank alike: the job's result is rank 0's (its timeout), not a
  // rank's failure. Otherwise the cause is the rank Poll found failed first, else the
  // first that did not succeed.
  std::optional<RankFailure> failure;
  if (!timed_out_) {
    int failed = first_failed_rank_;
    for (size_t r = 0; failed < 0 && r < rank_results.size(); ++r) {
      if (rank_results[r].value("ok", false) != true) failed = static_cast<int>(r);
    }
    if (failed >= 0) failure = RankFailure{failed, ""};
  }
  nlohmann::json result = CombineRanks(std::move(rank_results), failure, IsReplicated(job_));
  if (failure) {
    // Its job's identity, as every failed result the agent writes carries it.
    const nlohmann::json identity = FailedResult(job_, "");
    for (auto it = identity.begin(); it != identity.end(); ++it) {
      if (!result.contains(it.key())) result[it.key()] = it.value();
    }
  }
  return result;
}

void WorkerRunner::KillAll() {
  for (Process& p : processes_) {
    if (p.ended) continue;
    p.child.Signal(SIGKILL);
    (void)p.child.WaitForever();
  }
  processes_.clear();
}

void WorkerRunner::Kill() { KillAll(); }

void WorkerRunner::Stop(const std::string& reason) {
  stop_reason_ = reason;
  for (Process& p : processes_) {
    if (p.ended) continue;
    p.stopped = true;
    p.child.Signal(SIGKILL);
  }
}

}  // namespace benchfleet
