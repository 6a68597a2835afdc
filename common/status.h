// Status and StatusOr: errors travel across module boundaries as values, never as
// exceptions. A Status carries a code and a message meant for the person who has to act.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace benchfleet {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from a user, a file or a peer
  kNotFound,
  kFailedPrecondition,
  kUnavailable,  // a peer or resource that may come back (retry later)
  kDeadlineExceeded,
  kPermissionDenied,  // the peer's key lacks the role the request needs (common/roles.h)
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: batch_size must be a positive integer"
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Reading the value of a StatusOr that holds an error is a bug in the caller, never a
// peer's fault: it aborts loudly, naming the error, rather than reading nothing.
[[noreturn]] void DieOnValueOfError(const Status& status);

// Either a value or an error, never both.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Internal("StatusOr built from an OK status without a value");
  }
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *Checked(); }
  const T& value() const& { return *Checked(); }
  T&& value() && { return std::move(*Checked()); }
  T* operator->() { return &*Checked(); }
  const T* operator->() const { return &*Checked(); }
  T& operator*() & { return *Checked(); }
  const T& operator*() const& { return *Checked(); }

 private:
  std::optional<T>& Checked() {
    if (!value_.has_value()) DieOnValueOfError(status_);
    return value_;
  }
  const std::optional<T>& Checked() const {
    if (!value_.has_value()) DieOnValueOfError(status_);
    return value_;
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace benchfleet

#define BF_CONCAT_INNER(a, b) a##b
#define BF_CONCAT(a, b) BF_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::benchfleet::Status bf_status_ = (expr); \
    if (!bf_status_.ok()) return bf_status_;  \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(BF_CONCAT(bf_or_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
