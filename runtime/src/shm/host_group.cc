#include "host_group.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <spdlog/spdlog.h>

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <random>

#include "dtype_dispatch.h"
#include "gloo_call.h"
#include "host_barrier.h"
#include "hvd/common/hmac.h"
#include "reduce_function.h"
#include "segment.h"

namespace hvd::runtime::shm {

using common::Result;
using common::Status;

namespace {

constexpr size_t kPage = 4096;
// Slices start on their own cache lines: two ranks writing neighbouring
// slices would otherwise bounce a line between cores.
constexpr size_t kLine = 64;

size_t RoundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

// Who maps the segment, after the barrier words in its first page: each
// local rank's pid and pid namespace, so that the others can watch its
// process (HostBarrier::WatchPeers).
struct Member {
  std::atomic<int32_t> pid{0};
  std::atomic<uint64_t> pid_namespace{0};
};
constexpr size_t kMembersOffset = 256;
static_assert(sizeof(BarrierWords) <= kMembersOffset);
constexpr int kMaxWatched =
    static_cast<int>((kPage - kMembersOffset) / sizeof(Member));

Member* Members(Segment& segment) {
  return reinterpret_cast<Member*>(segment.data() + kMembersOffset);
}

// The inode of this process's pid namespace; 0 if /proc does not say.
uint64_t PidNamespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? st.st_ino : 0;
}

// Local rank k's pidfd for every peer this process can watch (same pid
// namespace, an open pidfd), else -1.
std::vector<int> WatchablePeers(Segment& segment, int local_rank,
                                int local_size) {
  std::vector<int> pidfds(local_size, -1);
  const uint64_t mine = PidNamespace();
  Member* members = Members(segment);
  for (int k = 0; k < std::min(local_size, kMaxWatched); ++k) {
    const int32_t pid = members[k].pid.load(std::memory_order_acquire);
    if (k == local_rank || pid <= 0 || mine == 0 ||
        members[k].pid_namespace.load(std::memory_order_acquire) != mine) {
      continue;
    }
    pidfds[k] = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  }
  return pidfds;
}

// Names: "/hvd-<job>-g<generation>-<nonce>-h<host's first rank>". <job> is
// derived from the job's secret, so only its workers can name the segment
// and two jobs on one host never meet; the nonce (rank 0's, per start) keeps
// apart two starts of one job and generation.
std::string JobPrefix(const RuntimeConfig& config) {
  return "/hvd-" + common::Sha256Hex("shm:" + config.secret).substr(0, 16) +
         "-g";
}

std::string SegmentName(const RuntimeConfig& config, int64_t generation,
                        int64_t nonce) {
  return JobPrefix(config) + std::to_string(generation) + "-" +
         std::to_string(nonce) + "-h" +
         std::to_string(config.layout.rank - config.layout.local_rank);
}

// One rank's slot per buffer. Measured on a 2-core machine
// (docs/benchmarks.md): 1 MiB is best when every local rank has a core;
// with more local ranks than the host has cores, a barrier usually waits
// for a peer that is not running, so 4 MiB chunks (a quarter of the
// barriers) win. The host's online CPUs, not this process's affinity: every
// local rank must compute the same size.
size_t ChunkBytes(const RuntimeConfig& config) {
  if (config.shm_chunk_bytes > 0) return RoundUp(config.shm_chunk_bytes, kPage);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const bool crowded = cpus > 0 && config.layout.local_size > cpus;
  return size_t{1} << (crowded ? 22 : 20);
}

size_t SegmentBytes(const RuntimeConfig& config) {
  return kPage +
         2 * static_cast<size_t>(config.layout.local_size) * ChunkBytes(config);
}

// Elementwise minimum over every rank of the job: how the ranks agree.
Status AgreeMin(const std::shared_ptr<gloo::Context>& global,
                std::vector<int64_t>* values) {
  if (global->size == 1) return Status::Ok();
  return GlooCall("agreeing on hierarchical collectives", [&] {
    gloo::AllreduceOptions opts(global);
    opts.setOutput(values->data(), values->size());
    opts.setReduceFunction(ReduceFunction<int64_t>(ReduceOp::kMin));
    gloo::allreduce(opts);
  });
}

// The slice of an n-element chunk that local rank k reduces.
struct Slice {
  size_t begin;
  size_t count;
};
Slice SliceOf(size_t n, size_t element, int k, int local_size) {
  const size_t line = std::max<size_t>(1, kLine / element);
  const size_t per = RoundUp((n + local_size - 1) / local_size, line);
  const size_t begin = std::min(n, per * k);
  return {begin, std::min(n, begin + per) - begin};
}

}  // namespace

Result<std::unique_ptr<HostGroup>> HostGroup::Connect(
    const HostGroupSetup& setup) {
  const RuntimeConfig& config = *setup.config;
  const common::RankLayout& place = config.layout;
  // Ranks on a host are contiguous and hosts in cross-rank order: the
  // layout every stage below relies on.
  const bool layout =
      place.local_size > 1 && place.size % place.local_size == 0 &&
      place.cross_size == place.size / place.local_size &&
      place.rank == place.cross_rank * place.local_size + place.local_rank;
  if (place.size == 1) return std::unique_ptr<HostGroup>();
  // Every rank learns the same: whether every host wants it, has the
  // layout and the same number of ranks; and rank 0's nonce, which makes
  // the segment's name this start's own (two runtimes of one job and
  // generation, as tests start them, never meet on a name).
  std::random_device random;
  const int64_t nonce =
      place.rank == 0
          ? static_cast<int64_t>((uint64_t{random()} << 31) ^ random())
          : std::numeric_limits<int64_t>::max();
  std::vector<int64_t> agreed = {config.hierarchical_allreduce,
                                 config.hierarchical_allgather,
                                 layout,
                                 place.local_size,
                                 -place.local_size,
                                 nonce};
  Status status = AgreeMin(setup.global, &agreed);
  if (!status.ok()) return status;
  const bool use =
      (agreed[0] || agreed[1]) && agreed[2] && agreed[3] == -agreed[4];
  if (!use) return std::unique_ptr<HostGroup>();
  const std::string name = SegmentName(config, setup.generation, agreed[5]);
  const size_t bytes = SegmentBytes(config);
  std::unique_ptr<Segment> segment;
  Status made;
  if (place.local_rank == 0) {
    Segment::UnlinkEarlierGenerations(JobPrefix(config), setup.generation);
    auto created = Segment::Create(name, bytes);
    if (created.ok()) {
      segment = std::move(*created);
      new (segment->data()) BarrierWords();
    } else {
      made = created.status();
    }
  }
  // A step fails on some host: the flat path on every rank, with a warning
  // (a job runs without shared memory rather than not at all).
  auto everywhere = [&](const char* step) -> Result<bool> {
    std::vector<int64_t> ok = {made.ok()};
    Status agreement = AgreeMin(setup.global, &ok);
    if (!agreement.ok()) return agreement;
    if (ok[0] != 0) return true;
    spdlog::warn("hierarchical collectives are off: {}",
                 made.ok()
                     ? std::string("another host's rank could not ") + step +
                           " its shared-memory segment (its "
                           "log says why)"
                     : made.ToString());
    return false;
  };
  auto created = everywhere("create");
  if (!created.ok() || !*created) {
    if (segment) Segment::Unlink(name);
    if (!created.ok()) return created.status();
    return std::unique_ptr<HostGroup>();
  }
  if (place.local_rank != 0) {
    auto opened = Segment::Open(name, bytes);
    if (opened.ok()) {
      segment = std::move(*opened);
    } else {
      made = opened.status();
    }
  }
  if (segment && place.local_rank < kMaxWatched) {
    Member& me = Members(*segment)[place.local_rank];
    me.pid_namespace.store(PidNamespace(), std::memory_order_release);
    me.pid.store(getpid(), std::memory_order_release);
  }
  auto mapped = everywhere("map");
  // Every local rank has mapped it, or given up: the name can go.
  Segment::Unlink(name);
  if (!mapped.ok()) return mapped.status();
  if (!*mapped) return std::unique_ptr<HostGroup>();
  std::vector<int> pidfds =
      WatchablePeers(*segment, place.local_rank, place.local_size);
  std::unique_ptr<HostGroup> group(
      new HostGroup(config, agreed[0] != 0, agreed[1] != 0, std::move(segment),
                    setup.abort_switch));
  group->barrier_->WatchPeers(std::move(pidfds));
  if (place.cross_size > 1) {
    auto cross = setup.connect_cross();
    if (!cross.ok()) return cross.status();
    group->cross_ = *cross;
  }
  spdlog::debug(
      "hierarchical collectives through {} bytes of shared memory "
      "(allreduce {}, allgather {})",
      bytes, group->allreduce_on_, group->allgather_on_);
  return group;
}

HostGroup::HostGroup(const RuntimeConfig& config, bool allreduce_on,
                     bool allgather_on, std::unique_ptr<Segment> segment,
                     std::shared_ptr<AbortSwitch> abort_switch)
    : local_rank_(config.layout.local_rank),
      local_size_(config.layout.local_size),
      cross_rank_(config.layout.cross_rank),
      cross_size_(config.layout.cross_size),
      allreduce_on_(allreduce_on),
      allgather_on_(allgather_on),
      segment_(std::move(segment)),
      chunk_bytes_(ChunkBytes(config)),
      barrier_(std::make_unique<HostBarrier>(
          reinterpret_cast<BarrierWords*>(segment_->data()), local_size_,
          config.gloo_timeout, &aborted_)),
      abort_switch_(std::move(abort_switch)) {
  if (abort_switch_) {
    abort_subscription_ = abort_switch_->Subscribe([this] {
      aborted_.store(true, std::memory_order_release);
      barrier_->Break();
    });
  }
}

HostGroup::~HostGroup() {
  // After this, no Abort touches the segment we unmap.
  if (abort_switch_) abort_switch_->Unsubscribe(abort_subscription_);
}

uint8_t* HostGroup::Slot(int local_rank) const {
  return segment_->data() + kPage +
         (static_cast<size_t>(parity_) * local_size_ + local_rank) *
             chunk_bytes_;
}

template <typename F>
Status HostGroup::Cross(const std::string& what, F&& call) {
  Status status = GlooCall(what + " (across hosts)", std::forward<F>(call));
  if (!status.ok()) barrier_->Break();
  return status;
}

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
    uint8_t* mine = Slot(local_rank_);
    std::memcpy(mine, bytes + done * element, n * element);
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    const Slice slice = SliceOf(n, element, local_rank_, local_size_);
    uint8_t* out = mine + slice.begin * element;
    for (int k = 1; k < local_size_; ++k) {
      // Every rank adds the others in its own rotation; the order is the
      // same for a slice on every host, as its reducer's local rank is.
      const int peer = (local_rank_ + k) % local_size_;
      reduce(out, out, Slot(peer) + slice.begin * element, slice.count);
    }
    status = barrier_->Wait(what);
    if (!status.ok()) return status;
    for (int k = 0; k < local_size_; ++k) {
      const Slice s = SliceOf(n, element, k, local_size_);
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
Status HostGroup::AllreduceAcrossHosts(DataType dtype, ReduceOp op,
                                       void* data, size_t count,
                                       const std::string& what) {
  const size_t element = DataTypeSize(dtype);
  ReduceFn reduce = WithCppType(
      dtype, [&](auto type) { return ReduceFunction<decltype(type)>(op); });
  auto* bytes = static_cast<uint8_t*>(data);
  // Elements of each region per chunk: a slot holds one piece of each.
  const size_t per = std::max<size_t>(1, chunk_bytes_ / element / local_size_);
  const Slice mine = SliceOf(count, element, local_rank_, local_size_);
  // Region 0 is the longest.
  const size_t longest = SliceOf(count, element, 0, local_size_).count;
  auto piece = [&](const Slice& region, size_t done) {
    return region.count > done ? std::min(per, region.count - done) : 0;
  };
  for (size_t done = 0; done < longest; done += per) {
    uint8_t* slot = Slot(local_rank_);
    for (int k = 0; k < local_size_; ++k) {
      const Slice region = SliceOf(count, element, k, local_size_);
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
    const size_t at = local_rank_ * per * element;
    for (int k = 1; k < local_size_ && n > 0; ++k) {
      const int peer = (local_rank_ + k) % local_size_;
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
      std::memcpy(Slot(local_rank_), bytes + (mine.begin + done) * element,
                  n * element);
    }
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    for (int k = 0; k < local_size_; ++k) {
      if (k == local_rank_) continue;
      const Slice region = SliceOf(count, element, k, local_size_);
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

Status HostGroup::Broadcast(void* data, size_t bytes, int root,
                            const std::string& what) {
  const int root_local = root % local_size_;
  const int root_host = root / local_size_;
  auto* at = static_cast<uint8_t*>(data);
  if (cross_ && local_rank_ == root_local && bytes > 0) {
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
    if (local_rank_ == root_local) std::memcpy(Slot(root_local), at + done, n);
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    if (local_rank_ != root_local) std::memcpy(at + done, Slot(root_local), n);
    parity_ ^= 1;
    done += n;
  }
  return Status::Ok();
}

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
  std::vector<std::vector<Piece>> streams(local_size_);
  std::vector<size_t> stream_bytes(local_size_, 0);
  for (int k = 0; k < local_size_; ++k) {
    for (int h = 0; h < cross_size_; ++h) {
      const int r = h * local_size_ + k;
      streams[k].push_back({stream_bytes[k], offset[r], bytes_by_rank[r]});
      stream_bytes[k] += bytes_by_rank[r];
    }
  }
  // Across hosts first: this rank's stream, gathered among its local rank.
  const uint8_t* stream = static_cast<const uint8_t*>(input);
  std::vector<uint8_t> gathered;
  if (cross_ && stream_bytes[local_rank_] > 0) {
    std::vector<size_t> counts;
    for (const Piece& p : streams[local_rank_]) counts.push_back(p.bytes);
    gathered.resize(stream_bytes[local_rank_]);
    const size_t mine = counts[cross_rank_];
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
    const size_t mine =
        std::min(chunk_bytes_, stream_bytes[local_rank_] -
                                   std::min(done, stream_bytes[local_rank_]));
    if (mine > 0) std::memcpy(Slot(local_rank_), stream + done, mine);
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    const size_t end = done + chunk_bytes_;
    for (int k = 0; k < local_size_; ++k) {
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

Status HostGroup::Gather(const void* input, size_t bytes, void* output,
                         const std::string& what) {
  const auto* in = static_cast<const uint8_t*>(input);
  // Local rank 0 collects its host's block: in place on one host, for the
  // gather across hosts otherwise.
  uint8_t* host_block = nullptr;
  const size_t block = static_cast<size_t>(local_size_) * bytes;
  if (local_rank_ == 0) {
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
    std::memcpy(Slot(local_rank_), in + done, n);
    Status status = barrier_->Wait(what);
    if (!status.ok()) return status;
    if (host_block) {
      for (int k = 0; k < local_size_; ++k) {
        std::memcpy(host_block + k * bytes + done, Slot(k), n);
      }
    }
    parity_ ^= 1;
    done += n;
  }
  if (!cross_ || local_rank_ != 0 || bytes == 0) return Status::Ok();
  return Cross(what, [&] {
    gloo::GatherOptions opts(cross_);
    opts.setInput(host_block, block);
    if (cross_rank_ == 0) {
      opts.setOutput(static_cast<uint8_t*>(output), block * cross_size_);
    }
    opts.setRoot(0);
    gloo::gather(opts);
  });
}

}  // namespace hvd::runtime::shm
