#include "transport/gloo_call.h"

#include <gloo/common/error.h>

namespace hvd::runtime {

using common::Status;

Status GlooFailure(const std::string& what, const std::exception& e) {
  std::string message = what + ": " + e.what();
  if (dynamic_cast<const gloo::IoException*>(&e) != nullptr) {
    // Gloo reports an expired operation timeout as an IoException whose
    // text says so; the kind matters to users reading the error.
    if (message.find("Timed out") != std::string::npos ||
        message.find("timed out") != std::string::npos) {
      return Status::Timeout(
          message +
          " (a peer did not take part within the Gloo timeout, "
          "--gloo-timeout-seconds / HOROVOD_GLOO_TIMEOUT_SECONDS: it may be "
          "hung, stopped or overloaded)");
    }
    return Status::Transport(
        message +
        " (a peer's connection broke: it most likely exited; "
        "hvdrun's output names it)");
  }
  // GLOO_ENFORCE failures inside a collective are mostly broken pairs too
  // (a peer closed mid-operation); an elastic reset is the right answer.
  return Status::Transport(message);
}

}  // namespace hvd::runtime
