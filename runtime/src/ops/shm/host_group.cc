#include "ops/shm/host_group.h"

#include <gloo/allreduce.h>
#include <spdlog/spdlog.h>

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <random>

#include "hvd/common/hmac.h"
#include "ops/reduce_function.h"
#include "ops/shm/chunking.h"
#include "ops/shm/host_barrier.h"
#include "ops/shm/segment.h"
#include "transport/gloo_call.h"

namespace hvd::runtime::shm {

using common::Result;
using common::Status;

namespace {

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

// Names: "/hvd-<job>-g<generation>-<nonce>-<set>-h<host's first rank in
// the set>". <job> is derived from where the job meets (hvdrun's server, or
// its prefix in etcd), so two jobs on one host never meet; the nonce (the
// set's rank 0's, random per start, agreed over Gloo) keeps apart two
// starts of one job and generation, and is what no one outside the job can
// know before the segment exists (workers create it exclusively).
std::string JobPrefix(const RuntimeConfig& config) {
  const std::string job = config.etcd
                              ? config.etcd_prefix
                              : config.rendezvous_addr + ":" +
                                    std::to_string(config.rendezvous_port);
  return "/hvd-" + common::Sha256Hex("shm:" + job).substr(0, 16) + "-g";
}

std::string SegmentName(const HostGroupSetup& setup, int64_t nonce) {
  return JobPrefix(*setup.config) + std::to_string(setup.generation) + "-" +
         std::to_string(nonce) + "-" + setup.set_tag + "-h" +
         std::to_string(setup.place.rank - setup.place.local_rank);
}

// One rank's slot per buffer. Measured on a 2-core machine
// (docs/benchmarks.md): 1 MiB is best when every local rank has a core;
// with more local ranks than the host has cores, a barrier usually waits
// for a peer that is not running, so 4 MiB chunks (a quarter of the
// barriers) win. The host's online CPUs and the job's ranks on it, not this
// process's affinity or the set's ranks: every rank of every set on every
// host must compute the same size.
size_t ChunkBytes(const RuntimeConfig& config) {
  if (config.shm_chunk_bytes > 0) return RoundUp(config.shm_chunk_bytes, kPage);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const bool crowded = cpus > 0 && config.layout.local_size > cpus;
  return size_t{1} << (crowded ? 22 : 20);
}

size_t SegmentBytes(const RuntimeConfig& config, int local_size) {
  return kPage + 2 * static_cast<size_t>(local_size) * ChunkBytes(config);
}

// Elementwise minimum over every rank of the set: how the ranks agree.
Status AgreeMin(const std::shared_ptr<gloo::Context>& context,
                std::vector<int64_t>* values) {
  if (context->size == 1) return Status::Ok();
  return GlooCall("agreeing on hierarchical collectives", [&] {
    gloo::AllreduceOptions opts(context);
    opts.setOutput(values->data(), values->size());
    opts.setReduceFunction(ReduceFunction<int64_t>(ReduceOp::kMin));
    gloo::allreduce(opts);
  });
}

}  // namespace

common::RankLayout SetPlace(const common::RankLayout& job,
                            const std::vector<int>& ranks) {
  const auto host_of = [&](int rank) { return rank / job.local_size; };
  const int my_host = host_of(job.rank);
  common::RankLayout place;
  place.size = static_cast<int>(ranks.size());
  place.local_size = 0;
  place.cross_size = 0;
  int last_host = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    // Ascending ranks: hosts come in order, each once.
    const int host = host_of(ranks[i]);
    if (host != last_host) {
      ++place.cross_size;
      last_host = host;
      if (host < my_host) place.cross_rank = place.cross_size;
    }
    if (host != my_host) continue;
    if (ranks[i] == job.rank) {
      place.rank = static_cast<int>(i);
      place.local_rank = place.local_size;
    }
    ++place.local_size;
  }
  return place;
}

namespace {

// Ranks on a host are contiguous and hosts in cross-rank order: the layout
// every stage relies on, in the job (SetPlace reads hosts off it) and in
// the set.
bool HostByHost(const common::RankLayout& l) {
  return l.size % l.local_size == 0 && l.cross_size == l.size / l.local_size &&
         l.rank == l.cross_rank * l.local_size + l.local_rank;
}

}  // namespace

Result<std::unique_ptr<HostGroup>> HostGroup::Connect(
    const HostGroupSetup& setup) {
  const RuntimeConfig& config = *setup.config;
  const common::RankLayout& place = setup.place;
  const bool layout =
      place.local_size > 1 && HostByHost(config.layout) && HostByHost(place);
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
  Status status = AgreeMin(setup.context, &agreed);
  if (!status.ok()) return status;
  const bool use =
      (agreed[0] || agreed[1]) && agreed[2] && agreed[3] == -agreed[4];
  if (!use) return std::unique_ptr<HostGroup>();
  const std::string name = SegmentName(setup, agreed[5]);
  const size_t bytes = SegmentBytes(config, place.local_size);
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
    Status agreement = AgreeMin(setup.context, &ok);
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
      new HostGroup(config, place, agreed[0] != 0, agreed[1] != 0,
                    std::move(segment), setup.abort_switch));
  group->barrier_->WatchPeers(std::move(pidfds));
  if (place.cross_size > 1) {
    auto cross = setup.connect_cross();
    if (!cross.ok()) return cross.status();
    group->cross_ = *cross;
  }
  spdlog::debug(
      "hierarchical collectives through {} bytes of shared memory for set "
      "{} (allreduce {}, allgather {})",
      bytes, setup.set_tag, group->allreduce_on_, group->allgather_on_);
  return group;
}

HostGroup::HostGroup(const RuntimeConfig& config,
                     const common::RankLayout& place, bool allreduce_on,
                     bool allgather_on, std::unique_ptr<Segment> segment,
                     std::shared_ptr<AbortSwitch> abort_switch)
    : place_(place),
      allreduce_on_(allreduce_on),
      allgather_on_(allgather_on),
      segment_(std::move(segment)),
      chunk_bytes_(ChunkBytes(config)),
      barrier_(std::make_unique<HostBarrier>(
          reinterpret_cast<BarrierWords*>(segment_->data()), place_.local_size,
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
         (static_cast<size_t>(parity_) * place_.local_size + local_rank) *
             chunk_bytes_;
}

Status HostGroup::Cross(const std::string& what,
                        const std::function<void()>& call) {
  Status status = GlooCall(what + " (across hosts)", call);
  if (!status.ok()) barrier_->Break();
  return status;
}

}  // namespace hvd::runtime::shm
