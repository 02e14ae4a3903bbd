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
#pragma once

#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace hvd::runtime {

// One per generation's runtime, shared by all its contexts. Thread-safe.
class AbortSwitch {
 public:
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

 private:
  mutable std::mutex mu_;
  std::set<gloo::transport::UnboundBuffer*> live_;
  std::map<int, std::function<void()>> subscribers_;
  int next_subscription_ = 0;
  bool aborted_ = false;
  std::string reason_;
};

// The decorator of one buffer (exposed for its unit test).
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
