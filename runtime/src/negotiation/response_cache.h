// The response cache of one process set. A response that ran before is
// kept under a bit; when a rank submits the same request again (same name
// and every parameter equal), it only has to say "bit b" instead of sending
// the request to the coordinator. Every member makes the same Put, Touch
// and Erase calls in the same order (the executed responses' order), so
// bits and evictions agree on all ranks without talking about them.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "negotiation/message.h"

namespace hvd::runtime {

class ResponseCache {
 public:
  // capacity 0: the cache is off (every lookup misses).
  explicit ResponseCache(size_t capacity);

  enum class State { kMiss, kHit, kInvalid };
  struct Lookup {
    State state = State::kMiss;
    uint32_t bit = 0;
  };
  // kHit: `request` equals what this rank sent when the cached response was
  // made. kInvalid: the name is cached with other parameters (the entry
  // must go on every rank).
  Lookup Find(const Request& request) const;

  const Response& response(uint32_t bit) const;

  // Caches a response that ran, with this rank's own request for it (an
  // allgather's shape differs between ranks). The least recently used entry
  // makes room when full.
  void Put(const Response& response, const Request& mine);
  void Touch(uint32_t bit);  // ran again: most recently used
  void Erase(uint32_t bit);
  void Clear();

  size_t capacity() const { return slots_.size(); }
  // Whether the cache may be used (capacity > 0 and not switched off by
  // autotune).
  bool enabled() const { return enabled_ && !slots_.empty(); }
  void set_enabled(bool enabled);

 private:
  struct Slot {
    Response response;
    Request mine;
    std::list<uint32_t>::iterator lru;  // position in lru_
  };
  std::vector<std::optional<Slot>> slots_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::list<uint32_t> lru_;  // most recently used first
  bool enabled_ = true;
};

// Whether two requests are the same collective with the same parameters.
bool SameRequest(const Request& a, const Request& b);

}  // namespace hvd::runtime
