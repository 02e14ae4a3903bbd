// The control plane of one process set: the two collectives that a set's
// Controller and Negotiator move their messages with, a gather of bytes to
// the set's first rank and a broadcast of bytes from it. An interface, so
// that the negotiation can be unit-tested with ranks as threads
// (tests/runtime/in_process_control_plane.h) and run over Gloo in the
// runtime (GlooControlPlane below). See docs/design.md, "Negotiation".
//
// Every member of the set makes the same calls in the same order, each with
// the same byte count on every member. Errors are statuses, never
// exceptions: kTransport (a peer's connection broke), kTimeout (a peer did
// not take part in time), or what an implementation documents. After an
// error the plane's state is unknown: the caller stops using it (the
// runtime's loop ends, as on any Gloo error).
//
// Thread-safety: one thread per member calls a plane (the set's background
// thread); rank() and size() may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include <gloo/context.h>

#include "hvd/common/status.h"

namespace hvd::runtime {

class ControlPlane {
 public:
  virtual ~ControlPlane() = default;

  // This member's rank in the set, and the set's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every member sends `bytes` bytes at `in` to rank 0, where `out`
  // (size() * bytes) receives member r's at r * bytes; elsewhere `out` is
  // not used (may be null). `what` names the step in error messages.
  virtual common::Status Gather(std::string_view what, const void* in,
                                size_t bytes, void* out) = 0;

  // Rank 0's `bytes` bytes at `buffer` replace every other member's.
  virtual common::Status Broadcast(std::string_view what, void* buffer,
                                   size_t bytes) = 0;
};

// The runtime's plane: Gloo's gather and broadcast on the set's context
// (shared with the set's collectives, which run between the negotiations
// on the same thread). Gloo's exceptions become statuses as GlooCall's do
// (gloo_call.h): "<what>: <Gloo's message>".
class GlooControlPlane : public ControlPlane {
 public:
  explicit GlooControlPlane(std::shared_ptr<gloo::Context> context);

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  common::Status Gather(std::string_view what, const void* in, size_t bytes,
                        void* out) override;
  common::Status Broadcast(std::string_view what, void* buffer,
                           size_t bytes) override;

 private:
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace hvd::runtime
