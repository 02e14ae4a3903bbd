// The main of every C++ test binary: gtest's, after one thing every hvd
// process does before it starts threads (InitLogging, on the main thread):
// it creates spdlog's registry. The registry is a function-local static of
// libspdlog; built here, before any test starts a thread, its construction
// happens-before every use that ThreadSanitizer can see (thread creation),
// as in hvdrun and the workers.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

int main(int argc, char** argv) {
  spdlog::default_logger();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
