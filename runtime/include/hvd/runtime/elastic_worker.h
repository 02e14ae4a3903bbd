// ElasticWorker: one elastic worker process's side of the elastic protocol,
// kept across runtime resets. It owns the worker's notification server
// (started once, so no HostsUpdated or Abort sent between two generations is
// missed), checks the worker's slot in for each generation, remembers the
// generation it joined and whether that generation starts with a state sync,
// and hands the driver's Abort to the Runtime of that generation.
//
// Owned by the Python binding (one per elastic worker process, from its first
// hvd.init() to its exit), next to the Runtime of the current generation.
// The call order of one reset is JoinNext(), Runtime::Start(), Attach().
//
// Thread safety: every method may be called from any thread. The Abort
// handler runs on the notification server's threads and holds abort_mu_
// around Runtime::Abort (so abort_mu_ comes before the runtime's own locks;
// no runtime thread takes it). In a process forked from the owner,
// JoinNext and Attach refuse (OwnerProcess) and destroying it stops
// nothing: the server belongs to the parent.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "hvd/common/status.h"
#include "hvd/runtime/config.h"
#include "hvd/runtime/elastic.h"
#include "hvd/runtime/owner_process.h"

namespace hvd::notify {
class NotificationServer;
struct Abort;
}  // namespace hvd::notify

namespace hvd::runtime {

class Runtime;
namespace nccl {
class Gpus;
}

class ElasticWorker {
 public:
  // Starts the notification server on config.bind_address (an ephemeral port),
  // accepting messages signed with config.worker_key.
  static common::Result<std::unique_ptr<ElasticWorker>> Start(
      const RuntimeConfig& config);
  ~ElasticWorker();
  ElasticWorker(const ElasticWorker&) = delete;
  ElasticWorker& operator=(const ElasticWorker&) = delete;

  // Checks the slot (config.hostname, config.layout.local_rank) in for the
  // first generation after generation(), registering the notification address,
  // and waits for every slot of it, with no deadline of its own: the driver
  // bounds the wait (docs/design.md, "Check-in") by publishing a newer
  // generation or closing the board; a driver that is gone fails it. Records
  // whether that generation syncs. kNotFound: the slot was removed from the
  // job; kInvalidArgument in a fork: the slot is the parent's.
  common::Result<JoinedGeneration> JoinNext(const RuntimeConfig& config);

  // `runtime` now runs `generation` (the one JoinNext returned): the
  // generation counts as joined, and Aborts of it reach `runtime` while it
  // lives. An Abort of any other generation is late news and dropped.
  common::Status Attach(const std::shared_ptr<Runtime>& runtime,
                        int64_t generation);

  // The generation last joined with a running runtime; 0 before the first.
  int64_t generation() const { return generation_; }
  // Whether the generation last checked into starts with every rank
  // syncing state from rank 0 (the driver decides; true before the first).
  bool sync() const { return sync_; }
  // The generation a HostsUpdated announced that this worker has not joined
  // yet, or 0.
  int64_t PendingHostsUpdate() const;
  // What that update changed, in Horovod's HostUpdateResult bits
  // (notify::kHostsRemoved, kHostsAdded); 0 when none is pending.
  int PendingHostsChanges() const;
  // "<host>:<port>" of the notification server.
  std::string notify_address() const;
  // Ok in the process that started it; kInvalidArgument in a fork.
  common::Status CheckProcess() const { return owner_.Check(); }
  // This process's GPUs, for every generation's Runtime::Start: the NCCL
  // communicator each generation leaves waits there for the next one to
  // keep or shrink (runtime/src/ops/nccl/gpus.h).
  const std::shared_ptr<nccl::Gpus>& gpus() const { return gpus_; }
  // Aborts the NCCL communicator the last generation left: this process is
  // done with the job (a shutdown that is no reset).
  void DropGpuCommunicators();

 private:
  ElasticWorker() = default;
  void OnAbort(const notify::Abort& abort);

  const OwnerProcess owner_;
  std::atomic<int64_t> generation_{0};
  std::atomic<bool> sync_{true};
  std::mutex abort_mu_;
  std::weak_ptr<Runtime> abortable_;  // guarded by abort_mu_
  int64_t abortable_generation_ = 0;  // guarded by abort_mu_
  std::shared_ptr<nccl::Gpus> gpus_;  // set by Start
  // Last, so it stops (and its threads end) before the members its Abort
  // handler uses are destroyed.
  std::unique_ptr<notify::NotificationServer> server_;
};

}  // namespace hvd::runtime
