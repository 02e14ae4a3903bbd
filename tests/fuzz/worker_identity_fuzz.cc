// Fuzzes what a server makes of a worker's identity (issue 33): the
// X-Hvd-Worker field (common/worker_key.h), the key derived from it, and
// what that worker may do at the rendezvous server (rendezvous/src/
// worker_access.h, with protocol::GlooKeyGeneration).
// Input: X-HVD-WORKER '\n' METHOD '\n' SCOPE '\n' KEY ('-' alone: none) '\n'
// SLOT '\n' WORKER (a check-in's or report's).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "hvd/common/env.h"
#include "hvd/common/worker_key.h"
#include "hvd/rendezvous/protocol.h"
#include "worker_access.h"

namespace {

namespace protocol = hvd::rendezvous::protocol;
using hvd::common::Code;
using hvd::common::WorkerIdentity;

constexpr int64_t kMemberOf = 3;  // the one generation the worker is in

bool IsLowerHex64(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto fields = hvd::fuzz::SplitFields(data, size, 6);
  const std::string& header = fields[0];
  const std::string& method = fields[1];
  const std::string& scope = fields[2];
  const std::optional<std::string> key =
      fields[3] == "-" ? std::nullopt : std::optional<std::string>(fields[3]);
  const std::string& slot = fields[4];

  auto who = hvd::common::ParseWorkerIdentity(header);
  if (!who.ok()) {
    HVD_FUZZ_CHECK(who.status().code() == Code::kUnauthenticated);
    return 0;
  }
  HVD_FUZZ_CHECK(who->worker >= 1);
  HVD_FUZZ_CHECK(!who->slot.empty() &&
                 who->slot.size() <= hvd::common::kMaxSlotBytes);
  HVD_FUZZ_CHECK(header.size() <= hvd::common::kMaxWorkerHeaderBytes);
  // What is parsed is what is named: the header round-trips.
  HVD_FUZZ_CHECK(who->Header() == header);
  const std::string worker_key = hvd::common::WorkerKey("s", *who);
  HVD_FUZZ_CHECK(IsLowerHex64(worker_key));
  HVD_FUZZ_CHECK(worker_key == hvd::common::WorkerKey("s", *who));

  // A check-in or report: allowed exactly for the worker's own slot and id.
  auto id = hvd::common::ParseInt(fields[5], "worker", 0, INT64_MAX);
  const int64_t named = id.ok() ? *id : 0;
  auto acting =
      hvd::rendezvous::internal::WorkerMayActFor(*who, slot, named, "check-in");
  HVD_FUZZ_CHECK(acting.ok() == (slot == who->slot && named == who->worker));
  if (!acting.ok()) HVD_FUZZ_CHECK(acting.code() == Code::kPermissionDenied);

  // The store: reads in the Gloo scope, writes under its own generation.
  auto generation = key ? protocol::GlooKeyGeneration(*key) : std::nullopt;
  if (generation) {
    HVD_FUZZ_CHECK(*generation >= 0);
    HVD_FUZZ_CHECK(key->rfind(protocol::GlooGenerationPrefix(*generation), 0) ==
                   0);
  }
  hvd::rendezvous::internal::KvPath path{scope, key};
  auto using_store = hvd::rendezvous::internal::WorkerMayUseKv(
      *who, method, path, [](int64_t g) { return g == kMemberOf; });
  const bool expected =
      scope == protocol::kGlooScope &&
      (method == "GET" || (generation && *generation == kMemberOf));
  HVD_FUZZ_CHECK(using_store.ok() == expected);
  if (!using_store.ok()) {
    HVD_FUZZ_CHECK(using_store.code() == Code::kPermissionDenied);
  }
  return 0;
}
