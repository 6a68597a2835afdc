#include "agent/runner.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/cpu_list.h"
#include "common/log.h"

namespace fs = std::filesystem;

namespace benchfleet {
namespace {

// Bytes of the worker's log kept in a failed result: enough for a stack trace's head.
constexpr size_t kStderrTailBytes = 4096;

// Variables a job's environment must not inherit from the agent's, because the runner
// sets them per job.
const char* kManagedVariables[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                   "GOTO_NUM_THREADS", "OMP_WAIT_POLICY"};

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

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended with wait status " + std::to_string(wait_status);
}

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

std::vector<int> WorkerRunner::CpusFor(int threads) const {
  // More threads than CPUs is allowed (an oversubscription measurement): all CPUs.
  if (threads <= 0 || static_cast<size_t>(threads) >= options_.cpus.size()) return options_.cpus;
  return std::vector<int>(options_.cpus.begin(), options_.cpus.begin() + threads);
}

std::vector<std::string> WorkerRunner::WorkerEnvironment(int threads) const {
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
  // OpenBLAS keeps its own pool and ignores torch::set_num_threads; OpenMP's default
  // busy-waiting threads fight that pool for the same cores. Passive waiting lets the
  // two pools share cores instead of spinning against each other.
  env.push_back("OMP_NUM_THREADS=" + n);
  env.push_back("OPENBLAS_NUM_THREADS=" + n);
  env.push_back("MKL_NUM_THREADS=" + n);
  env.push_back("OMP_WAIT_POLICY=PASSIVE");
  return env;
}

Status WorkerRunner::Start(const WorkerJob& job) {
  if (busy()) return FailedPrecondition("a job is already running");
  job_ = job;
  timed_out_ = false;
  job_dir_ =
      options_.work_dir + "/job-" + std::to_string(job.job_id) + "-" + std::to_string(job.attempt);
  std::error_code ec;
  fs::remove_all(job_dir_, ec);
  fs::create_directories(job_dir_, ec);
  if (ec) return Unavailable("cannot create " + job_dir_ + ": " + ec.message());

  nlohmann::json worker_job = job.spec;
  worker_job["job_id"] = job.job_id;
  worker_job["attempt"] = job.attempt;
  const std::string job_path = job_dir_ + "/job.json";
  const std::string result_path = job_dir_ + "/result.json";
  const std::string log_path = job_dir_ + "/worker.log";
  {
    std::ofstream out(job_path);
    out << worker_job.dump();
    if (!out) return Unavailable("cannot write " + job_path);
  }

  // A calibration measures the whole allowed CPU set; it prints its JSON on stdout.
  const bool calibration = IsCalibration(job);
  int threads = calibration ? static_cast<int>(options_.cpus.size()) : job.spec.value("threads", 1);
  std::vector<std::string> env = WorkerEnvironment(threads);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {options_.worker_path, "--job", job_path, "--out", result_path};
  if (calibration) args = {options_.worker_path, "--calibrate"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  for (int cpu : CpusFor(threads)) CPU_SET(cpu, &cpu_set);

  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return Unavailable("cannot create " + log_path + ": " + std::strerror(errno));
  int out_fd = log_fd;
  if (calibration) {
    out_fd = open(result_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      close(log_fd);
      return Unavailable("cannot create " + result_path + ": " + std::strerror(errno));
    }
  }

  // Everything the child needs is prepared above: between fork and exec it only makes
  // async-signal-safe system calls.
  pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    if (out_fd != log_fd) close(out_fd);
    return Unavailable(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own process group, so a timeout kills its helpers too
    // A worker must not outlive its agent (kill -9 of the agent): its result would have
    // no one to deliver it, and it would disturb the next job on this machine.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    sched_setaffinity(0, sizeof cpu_set, &cpu_set);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execve(argv[0], argv.data(), envp.data());
    const char message[] = "benchfleet-agent: exec of the worker failed\n";
    (void)!write(STDERR_FILENO, message, sizeof message - 1);
    _exit(127);
  }
  close(log_fd);
  if (out_fd != log_fd) close(out_fd);
  setpgid(pid, pid);  // also from the parent, to win the race with Kill()
  pid_ = pid;
  started_ = MonoNow();
  LOG_INFO("job " << job.job_id << " attempt " << job.attempt << ": worker " << pid << " on CPUs "
                  << FormatCpuList(CpusFor(threads)) << ", timeout " << job.timeout_s << " s");
  return Status::Ok();
}

std::optional<nlohmann::json> WorkerRunner::Poll() {
  if (!busy()) return std::nullopt;
  int status = 0;
  rusage usage{};
  pid_t done = wait4(pid_, &status, WNOHANG, &usage);
  if (done == 0) {
    double elapsed = std::chrono::duration<double>(MonoNow() - started_).count();
    if (!timed_out_ && elapsed > job_.timeout_s) {
      timed_out_ = true;
      LOG_WARN("job " << job_.job_id << " ran past its timeout of " << job_.timeout_s
                      << " s; killing the worker");
      kill(-pid_, SIGKILL);
    }
    return std::nullopt;
  }
  if (done < 0) {
    pid_ = -1;
    return FailedResult(job_,
                        std::string("lost track of the worker process: ") + std::strerror(errno));
  }
  pid_ = -1;
  kill(-done, SIGKILL);  // reap anything the worker left behind in its group
  return Finish(status, static_cast<double>(usage.ru_maxrss));
}

nlohmann::json WorkerRunner::Finish(int wait_status, double max_rss_kb) {
  const double wall_s = std::chrono::duration<double>(MonoNow() - started_).count();
  const std::string log_path = job_dir_ + "/worker.log";
  nlohmann::json result;
  std::ifstream in(job_dir_ + "/result.json");
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    result = nlohmann::json::parse(text.str(), nullptr, false);
  }
  const bool clean_exit = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  if (IsCalibration(job_) && clean_exit && result.is_object()) {
    result = {{"ok", true}, {"kind", "calibration"}, {"calibration", result}};
  }
  if (timed_out_) {
    result = FailedResult(
        job_, "worker timed out after " + std::to_string(job_.timeout_s) + " s and was killed");
  } else if (result.is_discarded() || !result.is_object()) {
    result = FailedResult(job_, "worker " + DescribeExit(wait_status) + " without a result");
  } else if (!clean_exit && result.value("ok", false) == true) {
    result = FailedResult(job_, "worker " + DescribeExit(wait_status) + " after writing a result");
  } else if (!clean_exit && !result.contains("error")) {
    result["error"] = "worker " + DescribeExit(wait_status);
  }
  for (const char* key : {"device", "model", "mode", "dtype", "batch_size", "threads"}) {
    if (!result.contains(key) && job_.spec.is_object() && job_.spec.contains(key)) {
      result[key] = job_.spec[key];
    }
  }
  result["job_id"] = job_.job_id;
  result["attempt"] = job_.attempt;
  result["peak_rss_mb"] = max_rss_kb / 1024.0;  // ru_maxrss is in KiB on Linux
  result["worker_wall_s"] = wall_s;
  result["exit"] = DescribeExit(wait_status);
  if (result.value("ok", false) != true)
    result["stderr_tail"] = ReadTail(log_path, kStderrTailBytes);
  std::error_code ec;
  if (result.value("ok", false) == true) fs::remove_all(job_dir_, ec);  // failures keep their files
  return result;
}

void WorkerRunner::Kill() {
  if (!busy()) return;
  kill(-pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

}  // namespace benchfleet
