#include "hvd/common/status.h"

namespace hvd::common {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kTransport:
      return "transport";
    case Code::kTimeout:
      return "timeout";
    case Code::kAborted:
      return "aborted";
    case Code::kMismatch:
      return "mismatch";
    case Code::kInvalidArgument:
      return "invalid_argument";
    case Code::kNotFound:
      return "not_found";
    case Code::kUnauthenticated:
      return "unauthenticated";
    case Code::kResourceExhausted:
      return "resource_exhausted";
    case Code::kPermissionDenied:
      return "permission_denied";
    case Code::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace hvd::common
