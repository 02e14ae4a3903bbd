// OwnerProcess: which process built an object that holds threads, sockets
// or locks, so that a fork() of that process can tell it is not the owner.
//
// A forked child gets a copy of the object's memory but none of its threads:
// joining them would wait forever, a lock one of them held at the fork stays
// locked, and shutdown(2) on a socket it inherited would also cut the
// parent's connection. So an object that sees it is in a fork refuses its
// work with Check()'s error and, when destroyed there, touches nothing.
// See design.md, "Processes and fork".
//
// Thread safety: const, any thread; one getpid() per call.
#pragma once

#include <sys/types.h>

#include "hvd/common/status.h"

namespace hvd::runtime {

class OwnerProcess {
 public:
  OwnerProcess();

  pid_t pid() const { return pid_; }
  // False in a process forked from the owner.
  bool IsCurrent() const;
  // Ok in the owner; in a fork, kInvalidArgument saying what to do instead.
  common::Status Check() const;

 private:
  const pid_t pid_;
};

}  // namespace hvd::runtime
