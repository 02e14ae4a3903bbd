// Broadcast: across hosts among the root's local rank, then through its
// slot.
#include <gloo/broadcast.h>

#include <algorithm>
#include <cstring>

#include "ops/shm/chunking.h"
#include "ops/shm/host_barrier.h"
#include "ops/shm/host_group.h"

namespace hvd::runtime::shm {

using common::Status;

Status HostGroup::Broadcast(void* data, size_t bytes, int root,
                            const std::string& what) {
  const int root_local = root % place_.local_size;
  const int root_host = root / place_.local_size;
  auto* at = static_cast<uint8_t*>(data);
  if (cross_ && place_.local_rank == root_local && bytes > 0) {
    Status status = Cross(what, [&] {
      gloo::BroadcastOptions opts(cross_);
      opts.setOutput(at, bytes);
      opts.setRoot(root_host);
      gloo::broadcast(opts);
    });
    if (!status.ok()) return status;
  }
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(chunk_bytes_, bytes - done);
    if (place_.local_rank == root_local)
      std::memcpy(Slot(root_local), at + done, n);
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    if (place_.local_rank != root_local)
      std::memcpy(at + done, Slot(root_local), n);
    parity_ ^= 1;
    done += n;
  }
  return Status::Ok();
}

}  // namespace hvd::runtime::shm
