// A process set's control plane through its host group (host_group.h): the
// negotiation's gather and broadcast go through the shared segment inside
// each host and over Gloo only among the hosts' local rank 0s. On one host
// a cycle's exchange then costs a few barriers instead of two rounds over
// loopback TCP, which is most of a small collective's latency.
#pragma once

#include <memory>
#include <string>

#include "negotiation/control_plane.h"
#include "ops/shm/host_group.h"

namespace hvd::runtime::shm {

class HostControlPlane : public ControlPlane {
 public:
  explicit HostControlPlane(std::shared_ptr<HostGroup> group)
      : group_(std::move(group)) {}

  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }
  common::Status Gather(std::string_view what, const void* in, size_t bytes,
                        void* out) override {
    return group_->Gather(in, bytes, out, std::string(what));
  }
  common::Status Broadcast(std::string_view what, void* buffer,
                           size_t bytes) override {
    return group_->Broadcast(buffer, bytes, 0, std::string(what));
  }

 private:
  std::shared_ptr<HostGroup> group_;
};

}  // namespace hvd::runtime::shm
