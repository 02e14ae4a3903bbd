// Status and Result<T>: how errors travel in hvd, including across threads.
//
// A Status is a value: copyable, cheap when ok, and safe to hand from the
// thread that produced it to the thread that waits on it. Its Code is the
// error's kind, decided where the error arises and never rewritten on the way
// out; it chooses the Python exception (see docs/errors.md).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace hvd::common {

enum class Code {
  kOk = 0,
  // A peer or server went away: connection refused/reset, I/O error.
  // Recoverable by rebuilding the transport (an elastic reset).
  kTransport,
  // A bounded wait ran out: rendezvous deadline, long-poll, Gloo timeout.
  kTimeout,
  // Shutdown or reset in progress; the work was cancelled, not failed.
  kAborted,
  // Ranks disagree on a collective (op, dtype, shape, root). A user bug.
  kMismatch,
  // A bad argument or value, found locally or refused by a server (400).
  kInvalidArgument,
  // A key or resource that does not exist (404).
  kNotFound,
  // Missing, wrong or stale request signature (401).
  kUnauthenticated,
  // A signed request for something its signer may not do: a worker acting
  // for another slot, or writing outside its generations (403).
  kPermissionDenied,
  // A size or count limit was hit (413, store limits).
  kResourceExhausted,
  // A broken invariant inside hvd: a bug.
  kInternal,
};

// Stable lower-case name of a code, used in logs and messages.
const char* CodeName(Code code);

class Status {
 public:
  Status() = default;  // ok
  Status(Code code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status Transport(std::string m) {
    return {Code::kTransport, std::move(m)};
  }
  static Status Timeout(std::string m) {
    return {Code::kTimeout, std::move(m)};
  }
  static Status Aborted(std::string m) {
    return {Code::kAborted, std::move(m)};
  }
  static Status InvalidArgument(std::string m) {
    return {Code::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) {
    return {Code::kNotFound, std::move(m)};
  }
  static Status Unauthenticated(std::string m) {
    return {Code::kUnauthenticated, std::move(m)};
  }
  static Status ResourceExhausted(std::string m) {
    return {Code::kResourceExhausted, std::move(m)};
  }
  static Status PermissionDenied(std::string m) {
    return {Code::kPermissionDenied, std::move(m)};
  }
  static Status Internal(std::string m) {
    return {Code::kInternal, std::move(m)};
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "<code name>: <message>", or "ok".
  std::string ToString() const;

  // The same status with "<context>: " put before the message.
  Status WithContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) {
      status_ = Status::Internal("Result built from an ok Status");
    }
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace hvd::common
