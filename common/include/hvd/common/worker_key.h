// A worker's own key (issue 33): the driver derives one key per worker
// process from the job secret and hands it to that process alone, so a
// worker can sign only as itself and the job secret stays with hvdrun.
//
//   key = hex HMAC-SHA256(job secret, "hvd worker key" "\n" WORKER "\n" SLOT)
//
// WORKER is hvdrun's id of the process (HVD_WORKER_ID, new for every start,
// so a process hvdrun replaced keeps a key that names only itself), SLOT its
// "<host>:<local rank>". A request signed with such a key names the worker
// in one more header, `X-Hvd-Worker: WORKER@SLOT`; a server that holds the
// job secret derives the key from that header and checks the signature
// with it (hmac.h), so the header cannot be changed without the key. The
// driver signs what it sends to a worker's notification server with the
// same key. docs/security.md says who holds which key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "hvd/common/status.h"

namespace hvd::common {

inline constexpr char kWorkerHeader[] = "X-Hvd-Worker";
// The longest X-Hvd-Worker value a server reads: a 19-digit id, '@' and a
// slot of at most kMaxSlotBytes.
inline constexpr size_t kMaxSlotBytes = 512;
inline constexpr size_t kMaxWorkerHeaderBytes = 20 + kMaxSlotBytes;

struct WorkerIdentity {
  int64_t worker = 0;  // hvdrun's id of the process, from 1
  std::string slot;    // "<host>:<local rank>"

  // The X-Hvd-Worker value, "WORKER@SLOT".
  std::string Header() const;
  // "worker 7 (slot n1:0)", for messages.
  std::string Describe() const;
  bool operator==(const WorkerIdentity& other) const {
    return worker == other.worker && slot == other.slot;
  }
};

// Parses an X-Hvd-Worker value: a decimal id from 1 without leading zeros,
// '@', and a slot of 1-kMaxSlotBytes printable ASCII bytes. kUnauthenticated
// when malformed (the server answers 401: the signature cannot be checked).
Result<WorkerIdentity> ParseWorkerIdentity(std::string_view header);

// The key of `who` under `job_secret` (64 lower-case hex digits).
std::string WorkerKey(std::string_view job_secret, const WorkerIdentity& who);

// The etcd backend's keys for what workers write there (the Gloo addresses
// and NCCL ids of a generation, sealed with etcd_seal.h):
//   generations key = hex HMAC-SHA256(job secret, "hvd generations key")
//   generation key  = hex HMAC-SHA256(generations key,
//                                     "hvd generation key" "\n" GENERATION)
// A member of generation G gets G's key in its check-in answer, wrapped
// for it alone (WrapGenerationKey), so it can write for G and no other
// generation. A static job's workers are the members of every generation
// they start, and get the generations key (HVD_GENERATIONS_KEY).
std::string GenerationsKey(std::string_view job_secret);
std::string GenerationKey(std::string_view generations_key, int64_t generation);

// `generation_key` (64 lower-case hex digits) one-time-padded, digit by
// digit, with hex HMAC-SHA256(worker key, "hvd generation key wrap" "\n"
// GENERATION): readable in the clear check-in answer only with the key of
// the worker it was wrapped for. Unwrap undoes it; kUnauthenticated for
// anything but 64 lower-case hex digits.
std::string WrapGenerationKey(std::string_view worker_key, int64_t generation,
                              std::string_view generation_key);
Result<std::string> UnwrapGenerationKey(std::string_view worker_key,
                                        int64_t generation,
                                        std::string_view wrapped);

// The identities and keys a server met lately, by X-Hvd-Worker value, so
// that a worker's request costs one HMAC and no parsing, as one signed with
// the job secret does. At most `capacity` entries: when full it starts
// over, so a client naming ever new workers costs a derivation each, never
// memory. Not thread-safe: one per I/O thread.
class WorkerKeyCache {
 public:
  struct Entry {
    WorkerIdentity who;
    std::string key;  // WorkerKey(job secret, who)
  };
  explicit WorkerKeyCache(size_t capacity = 4096) : capacity_(capacity) {}
  // The worker `header` names and its key; ParseWorkerIdentity's error for
  // a malformed one (never cached). Valid until the next call.
  Result<const Entry*> Lookup(std::string_view job_secret,
                              const std::string& header);
  size_t size() const { return entries_.size(); }

 private:
  const size_t capacity_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace hvd::common
