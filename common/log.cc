#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "common/clock.h"

namespace benchfleet {
namespace {

std::mutex log_mutex;
std::string component = "benchfleet";  // guarded by log_mutex
std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

}  // namespace

void SetLogComponent(const std::string& name) {
  std::lock_guard<std::mutex> lock(log_mutex);
  component = name;
}

void SetLogLevel(LogLevel level) { min_level = static_cast<int>(level); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= min_level; }

void LogLine(LogLevel level, const std::string& message) {
  std::lock_guard<std::mutex> lock(log_mutex);
  fprintf(stderr, "%s %-5s [%s] %s\n", UtcNowIso8601().c_str(), LevelName(level), component.c_str(),
          message.c_str());
  fflush(stderr);
}

}  // namespace benchfleet
