// The main of every C++ test binary: gtest's, after two things every hvd
// worker process has done before hvd starts a thread:
// - spdlog's registry exists (InitLogging, on the main thread). It is a
//   function-local static of libspdlog; built here, before any test starts
//   a thread, its construction happens-before every use that
//   ThreadSanitizer can see (thread creation), as in hvdrun and the workers.
// - SIGPIPE is ignored, as the Python interpreter does at start-up. Gloo
//   writes to its sockets without MSG_NOSIGNAL, so a write to a peer that
//   is gone, or to a socket an Abort shut down, would otherwise kill the
//   process instead of failing the collective (docs/design.md, "Abort").
#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
  spdlog::default_logger();
  signal(SIGPIPE, SIG_IGN);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
