// AbortSwitch and the buffer decorator (runtime/src/abortable_context.h):
// an Abort ends a wait in progress that Gloo itself would let run to its
// timeout, and every later operation fails.
#include "abortable_context.h"

#include <gloo/common/error.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

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

TEST(AbortableContextTest, AbortEndsASendWaitInProgressWithAnIoException) {
  auto abort_switch = std::make_shared<AbortSwitch>();
  auto buffer =
      MakeAbortableBuffer(std::make_unique<FakeBuffer>(), abort_switch);
  auto waiting = std::async(std::launch::async, [&] {
    try {
      buffer->waitSend(nullptr, 60s);  // Gloo would wait this long
    } catch (const gloo::IoException& e) {
      return std::string(e.what());
    }
    return std::string("returned without an exception");
  });
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

}  // namespace
}  // namespace hvd::runtime
