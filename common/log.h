// Minimal leveled logging to stderr: one line per event, with a UTC timestamp and the
// component name, so the logs of a coordinator and its agents interleave readably.
#pragma once

#include <sstream>
#include <string>

namespace benchfleet {

enum class LogLevel { kDebug = 0, kInfo, kWarn, kError };

void SetLogComponent(const std::string& name);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, const std::string& message);

}  // namespace benchfleet

#define BF_LOG(level, expr)                                                       \
  do {                                                                            \
    if (::benchfleet::LogEnabled(::benchfleet::LogLevel::level)) {                \
      std::ostringstream bf_log_stream_;                                          \
      bf_log_stream_ << expr;                                                     \
      ::benchfleet::LogLine(::benchfleet::LogLevel::level, bf_log_stream_.str()); \
    }                                                                             \
  } while (0)

#define LOG_DEBUG(expr) BF_LOG(kDebug, expr)
#define LOG_INFO(expr) BF_LOG(kInfo, expr)
#define LOG_WARN(expr) BF_LOG(kWarn, expr)
#define LOG_ERROR(expr) BF_LOG(kError, expr)
