// Gloo contexts whose waits an Abort ends at once.
//
// Runtime::Abort shuts down the generation's connections, which fails
// every receive and every send Gloo has not started writing. But a send
// that Gloo has begun to write to a peer that stopped reading (its host
// partitioned, the process stopped) waits in UnboundBuffer::waitSend, and
// Debian's Gloo does not signal such a send when its connection fails
// (tcp::Pair::signalException skips unbound buffers in its transmit
// queue): it waits out the whole Gloo timeout. The only way to end that
// wait is the buffer's abortWaitSend(), and the buffers are made inside
// Gloo's collectives. So the contexts hvd connects hand out their buffers
// through a decorator that registers each live buffer with an AbortSwitch;
// AbortSwitch::Abort ends every wait in progress, and from then on every
// wait, send or receive on them throws gloo::IoException, which GlooCall
// turns into kTransport like any broken connection.
//
// The same send also outlives the failure of its own connection: a peer
// killed while Gloo writes to it fails the write, and the pair closes, but
// the send waits on. No abort comes when nobody outside saw the peer die
// (a lost host under Slurm: its steps look alive until Slurm declares the
// node down). So while a send waits, the switch's watcher checks the
// connections to the ranks it still sends to, and a failed one ends the
// wait with that connection's error, naming the rank.
#pragma once

#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace hvd::runtime {

// A send wait in progress whose peers' connections are checked.
class SendWatch {
 public:
  virtual ~SendWatch() = default;
  // Ends the wait if the connection to a rank it still sends to failed.
  virtual void CheckPeers() = 0;
};

// One per generation's runtime, shared by all its contexts. Thread-safe.
class AbortSwitch {
 public:
  AbortSwitch() = default;
  AbortSwitch(const AbortSwitch&) = delete;
  AbortSwitch& operator=(const AbortSwitch&) = delete;
  ~AbortSwitch();

  // Ends every wait on a live buffer now and fails every later operation.
  // Returns false if it was aborted already.
  bool Abort(const std::string& reason);
  bool aborted() const;
  // Throws gloo::IoException naming the reason once aborted.
  void ThrowIfAborted() const;

  // Calls `on_abort` from Abort (at once if aborted already) until
  // Unsubscribe(id) returns, which never happens during a call. It runs
  // under the switch's lock: it must not call the switch.
  int Subscribe(std::function<void()> on_abort);
  void Unsubscribe(int id);

  // A buffer's life, from creation to destruction.
  void Add(gloo::transport::UnboundBuffer* buffer);
  void Remove(gloo::transport::UnboundBuffer* buffer);

  // From Watch until Unwatch returns, the watcher thread (started at the
  // first Watch) calls watch->CheckPeers() every kSendCheckPeriod, under
  // the switch's lock. A second: far below the Gloo timeout, and long
  // enough that the collective's transfers with live peers are over when
  // a send to a lost one ends it.
  static constexpr std::chrono::milliseconds kSendCheckPeriod{1000};
  void Watch(SendWatch* watch);
  void Unwatch(SendWatch* watch);

 private:
  void CheckSends();

  mutable std::mutex mu_;
  std::set<gloo::transport::UnboundBuffer*> live_;
  std::set<SendWatch*> sending_;
  std::condition_variable sending_changed_;
  std::thread watcher_;
  bool closing_ = false;
  std::map<int, std::function<void()>> subscribers_;
  int next_subscription_ = 0;
  bool aborted_ = false;
  std::string reason_;
};

// The decorator of one buffer, without the watch of its sends' connections
// (exposed for its unit test; AbortableContext's buffers have the watch).
std::unique_ptr<gloo::transport::UnboundBuffer> MakeAbortableBuffer(
    std::unique_ptr<gloo::transport::UnboundBuffer> inner,
    std::shared_ptr<AbortSwitch> abort_switch);

// A rendezvous context that, once connected, makes its buffers abortable.
class AbortableContext : public gloo::rendezvous::Context {
 public:
  AbortableContext(int rank, int size, std::shared_ptr<AbortSwitch> s);

  // Call after connectFullMesh: wraps the connected transport context.
  void Arm();

 private:
  std::shared_ptr<AbortSwitch> switch_;
};

}  // namespace hvd::runtime
