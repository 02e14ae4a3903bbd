// DriverState: what the leading hvdrun keeps of its driver in etcd
// (--rendezvous-backend etcd), so that the hvdrun that leads after it can
// rebuild the driver instead of starting the job again: the newest
// generation's plan, which generation every slot last joined and who holds
// the committed state, every worker whose process may still run (with its
// pid and notification address, as the driver learnt them), and the host
// table with its blacklist deadlines as wall-clock times.
//
// The leader writes it after every change that alters it (one fenced
// transaction, sealed with the job's secret: driver/etcd_job.h); the JSON
// form below is what etcd holds, and docs/etcd.md describes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/rendezvous/elastic_board.h"
#include "policy/host_table.h"

namespace hvd::launcher {

// A larger state is not written (etcd takes 1.5 MiB in one request): a
// job of thousands of workers, which the status page says.
inline constexpr size_t kMaxDriverStateBytes = 1 << 20;

struct SavedWorker {
  int64_t id = 0;  // hvdrun's worker id (HVD_WORKER_ID)
  std::string slot, host;
  int index = 0;  // the slot's on its host
  int start_rank = 0;
  int64_t joined = 0;  // the newest generation it checked in to; 0: none
  int joined_rank = 0;
  bool stopping = false;  // the driver told it to stop
  // The driver's, not the policy's: 0 and "" until the worker reported its
  // pid and registered its notification server; whether its guard waits
  // for an adopter when hvdrun is gone (remote/adoptable_guard.h).
  int64_t pid = 0;
  std::string notify;
  bool adoptable = false;
};

struct DriverState {
  rendezvous::GenerationPlan plan;  // the newest published
  // The newest generation every slot checked in to, and the workers that
  // did: they hold the committed state.
  int64_t complete_generation = 0;
  std::vector<int64_t> holders;
  int resets = 0;
  int64_t next_worker_id = 1;
  std::vector<SavedWorker> workers;  // those whose process may still run
  std::vector<HostTable::SavedHost> hosts;
};

std::string EncodeDriverState(const DriverState& state);
// Refuses anything but what EncodeDriverState writes, and more than
// kMaxDriverStateBytes, saying what is wrong.
common::Result<DriverState> DecodeDriverState(std::string_view json);

}  // namespace hvd::launcher
