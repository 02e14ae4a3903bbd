// Allreduce through the host segment, and across hosts over the cross
// context.
#include <gloo/allreduce.h>

#include <algorithm>
#include <cstring>

#include "ops/dtype_dispatch.h"
#include "ops/reduce_function.h"
#include "ops/shm/chunking.h"
#include "ops/shm/host_barrier.h"
#include "ops/shm/host_group.h"

namespace hvd::runtime::shm {

using common::Status;

// One host: per chunk, local rank k reduces slice k of the chunk in its
// own slot and every rank copies every slice out, so a chunk crosses
// memory four times per rank.
Status HostGroup::Allreduce(DataType dtype, ReduceOp op, void* data,
                            size_t count, const std::string& what) {
  if (cross_) return AllreduceAcrossHosts(dtype, op, data, count, what);
  const size_t element = DataTypeSize(dtype);
  const size_t chunk = chunk_bytes_ / element;
  ReduceFn reduce = WithCppType(
      dtype, [&](auto type) { return ReduceFunction<decltype(type)>(op); });
  auto* bytes = static_cast<uint8_t*>(data);
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(chunk, count - done);
    uint8_t* mine = Slot(place_.local_rank);
    std::memcpy(mine, bytes + done * element, n * element);
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    const Slice slice =
        SliceOf(n, element, place_.local_rank, place_.local_size);
    uint8_t* out = mine + slice.begin * element;
    for (int k = 1; k < place_.local_size; ++k) {
      // Every rank adds the others in its own rotation; the order is the
      // same for a slice on every host, as its reducer's local rank is.
      const int peer = (place_.local_rank + k) % place_.local_size;
      reduce(out, out, Slot(peer) + slice.begin * element, slice.count);
    }
    status = barrier_->Wait(what);
    if (!status.ok()) return status;
    for (int k = 0; k < place_.local_size; ++k) {
      const Slice s = SliceOf(n, element, k, place_.local_size);
      if (s.count == 0) continue;
      std::memcpy(bytes + (done + s.begin) * element,
                  Slot(k) + s.begin * element, s.count * element);
    }
    parity_ ^= 1;
    done += n;
  }
  return Status::Ok();
}

// Several hosts: a Gloo call per chunk would pay the network's latency
// per chunk, so the stage across hosts takes each rank's whole region at
// once. Local rank k owns region k of the tensor (SliceOf over the whole
// count): per chunk, every rank copies a piece of every region into its
// slot and rank k reduces its piece from every slot into its own `data`;
// then one allreduce of the region across hosts; then, per chunk, rank k
// shares its piece through its slot and every rank copies every piece.
Status HostGroup::AllreduceAcrossHosts(DataType dtype, ReduceOp op, void* data,
                                       size_t count, const std::string& what) {
  const size_t element = DataTypeSize(dtype);
  ReduceFn reduce = WithCppType(
      dtype, [&](auto type) { return ReduceFunction<decltype(type)>(op); });
  auto* bytes = static_cast<uint8_t*>(data);
  // Elements of each region per chunk: a slot holds one piece of each.
  const size_t per =
      std::max<size_t>(1, chunk_bytes_ / element / place_.local_size);
  const Slice mine =
      SliceOf(count, element, place_.local_rank, place_.local_size);
  // Region 0 is the longest.
  const size_t longest = SliceOf(count, element, 0, place_.local_size).count;
  auto piece = [&](const Slice& region, size_t done) {
    return region.count > done ? std::min(per, region.count - done) : 0;
  };
  for (size_t done = 0; done < longest; done += per) {
    uint8_t* slot = Slot(place_.local_rank);
    for (int k = 0; k < place_.local_size; ++k) {
      const Slice region = SliceOf(count, element, k, place_.local_size);
      const size_t n = piece(region, done);
      if (n > 0) {
        std::memcpy(slot + k * per * element,
                    bytes + (region.begin + done) * element, n * element);
      }
    }
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    const size_t n = piece(mine, done);
    uint8_t* out = bytes + (mine.begin + done) * element;
    const size_t at = place_.local_rank * per * element;
    for (int k = 1; k < place_.local_size && n > 0; ++k) {
      const int peer = (place_.local_rank + k) % place_.local_size;
      reduce(out, k == 1 ? slot + at : out, Slot(peer) + at, n);
    }
    parity_ ^= 1;
  }
  if (mine.count > 0) {
    Status status = Cross(what, [&] {
      WithCppType(dtype, [&](auto type) {
        using T = decltype(type);
        gloo::AllreduceOptions opts(cross_);
        opts.setOutput(reinterpret_cast<T*>(bytes + mine.begin * element),
                       mine.count);
        opts.setReduceFunction(ReduceFunction<T>(op));
        gloo::allreduce(opts);
      });
    });
    if (!status.ok()) return status;
  }
  for (size_t done = 0; done < longest; done += per) {
    const size_t n = piece(mine, done);
    if (n > 0) {
      std::memcpy(Slot(place_.local_rank),
                  bytes + (mine.begin + done) * element, n * element);
    }
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    for (int k = 0; k < place_.local_size; ++k) {
      if (k == place_.local_rank) continue;
      const Slice region = SliceOf(count, element, k, place_.local_size);
      const size_t m = piece(region, done);
      if (m > 0) {
        std::memcpy(bytes + (region.begin + done) * element, Slot(k),
                    m * element);
      }
    }
    parity_ ^= 1;
  }
  return Status::Ok();
}

}  // namespace hvd::runtime::shm
