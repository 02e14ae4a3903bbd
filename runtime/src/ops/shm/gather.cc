// Gather to rank 0: through the segment to each host's local rank 0, then
// across hosts.
#include <gloo/gather.h>

#include <algorithm>
#include <cstring>

#include "ops/shm/chunking.h"
#include "ops/shm/host_barrier.h"
#include "ops/shm/host_group.h"

namespace hvd::runtime::shm {

using common::Status;

Status HostGroup::Gather(const void* input, size_t bytes, void* output,
                         const std::string& what) {
  const auto* in = static_cast<const uint8_t*>(input);
  // Local rank 0 collects its host's block: in place on one host, for the
  // gather across hosts otherwise.
  uint8_t* host_block = nullptr;
  const size_t block = static_cast<size_t>(place_.local_size) * bytes;
  if (place_.local_rank == 0) {
    if (cross_) {
      // Every negotiation cycle gathers: reuse the buffer.
      if (host_block_.size() < block) host_block_.resize(block);
      host_block = host_block_.data();
    } else {
      host_block = static_cast<uint8_t*>(output);
    }
  }
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(chunk_bytes_, bytes - done);
    std::memcpy(Slot(place_.local_rank), in + done, n);
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    if (host_block) {
      for (int k = 0; k < place_.local_size; ++k) {
        std::memcpy(host_block + k * bytes + done, Slot(k), n);
      }
    }
    parity_ ^= 1;
    done += n;
  }
  if (!cross_ || place_.local_rank != 0 || bytes == 0) return Status::Ok();
  return Cross(what, [&] {
    gloo::GatherOptions opts(cross_);
    opts.setInput(host_block, block);
    if (place_.cross_rank == 0) {
      opts.setOutput(static_cast<uint8_t*>(output), block * place_.cross_size);
    }
    opts.setRoot(0);
    gloo::gather(opts);
  });
}

}  // namespace hvd::runtime::shm
