#include "transport/abortable_context.h"

#include <gloo/common/error.h>
#include <gloo/transport/context.h>

#include <exception>
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

AbortSwitch::~AbortSwitch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  sending_changed_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

void AbortSwitch::Watch(SendWatch* watch) {
  std::lock_guard<std::mutex> lock(mu_);
  sending_.insert(watch);
  if (!watcher_.joinable()) watcher_ = std::thread([this] { CheckSends(); });
  sending_changed_.notify_all();
}

void AbortSwitch::Unwatch(SendWatch* watch) {
  std::lock_guard<std::mutex> lock(mu_);
  sending_.erase(watch);
}

void AbortSwitch::CheckSends() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    sending_changed_.wait(lock, [&] { return closing_ || !sending_.empty(); });
    // A send that completes within a period is never checked.
    sending_changed_.wait_for(lock, kSendCheckPeriod, [&] { return closing_; });
    if (closing_) return;
    for (SendWatch* watch : sending_) watch->CheckPeers();
  }
}

namespace {

// The failure of a connection, seen through Gloo's public interface.
// tcp::Pair keeps its failure to itself (and Debian's headers for it do not
// compile), but when a connection fails Gloo does fail every receive posted
// on it. So the first check of a peer posts one receive from it on a slot no
// collective uses (a one-time notice to the peer, which never sends there),
// and each check polls that receive without waiting: an abort of its wait
// makes waitRecv return at once, after it rethrew the connection's error
// if there is one.
class PeerSentinels {
 public:
  explicit PeerSentinels(std::shared_ptr<gloo::transport::Context> context)
      : context_(std::move(context)) {}

  // "" while the connection to `rank` works, else why it failed. Called
  // from one thread at a time (the switch's watcher, under its lock).
  std::string Failure(int rank) {
    auto failed = failures_.find(rank);
    if (failed != failures_.end()) return failed->second;
    try {
      std::unique_ptr<UnboundBuffer>& sentinel = posted_[rank];
      if (sentinel == nullptr) {
        sentinel = context_->createUnboundBuffer(&unused_, sizeof(unused_));
        sentinel->recv(rank, kSlot);
      }
      sentinel->abortWaitRecv();
      sentinel->waitRecv(nullptr, std::chrono::milliseconds(1));
      return "";
    } catch (const std::exception& e) {
      return failures_[rank] = e.what();
    }
  }

 private:
  // Gloo's collectives build their slots from small prefixes and counters.
  static constexpr uint64_t kSlot = ~uint64_t{0};

  std::shared_ptr<gloo::transport::Context> context_;
  char unused_ = 0;  // never written: nobody sends to kSlot
  std::map<int, std::unique_ptr<UnboundBuffer>> posted_;
  std::map<int, std::string> failures_;
};

class AbortableBuffer final : public UnboundBuffer, public SendWatch {
 public:
  AbortableBuffer(std::unique_ptr<UnboundBuffer> inner,
                  std::shared_ptr<AbortSwitch> abort_switch,
                  std::shared_ptr<PeerSentinels> peers)
      : UnboundBuffer(inner->ptr, inner->size),
        inner_(std::move(inner)),
        switch_(std::move(abort_switch)),
        peers_(std::move(peers)) {
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
    ThrowIfPeerFailed();
    int sent_to = -1;
    bool done = false;
    if (peers_ != nullptr) switch_->Watch(this);
    try {
      done = inner_->waitSend(&sent_to, timeout);
    } catch (...) {
      if (peers_ != nullptr) switch_->Unwatch(this);
      throw;
    }
    if (peers_ != nullptr) switch_->Unwatch(this);
    switch_->ThrowIfAborted();
    if (!done) {
      ThrowIfPeerFailed();
      return false;
    }
    Settle(sent_to);
    if (rank != nullptr) *rank = sent_to;
    return true;
  }
  void abortWaitRecv() override { inner_->abortWaitRecv(); }
  void abortWaitSend() override { inner_->abortWaitSend(); }
  void send(int dst, uint64_t slot, size_t offset, size_t nbytes) override {
    switch_->ThrowIfAborted();
    ThrowIfPeerFailed();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++unsent_[dst];
    }
    inner_->send(dst, slot, offset, nbytes);
  }

  // On the switch's watcher thread.
  void CheckPeers() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!peer_failure_.empty()) return;
    for (const auto& [dst, count] : unsent_) {
      std::string failure = peers_->Failure(dst);
      if (failure.empty()) continue;
      peer_failure_ = "the connection to rank " + std::to_string(dst) +
                      " failed while a send to it was in progress: " + failure;
      inner_->abortWaitSend();
      return;
    }
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
  void Settle(int dst) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = unsent_.find(dst);
    if (it != unsent_.end() && --it->second == 0) unsent_.erase(it);
  }

  // Once failed, every later send and wait fails too, as Gloo's do.
  void ThrowIfPeerFailed() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!peer_failure_.empty()) throw gloo::IoException(peer_failure_);
  }

  std::unique_ptr<UnboundBuffer> inner_;
  std::shared_ptr<AbortSwitch> switch_;
  std::shared_ptr<PeerSentinels> peers_;
  std::mutex mu_;
  std::map<int, int> unsent_;  // rank -> sends to it not waited for yet
  std::string peer_failure_;
};

// Forwards everything to the connected transport context; only buffers are
// decorated.
class AbortableTransportContext final : public gloo::transport::Context {
 public:
  AbortableTransportContext(std::shared_ptr<gloo::transport::Context> inner,
                            std::shared_ptr<AbortSwitch> abort_switch)
      : Context(inner->rank, inner->size),
        inner_(std::move(inner)),
        switch_(std::move(abort_switch)),
        peers_(std::make_shared<PeerSentinels>(inner_)) {
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
    return std::make_unique<AbortableBuffer>(
        inner_->createUnboundBuffer(ptr, size), switch_, peers_);
  }

 private:
  std::shared_ptr<gloo::transport::Context> inner_;
  std::shared_ptr<AbortSwitch> switch_;
  std::shared_ptr<PeerSentinels> peers_;  // freed before inner_
};

}  // namespace

std::unique_ptr<UnboundBuffer> MakeAbortableBuffer(
    std::unique_ptr<UnboundBuffer> inner,
    std::shared_ptr<AbortSwitch> abort_switch) {
  return std::make_unique<AbortableBuffer>(std::move(inner),
                                           std::move(abort_switch), nullptr);
}

AbortableContext::AbortableContext(int rank, int size,
                                   std::shared_ptr<AbortSwitch> s)
    : gloo::rendezvous::Context(rank, size), switch_(std::move(s)) {}

void AbortableContext::Arm() {
  transportContext_ =
      std::make_shared<AbortableTransportContext>(transportContext_, switch_);
}

}  // namespace hvd::runtime
