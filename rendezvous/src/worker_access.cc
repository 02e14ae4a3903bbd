#include "worker_access.h"

#include <string>

#include "hvd/rendezvous/protocol.h"

namespace hvd::rendezvous::internal {

using common::Printable;
using common::Status;

Status WorkerMayActFor(const common::WorkerIdentity& who, std::string_view slot,
                       int64_t worker, std::string_view what) {
  if (slot == who.slot && worker == who.worker) return Status::Ok();
  return Status::PermissionDenied(
      who.Describe() + " may not send a " + std::string(what) + " for " +
      "worker " + std::to_string(worker) + " (slot " + Printable(slot, 100) +
      "): a worker acts only for itself");
}

Status WorkerMayUseKv(const common::WorkerIdentity& who,
                      std::string_view method, const KvPath& path,
                      const std::function<bool(int64_t)>& member_of) {
  const std::string asked = Printable(method, 16) + " " +
                            Printable(path.scope, 128) + "/" +
                            Printable(path.key.value_or(""), 200);
  if (path.scope != protocol::kGlooScope) {
    return Status::PermissionDenied(who.Describe() + " may not " + asked +
                                    ": a worker uses only the '" +
                                    protocol::kGlooScope + "' scope");
  }
  if (method == "GET") return Status::Ok();
  if (!path.key) {
    return Status::PermissionDenied(who.Describe() + " may not " + asked +
                                    ": only hvdrun deletes a whole scope");
  }
  auto generation = protocol::GlooKeyGeneration(*path.key);
  if (!generation) {
    return Status::PermissionDenied(
        who.Describe() + " may not " + asked +
        ": a worker writes only under a generation's prefix (g<N>/)");
  }
  if (!member_of(*generation)) {
    return Status::PermissionDenied(who.Describe() + " may not " + asked +
                                    ": it is not a member of " + "generation " +
                                    std::to_string(*generation));
  }
  return Status::Ok();
}

}  // namespace hvd::rendezvous::internal
