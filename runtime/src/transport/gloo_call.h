// The one place where Gloo's exceptions become Status values. Every Gloo
// collective the background thread runs goes through GlooCall, so a dead
// peer or an expired timeout becomes kTransport or kTimeout (recoverable by
// an elastic reset) and never escapes the thread.
#pragma once

#include <exception>
#include <string>

#include "hvd/common/status.h"

namespace hvd::runtime {

common::Status GlooFailure(const std::string& what, const std::exception& e);

template <typename F>
common::Status GlooCall(const std::string& what, F&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return GlooFailure(what, e);
  }
  return common::Status::Ok();
}

}  // namespace hvd::runtime
