// What a request signed with a worker's own key may do (issue 33;
// docs/security.md). The job secret's holder, an hvdrun, may do anything;
// a worker acts only for itself:
//   - check-in and report: only for its own slot and worker id;
//   - the store: read anything in protocol::kGlooScope, and write or delete
//     keys only under the GlooGenerationPrefix of a generation it belongs
//     to; no other scope, and no scope-wide delete;
//   - the server's status: read.
// Everything else is kPermissionDenied (403), with a message that names
// the worker and what it asked for. Pure: membership is the caller's
// answer (ElasticBoard::IsMember).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "http_reply.h"
#include "hvd/common/status.h"
#include "hvd/common/worker_key.h"

namespace hvd::rendezvous::internal {

// May `who` act for `slot` and `worker` (a check-in's or a report's)?
common::Status WorkerMayActFor(const common::WorkerIdentity& who,
                               std::string_view slot, int64_t worker,
                               std::string_view what);

// May `who` send `method` for `path` under /v1/kv/? `member_of(g)` says
// whether `who` belongs to generation g.
common::Status WorkerMayUseKv(const common::WorkerIdentity& who,
                              std::string_view method, const KvPath& path,
                              const std::function<bool(int64_t)>& member_of);

}  // namespace hvd::rendezvous::internal
