// AbortSwitch and the buffer decorator
// (runtime/src/transport/abortable_context.h): an Abort ends a wait in progress
// that Gloo itself would let run to its timeout, and every later operation
// fails.
#include "transport/abortable_context.h"

#include <gloo/common/error.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

namespace hvd::runtime {
namespace {

using namespace std::chrono_literals;

// Waits as tcp::UnboundBuffer does: until completed, aborted (then it
// returns false) or timed out.
class FakeBuffer : public gloo::transport::UnboundBuffer {
 public:
  FakeBuffer() : UnboundBuffer(nullptr, 0) {}
  bool waitRecv(int*, std::chrono::milliseconds timeout) override {
    return Wait(&abort_recv_, timeout);
  }
  bool waitSend(int*, std::chrono::milliseconds timeout) override {
    return Wait(&abort_send_, timeout);
  }
  void abortWaitRecv() override { Set(&abort_recv_); }
  void abortWaitSend() override { Set(&abort_send_); }
  void send(int, uint64_t, size_t, size_t) override { ++posted; }
  void recv(int, uint64_t, size_t, size_t) override { ++posted; }
  void recv(std::vector<int>, uint64_t, size_t, size_t) override { ++posted; }
  int posted = 0;

 private:
  bool Wait(bool* abort, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return *abort; })) {
      throw gloo::IoException("timed out");
    }
    *abort = false;
    return false;
  }
  void Set(bool* abort) {
    std::lock_guard<std::mutex> lock(mu_);
    *abort = true;
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool abort_recv_ = false, abort_send_ = false;
};

// Waits for `buffer`'s send on another thread, as long as Gloo would:
// "sent", "aborted" (waitSend returned false), or the exception's text.
std::future<std::string> WaitForSend(gloo::transport::UnboundBuffer& buffer) {
  return std::async(std::launch::async, [&buffer] {
    try {
      return std::string(buffer.waitSend(nullptr, 60s) ? "sent" : "aborted");
    } catch (const gloo::IoException& e) {
      return std::string(e.what());
    }
  });
}

TEST(AbortableContextTest, AbortEndsASendWaitInProgressWithAnIoException) {
  auto abort_switch = std::make_shared<AbortSwitch>();
  auto buffer =
      MakeAbortableBuffer(std::make_unique<FakeBuffer>(), abort_switch);
  auto waiting = WaitForSend(*buffer);
  // Whether the abort comes before or during the wait, it must end it.
  EXPECT_TRUE(abort_switch->Abort("slot h:1 is unreachable"));
  ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready)
      << "the wait outlived the abort";
  EXPECT_NE(waiting.get().find("slot h:1 is unreachable"), std::string::npos);
  EXPECT_FALSE(abort_switch->Abort("again")) << "only the first abort counts";
}

TEST(AbortableContextTest, AfterAnAbortEveryOperationThrows) {
  auto abort_switch = std::make_shared<AbortSwitch>();
  auto fake = std::make_unique<FakeBuffer>();
  FakeBuffer* inner = fake.get();
  auto buffer = MakeAbortableBuffer(std::move(fake), abort_switch);
  buffer->send(1, 0);
  buffer->recv(1, 0);
  EXPECT_EQ(inner->posted, 2);
  abort_switch->Abort("peer lost");
  EXPECT_THROW(buffer->send(1, 0), gloo::IoException);
  EXPECT_THROW(buffer->recv(1, 0), gloo::IoException);
  EXPECT_THROW(buffer->recv(std::vector<int>{1}, 0), gloo::IoException);
  EXPECT_THROW(buffer->waitRecv(nullptr, 60s), gloo::IoException);
  EXPECT_EQ(inner->posted, 2) << "nothing reaches Gloo after the abort";
  // A buffer made after the abort (a collective that was starting) fails
  // too, without waiting.
  auto late = MakeAbortableBuffer(std::make_unique<FakeBuffer>(), abort_switch);
  EXPECT_THROW(late->waitSend(nullptr, 60s), gloo::IoException);
}

TEST(AbortableContextTest, WithoutAnAbortWaitsEndAsGlooEndsThem) {
  auto abort_switch = std::make_shared<AbortSwitch>();
  auto buffer =
      MakeAbortableBuffer(std::make_unique<FakeBuffer>(), abort_switch);
  EXPECT_THROW(buffer->waitSend(nullptr, 1ms), gloo::IoException)
      << "the fake's own timeout";
  EXPECT_FALSE(abort_switch->aborted());
}

// Two ranks of a real Gloo TCP context, connected in this process.
std::vector<std::shared_ptr<AbortableContext>> ConnectPair(
    const std::shared_ptr<AbortSwitch>& abort_switch) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  gloo::rendezvous::HashStore store;  // thread-safe
  std::vector<std::shared_ptr<AbortableContext>> contexts;
  for (int rank = 0; rank < 2; ++rank) {
    contexts.push_back(
        std::make_shared<AbortableContext>(rank, 2, abort_switch));
  }
  std::vector<std::thread> connecting;
  for (auto& context : contexts) {
    connecting.emplace_back([&] {
      auto device = gloo::transport::tcp::CreateDevice(attr);
      context->connectFullMesh(store, device);
      context->Arm();
    });
  }
  for (auto& thread : connecting) thread.join();
  return contexts;
}

// Rank 1 of a two-rank job in a child process: it connects through a
// FileStore in `dir`, posts a receive of `bytes` from rank 0, says so on
// `ready`, and waits to be stopped and killed.
[[noreturn]] void RunReceiver(const std::string& dir, size_t bytes, int ready) {
  try {
    gloo::rendezvous::FileStore store(dir);
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto context = std::make_shared<gloo::rendezvous::Context>(1, 2);
    auto device = gloo::transport::tcp::CreateDevice(attr);
    context->connectFullMesh(store, device);
    std::vector<char> received(bytes);
    auto buffer = context->createUnboundBuffer(received.data(), bytes);
    buffer->recv(0, /*slot=*/3);
    if (write(ready, "r", 1) != 1) _exit(1);
    while (true) pause();
  } catch (...) {  // never back into the test framework's copy
  }
  _exit(1);
}

// Debian's Gloo leaves a send whose bytes it is writing to a peer waiting to
// its timeout when that connection fails (Pair::signalException skips the
// unbound buffers in its transmit queue): the watch ends it, naming the peer.
// The peer is a process that stops reading mid-transfer (SIGSTOP), then
// dies (SIGKILL), as a node that is lost.
TEST(AbortableContextTest, ASendToAPeerWhoseConnectionFailsEndsNamingIt) {
  char dir[] = "/tmp/hvd-abortable-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const size_t bytes = 64 << 20;  // far more than the sockets buffer
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t receiver = fork();
  ASSERT_GE(receiver, 0);
  if (receiver == 0) RunReceiver(dir, bytes, ready[1]);
  close(ready[1]);
  struct Reaper {  // whatever fails below, the child does not outlive it
    pid_t pid;
    std::string dir;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      std::filesystem::remove_all(dir);
    }
  } reaper{receiver, dir};

  gloo::rendezvous::FileStore store(dir);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto context =
      std::make_shared<AbortableContext>(0, 2, std::make_shared<AbortSwitch>());
  auto device = gloo::transport::tcp::CreateDevice(attr);
  context->connectFullMesh(store, device);
  context->Arm();
  pollfd posted{ready[0], POLLIN, 0};
  ASSERT_EQ(poll(&posted, 1, 30000), 1) << "rank 1 did not post its receive";
  char said = 0;
  ASSERT_EQ(read(ready[0], &said, 1), 1) << "rank 1 failed before its receive";
  close(ready[0]);
  ASSERT_EQ(kill(receiver, SIGSTOP), 0);  // it reads no more

  std::vector<char> sent(bytes);
  auto buffer = context->createUnboundBuffer(sent.data(), bytes);
  buffer->send(1, /*slot=*/3);
  auto waiting = WaitForSend(*buffer);
  ASSERT_EQ(waiting.wait_for(2 * AbortSwitch::kSendCheckPeriod),
            std::future_status::timeout)
      << "the send ended while rank 1 was stopped: " << waiting.get();
  ASSERT_EQ(kill(receiver, SIGKILL), 0);  // its connection is reset
  ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready)
      << "the send still waits after its peer's connection failed";
  const std::string error = waiting.get();
  EXPECT_NE(error.find("the connection to rank 1 failed"), std::string::npos)
      << error;
  // The buffer stays failed.
  EXPECT_THROW(buffer->waitSend(nullptr, 60s), gloo::IoException);
}

// The watch leaves a send to a live peer alone however long it waits, and
// what it posts on the peer's connection does not disturb the collectives.
TEST(AbortableContextTest, ASendToALivePeerThatIsLateCompletes) {
  auto contexts = ConnectPair(std::make_shared<AbortSwitch>());
  int sent = 42, received = 0;
  auto out = contexts[0]->createUnboundBuffer(&sent, sizeof(sent));
  auto in = contexts[1]->createUnboundBuffer(&received, sizeof(received));
  out->send(1, /*slot=*/5);
  auto waiting = WaitForSend(*out);
  // Two periods of the watch pass before rank 1 receives.
  ASSERT_EQ(waiting.wait_for(2 * AbortSwitch::kSendCheckPeriod),
            std::future_status::timeout)
      << waiting.get();
  in->recv(0, /*slot=*/5);
  EXPECT_TRUE(in->waitRecv(nullptr, 60s));
  ASSERT_EQ(waiting.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(waiting.get(), "sent");
  EXPECT_EQ(received, 42);
  // Both directions still work.
  in->send(0, /*slot=*/6);
  out->recv(1, /*slot=*/6);
  EXPECT_TRUE(out->waitRecv(nullptr, 60s));
  EXPECT_TRUE(in->waitSend(nullptr, 60s));
  EXPECT_EQ(sent, 42);
}

}  // namespace
}  // namespace hvd::runtime
