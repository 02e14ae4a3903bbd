#include "negotiation/response_cache.h"

namespace hvd::runtime {

bool SameRequest(const Request& a, const Request& b) {
  return a.type == b.type && a.dtype == b.dtype && a.op == b.op &&
         a.root == b.root && a.prescale == b.prescale &&
         a.postscale == b.postscale && a.name == b.name && a.shape == b.shape &&
         a.splits == b.splits && a.group == b.group;
}

ResponseCache::ResponseCache(size_t capacity) : slots_(capacity) {}

ResponseCache::Lookup ResponseCache::Find(const Request& request) const {
  Lookup lookup;
  if (!enabled()) return lookup;
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return lookup;
  lookup.bit = it->second;
  lookup.state = SameRequest(slots_[it->second]->mine, request)
                     ? State::kHit
                     : State::kInvalid;
  return lookup;
}

const Response& ResponseCache::response(uint32_t bit) const {
  return slots_[bit]->response;
}

void ResponseCache::Put(const Response& response, const Request& mine) {
  if (!enabled()) return;
  auto named = by_name_.find(mine.name);
  if (named != by_name_.end()) Erase(named->second);
  uint32_t bit = 0;
  if (by_name_.size() == slots_.size()) {
    bit = lru_.back();
    Erase(bit);
  } else {
    // The lowest free bit: the same on every rank.
    while (slots_[bit]) ++bit;
  }
  lru_.push_front(bit);
  slots_[bit] = Slot{response, mine, lru_.begin()};
  by_name_[mine.name] = bit;
}

void ResponseCache::Touch(uint32_t bit) {
  if (!slots_[bit]) return;
  lru_.splice(lru_.begin(), lru_, slots_[bit]->lru);
}

void ResponseCache::Erase(uint32_t bit) {
  if (!slots_[bit]) return;
  by_name_.erase(slots_[bit]->mine.name);
  lru_.erase(slots_[bit]->lru);
  slots_[bit].reset();
}

void ResponseCache::Clear() {
  for (auto& slot : slots_) slot.reset();
  by_name_.clear();
  lru_.clear();
}

void ResponseCache::set_enabled(bool enabled) {
  if (!enabled) Clear();
  enabled_ = enabled;
}

}  // namespace hvd::runtime
