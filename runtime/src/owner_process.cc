#include "hvd/runtime/owner_process.h"

#include <unistd.h>

#include <string>

namespace hvd::runtime {

OwnerProcess::OwnerProcess() : pid_(getpid()) {}

bool OwnerProcess::IsCurrent() const { return getpid() == pid_; }

common::Status OwnerProcess::Check() const {
  const pid_t current = getpid();
  if (current == pid_) return common::Status::Ok();
  return common::Status::InvalidArgument(
      "hvd was initialized in process " + std::to_string(pid_) +
      "; this process (pid " + std::to_string(current) +
      ") is a fork of it: call hvd.init() in the child (after "
      "hvd.shutdown()) or use collectives only in the parent");
}

}  // namespace hvd::runtime
