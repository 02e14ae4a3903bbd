// What a worker learns when it checks in for a generation (elastic mode),
// and its JSON form on the wire. Shared by the driver and the workers.
#pragma once

#include <cstdint>
#include <string>

#include "hvd/common/status.h"

namespace hvd::rendezvous {

// A slot is "<host>:<local rank>": a worker's identity across generations.
std::string SlotName(const std::string& host, int local_rank);

struct WorkerAssignment {
  int64_t generation = 0;
  int rank = 0;
  int size = 0;
  int local_rank = 0;
  int local_size = 0;
  int cross_rank = 0;
  int cross_size = 0;
  // Every rank restores rank 0's state at the start of this generation
  // (some slot is new to the job).
  bool sync = true;
};

// The check-in answer's JSON, both ways.
std::string EncodeAssignment(const WorkerAssignment& assignment);
common::Result<WorkerAssignment> DecodeAssignment(const std::string& json);

}  // namespace hvd::rendezvous
