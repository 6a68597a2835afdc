#include "tests/process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "common/files.h"

namespace benchfleet::testing {

bool ChildProcess::Start(const std::vector<std::string>& argv, const std::string& log_path) {
  log_ = log_path;
  ProcessOptions options;
  options.argv = argv;
  options.stdout_path = log_path;
  options.stderr_path = log_path;
  options.append = true;
  auto started = Subprocess::Start(options);
  if (!started.ok()) return false;
  process_ = std::move(started).value();
  return true;
}

bool ChildProcess::running() {
  if (!process_.running()) return false;
  return !process_.Poll().has_value();
}

void ChildProcess::Signal(int sig) { process_.Signal(sig); }

int ChildProcess::Wait(std::chrono::milliseconds timeout) {
  auto exit = process_.Wait(timeout);
  return exit ? exit->wait_status : -1;
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  auto exit = process_.Stop(grace);
  return exit ? exit->wait_status : -1;
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // between polls of the condition
  }
}

int RunCommand(const std::vector<std::string>& argv, std::string* out, std::string* err) {
  ProcessOptions options;
  options.argv = argv;
  auto run = ::benchfleet::RunCommand(options, kCommandTimeout);
  if (!run.ok()) {
    if (err) *err = run.status().ToString();
    return 127;  // as a shell reports a program it could not run
  }
  if (out) *out = std::move(run->out);
  if (err) *err = std::move(run->err);
  return run->timed_out ? -1 : run->exit.code();
}

std::string ReadFile(const std::string& path) {
  auto text = ReadWholeFile(path);
  return text.ok() ? std::move(text).value() : std::string();
}

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* made = mkdtemp(pattern.data());
  path_ = made ? made : "";
}

TempDir::~TempDir() {
  // Keep the directory of a failed run for its logs (BENCHFLEET_KEEP_TEST_DIRS=1).
  if (std::getenv("BENCHFLEET_KEEP_TEST_DIRS") != nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace benchfleet::testing
