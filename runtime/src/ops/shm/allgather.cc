// Allgather: across hosts among equal local ranks, then through the slots.
#include <gloo/allgatherv.h>

#include <algorithm>
#include <cstring>

#include "ops/shm/chunking.h"
#include "ops/shm/host_barrier.h"
#include "ops/shm/host_group.h"

namespace hvd::runtime::shm {

using common::Status;

namespace {

// Where the bytes of one local rank's stream go in the output: the
// contributions of the ranks with that local rank, host after host.
struct Piece {
  size_t stream_begin;
  size_t output_begin;
  size_t bytes;
};

}  // namespace

Status HostGroup::Allgather(const void* input,
                            const std::vector<size_t>& bytes_by_rank,
                            void* output, const std::string& what) {
  std::vector<size_t> offset(bytes_by_rank.size() + 1, 0);
  for (size_t r = 0; r < bytes_by_rank.size(); ++r) {
    offset[r + 1] = offset[r] + bytes_by_rank[r];
  }
  // streams[k]: local rank k's contributions of every host, in host order.
  std::vector<std::vector<Piece>> streams(place_.local_size);
  std::vector<size_t> stream_bytes(place_.local_size, 0);
  for (int k = 0; k < place_.local_size; ++k) {
    for (int h = 0; h < place_.cross_size; ++h) {
      const int r = h * place_.local_size + k;
      streams[k].push_back({stream_bytes[k], offset[r], bytes_by_rank[r]});
      stream_bytes[k] += bytes_by_rank[r];
    }
  }
  // Across hosts first: this rank's stream, gathered among its local rank.
  const uint8_t* stream = static_cast<const uint8_t*>(input);
  std::vector<uint8_t> gathered;
  if (cross_ && stream_bytes[place_.local_rank] > 0) {
    std::vector<size_t> counts;
    for (const Piece& p : streams[place_.local_rank]) counts.push_back(p.bytes);
    gathered.resize(stream_bytes[place_.local_rank]);
    const size_t mine = counts[place_.cross_rank];
    Status status = Cross(what, [&] {
      static uint8_t nothing;
      gloo::AllgathervOptions opts(cross_);
      opts.setInput(mine ? const_cast<uint8_t*>(stream) : &nothing, mine);
      opts.setOutput(gathered.data(), counts);
      gloo::allgatherv(opts);
    });
    if (!status.ok()) return status;
    stream = gathered.data();
  }
  const size_t longest =
      *std::max_element(stream_bytes.begin(), stream_bytes.end());
  auto* out = static_cast<uint8_t*>(output);
  for (size_t done = 0; done < longest; done += chunk_bytes_) {
    const size_t mine = std::min(
        chunk_bytes_, stream_bytes[place_.local_rank] -
                          std::min(done, stream_bytes[place_.local_rank]));
    if (mine > 0) std::memcpy(Slot(place_.local_rank), stream + done, mine);
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    const size_t end = done + chunk_bytes_;
    for (int k = 0; k < place_.local_size; ++k) {
      const uint8_t* slot = Slot(k);
      for (const Piece& p : streams[k]) {
        const size_t from = std::max(done, p.stream_begin);
        const size_t to = std::min(end, p.stream_begin + p.bytes);
        if (from >= to) continue;
        std::memcpy(out + p.output_begin + (from - p.stream_begin),
                    slot + (from - done), to - from);
      }
    }
    parity_ ^= 1;
  }
  return Status::Ok();
}

}  // namespace hvd::runtime::shm
