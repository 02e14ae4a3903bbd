#include "abortable_context.h"

#include <gloo/common/error.h>
#include <gloo/transport/context.h>

#include <utility>

namespace hvd::runtime {

using gloo::transport::UnboundBuffer;

bool AbortSwitch::Abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) return false;
  aborted_ = true;
  reason_ = reason;
  // A buffer's abort flag ends its wait in progress, or its next one if it
  // is not waiting now; the decorator then throws either way.
  for (UnboundBuffer* buffer : live_) {
    buffer->abortWaitSend();
    buffer->abortWaitRecv();
  }
  for (const auto& [id, on_abort] : subscribers_) on_abort();
  return true;
}

int AbortSwitch::Subscribe(std::function<void()> on_abort) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) on_abort();
  subscribers_.emplace(next_subscription_, std::move(on_abort));
  return next_subscription_++;
}

void AbortSwitch::Unsubscribe(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.erase(id);
}

bool AbortSwitch::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

void AbortSwitch::ThrowIfAborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) {
    throw gloo::IoException("this generation's collectives were aborted: " +
                            reason_);
  }
}

void AbortSwitch::Add(UnboundBuffer* buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(buffer);
  if (aborted_) {
    buffer->abortWaitSend();
    buffer->abortWaitRecv();
  }
}

void AbortSwitch::Remove(UnboundBuffer* buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  live_.erase(buffer);
}

namespace {

class AbortableBuffer final : public UnboundBuffer {
 public:
  AbortableBuffer(std::unique_ptr<UnboundBuffer> inner,
                  std::shared_ptr<AbortSwitch> abort_switch)
      : UnboundBuffer(inner->ptr, inner->size),
        inner_(std::move(inner)),
        switch_(std::move(abort_switch)) {
    switch_->Add(inner_.get());
  }
  ~AbortableBuffer() override { switch_->Remove(inner_.get()); }

  bool waitRecv(int* rank, std::chrono::milliseconds timeout) override {
    switch_->ThrowIfAborted();
    bool done = inner_->waitRecv(rank, timeout);
    switch_->ThrowIfAborted();
    return done;
  }
  bool waitSend(int* rank, std::chrono::milliseconds timeout) override {
    switch_->ThrowIfAborted();
    bool done = inner_->waitSend(rank, timeout);
    switch_->ThrowIfAborted();
    return done;
  }
  void abortWaitRecv() override { inner_->abortWaitRecv(); }
  void abortWaitSend() override { inner_->abortWaitSend(); }
  void send(int dst, uint64_t slot, size_t offset, size_t nbytes) override {
    switch_->ThrowIfAborted();
    inner_->send(dst, slot, offset, nbytes);
  }
  void recv(int src, uint64_t slot, size_t offset, size_t nbytes) override {
    switch_->ThrowIfAborted();
    inner_->recv(src, slot, offset, nbytes);
  }
  void recv(std::vector<int> srcs, uint64_t slot, size_t offset,
            size_t nbytes) override {
    switch_->ThrowIfAborted();
    inner_->recv(std::move(srcs), slot, offset, nbytes);
  }

 private:
  std::unique_ptr<UnboundBuffer> inner_;
  std::shared_ptr<AbortSwitch> switch_;
};

// Forwards everything to the connected transport context; only buffers are
// decorated.
class AbortableTransportContext final : public gloo::transport::Context {
 public:
  AbortableTransportContext(std::shared_ptr<gloo::transport::Context> inner,
                            std::shared_ptr<AbortSwitch> abort_switch)
      : Context(inner->rank, inner->size),
        inner_(std::move(inner)),
        switch_(std::move(abort_switch)) {
    setTimeout(inner_->getTimeout());
  }

  std::unique_ptr<gloo::transport::Pair>& getPair(int rank) override {
    return inner_->getPair(rank);
  }
  std::unique_ptr<gloo::transport::Pair>& createPair(int rank) override {
    return inner_->createPair(rank);
  }
  std::unique_ptr<UnboundBuffer> createUnboundBuffer(void* ptr,
                                                     size_t size) override {
    return MakeAbortableBuffer(inner_->createUnboundBuffer(ptr, size), switch_);
  }

 private:
  std::shared_ptr<gloo::transport::Context> inner_;
  std::shared_ptr<AbortSwitch> switch_;
};

}  // namespace

std::unique_ptr<UnboundBuffer> MakeAbortableBuffer(
    std::unique_ptr<UnboundBuffer> inner,
    std::shared_ptr<AbortSwitch> abort_switch) {
  return std::make_unique<AbortableBuffer>(std::move(inner),
                                           std::move(abort_switch));
}

AbortableContext::AbortableContext(int rank, int size,
                                   std::shared_ptr<AbortSwitch> s)
    : gloo::rendezvous::Context(rank, size), switch_(std::move(s)) {}

void AbortableContext::Arm() {
  transportContext_ =
      std::make_shared<AbortableTransportContext>(transportContext_, switch_);
}

}  // namespace hvd::runtime
