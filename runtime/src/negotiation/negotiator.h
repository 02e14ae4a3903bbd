// The negotiation transport: each cycle every rank sends its encoded
// RequestList to rank 0 with a gather, rank 0 runs the Coordinator and
// sends the encoded ResponseList back with a broadcast, both on the set's
// ControlPlane (Gloo's gather and broadcast in the runtime). Messages travel
// in fixed slots so that a typical cycle costs exactly one gather and one
// broadcast; a longer message costs one more round (see docs/design.md).
#pragma once

#include <string>
#include <vector>

#include "hvd/common/status.h"
#include "negotiation/control_plane.h"
#include "negotiation/coordinator.h"
#include "negotiation/message.h"

namespace hvd::runtime {

class Negotiator {
 public:
  // Moves its messages over `plane` (the process set's, borrowed: it must
  // outlive the negotiator); `global_ranks` are the set's members, named in
  // error messages.
  Negotiator(ControlPlane& plane, std::vector<int> global_ranks);

  // One cycle, on every rank: what to run now, identical on every rank.
  common::Result<ResponseList> Exchange(const RequestList& mine);

  // The message table; meaningful on the set's first rank only.
  Coordinator& coordinator() { return coordinator_; }

 private:
  // Gather to rank 0 (`out` is filled there only) and broadcast from
  // rank 0, in place.
  common::Status Gather(std::vector<char>& in, std::vector<char>* out);
  common::Status Broadcast(std::vector<char>* buffer);
  // Rank 0: feeds every rank's gathered requests to the coordinator and
  // encodes its answer. Each rank's message starts at rank * stride; with
  // `lengths` null, it is length-prefixed.
  std::string Coordinate(const std::vector<char>& gathered, size_t stride,
                         const uint32_t* lengths, common::Status* status);

  ControlPlane& plane_;
  Coordinator coordinator_;  // used on rank 0 only
};

}  // namespace hvd::runtime
