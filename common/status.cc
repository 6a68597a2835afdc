#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace benchfleet {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDeadlineExceeded:
      return "deadline_exceeded";
    case StatusCode::kPermissionDenied:
      return "permission_denied";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

void DieOnValueOfError(const Status& status) {
  std::fprintf(stderr,
               "benchfleet: fatal: the value of a StatusOr holding an error was read (%s)\n",
               status.ToString().c_str());
  std::abort();
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace benchfleet
