#include "negotiation/controller.h"

#include <algorithm>

#include "negotiation/op_info.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

namespace {

// Flags in word 0 of the bit vector. The vector is reduced with AND alone,
// so a flag that must be ORed travels inverted (NOT of the OR of x is the
// AND of NOT x), as do the invalid bits.
constexpr uint64_t kNoRoundNeeded = 1;  // inverted "needs a coordinator round"
constexpr uint64_t kNoneJoined = 2;     // inverted "has joined"
constexpr uint64_t kWaiting = 4;        // this rank waits (all: every rank)

void BitwiseAnd(void* out, const void* a, const void* b, size_t words) {
  auto* o = static_cast<uint64_t*>(out);
  auto* x = static_cast<const uint64_t*>(a);
  auto* y = static_cast<const uint64_t*>(b);
  for (size_t i = 0; i < words; ++i) o[i] = x[i] & y[i];
}

bool Cacheable(const Response& r) {
  return r.kind == Response::Kind::kRun && OpInfoOf(r.request.type).payload;
}

}  // namespace

Controller::Controller(std::unique_ptr<ControlPlane> plane,
                       std::vector<int> global_ranks,
                       const ControllerOptions& options)
    : plane_(std::move(plane)),
      negotiator_(*plane_, global_ranks),
      cache_(options.cache_capacity),
      stall_time_(options.stall_check
                      ? options.stall.warn_after
                      : std::chrono::steady_clock::duration::max()) {
  if (options.stall_check && plane_->rank() == 0) {
    inspector_ = std::make_unique<StallInspector>(options.stall);
  }
  const bool detect = options.deadlock_after.count() > 0 && plane_->size() > 1;
  hit_patience_ = detect ? options.deadlock_after / 2
                         : std::chrono::steady_clock::duration::max();
  if (detect && plane_->rank() == 0) {
    detector_ = std::make_unique<DeadlockDetector>(std::move(global_ranks),
                                                   options.deadlock_after);
  }
}

NegotiationStats Controller::stats() const {
  NegotiationStats stats;
  stats.cycles = cycles_.load();
  stats.coordinator_rounds = coordinator_rounds_.load();
  stats.cache_hits = cache_hits_.load();
  stats.negotiation_seconds =
      static_cast<double>(negotiation_ns_.load()) * 1e-9;
  return stats;
}

bool Controller::InspectStalls() {
  if (!inspector_) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_inspection_ < std::chrono::seconds(1)) return false;
  last_inspection_ = now;
  auto stop = inspector_->Check(negotiator_.coordinator().Pending(), now);
  if (!stop) return false;
  negotiator_.coordinator().Stop(*stop);
  return true;
}

bool Controller::EndDeadlock() {
  if (!deadlock_) return false;
  // Every rank logs each failed collective as it completes it.
  negotiator_.coordinator().FailPending(common::Code::kMismatch, *deadlock_);
  deadlock_.reset();
  return true;
}

void Controller::ObserveWaits(const std::vector<bool>& waiting,
                              bool responded) {
  if (!detector_) return;
  const bool all =
      std::all_of(waiting.begin(), waiting.end(), [](bool w) { return w; });
  Coordinator& coordinator = negotiator_.coordinator();
  // The pending names are only looked at while every member waits.
  auto verdict = detector_->Observe(
      std::chrono::steady_clock::now(), waiting, responded,
      all ? coordinator.Pending() : std::vector<PendingTensor>{},
      all ? coordinator.Joined() : std::vector<int>{});
  if (verdict) deadlock_ = std::move(verdict);
}

Result<ResponseList> Controller::Cycle(std::vector<Request> requests,
                                       bool shutdown, bool waiting) {
  const auto start = std::chrono::steady_clock::now();
  auto responses = Negotiate(std::move(requests), shutdown, waiting);
  negotiation_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return responses;
}

Result<ResponseList> Controller::Negotiate(std::vector<Request> requests,
                                           bool shutdown, bool waiting) {
  ++cycles_;
  // The first rank has something to say through the coordinator.
  const bool deadlock = EndDeadlock();
  const bool force_round = InspectStalls() || deadlock || announcing_;
  announcing_ = false;
  for (const Request& r : requests) {
    if (r.type == OpType::kJoin) joined_ = true;
  }
  // A joined rank submits nothing until its join completes.
  waiting = waiting || joined_;
  if (!cache_.enabled()) {
    ++coordinator_rounds_;
    // Hits left waiting when autotune switched the cache off.
    for (Waiting& w : waiting_hits_) requests.push_back(std::move(w.request));
    waiting_hits_.clear();
    for (const Request& r : requests) sent_[r.name] = r;
    RequestList mine{shutdown, std::move(requests), waiting};
    auto list = negotiator_.Exchange(mine);
    if (!list.ok()) return list;
    Remember(list->responses, 0);
    ObserveWaits(negotiator_.coordinator().waiting(), !list->responses.empty());
    return list;
  }

  // Classify this rank's requests against the cache.
  const auto now = std::chrono::steady_clock::now();
  std::vector<Waiting> candidates = std::move(waiting_hits_);
  waiting_hits_.clear();
  for (Request& r : requests) candidates.push_back({std::move(r), now});
  const size_t bit_words = (cache_.capacity() + 63) / 64;
  std::vector<uint64_t> bits(1 + 2 * bit_words, 0);
  uint64_t* hit = &bits[1];
  uint64_t* valid = &bits[1 + bit_words];
  for (size_t w = 0; w < bit_words; ++w) valid[w] = ~uint64_t{0};
  std::vector<Request> misses;
  std::vector<Waiting> hits;
  for (Waiting& c : candidates) {
    auto found = cache_.Find(c.request);
    // A hit the other members have not matched for the stall time goes to
    // the coordinator, whose stall inspector can then name who is missing;
    // so does one this rank waits for, after half the deadlock bound, for
    // the deadlock detector (a cache entry lost in a rare case).
    if (found.state == ResponseCache::State::kHit &&
        (now - c.since >= stall_time_ ||
         (waiting && now - c.since >= hit_patience_))) {
      found.state = ResponseCache::State::kInvalid;
    }
    switch (found.state) {
      case ResponseCache::State::kHit:
        hit[found.bit / 64] |= uint64_t{1} << (found.bit % 64);
        hits.push_back(std::move(c));
        break;
      case ResponseCache::State::kInvalid:
        valid[found.bit / 64] &= ~(uint64_t{1} << (found.bit % 64));
        misses.push_back(std::move(c.request));
        break;
      case ResponseCache::State::kMiss:
        misses.push_back(std::move(c.request));
        break;
    }
  }
  const bool want_round = !misses.empty() || shutdown || joined_ || force_round;
  bits[0] = (want_round ? 0 : kNoRoundNeeded) | (joined_ ? 0 : kNoneJoined) |
            (waiting ? kWaiting : 0);
  // The first rank: each member's flag, before they are ANDed.
  const int size = plane_->size();
  std::vector<bool> members_waiting(size, waiting);
  if (size > 1) {
    // The first rank gathers every member's vector, ANDs them and
    // broadcasts the result: two steps whatever the set's size (Gloo's ring
    // allreduce and allgather take size - 1 steps, each a round trip).
    constexpr char kWhat[] = "response cache bit exchange";
    const size_t bytes = bits.size() * sizeof(uint64_t);
    std::vector<uint64_t> all(plane_->rank() == 0 ? bits.size() * size : 0);
    Status status = plane_->Gather(kWhat, bits.data(), bytes,
                                   all.empty() ? nullptr : all.data());
    if (!status.ok()) return status;
    for (size_t r = 0; r < all.size() / bits.size(); ++r) {
      members_waiting[r] = (all[r * bits.size()] & kWaiting) != 0;
    }
    for (size_t r = 1; r < all.size() / bits.size(); ++r) {
      BitwiseAnd(bits.data(), bits.data(), &all[r * bits.size()], bits.size());
    }
    status = plane_->Broadcast(kWhat, bits.data(), bytes);
    if (!status.ok()) return status;
  }
  const bool round = (bits[0] & kNoRoundNeeded) == 0;
  const bool any_joined = (bits[0] & kNoneJoined) == 0;

  // Entries some member found invalid go on every member, in bit order.
  for (size_t w = 0; w < bit_words; ++w) {
    if (valid[w] == ~uint64_t{0}) continue;  // the common case: none
    for (uint32_t bit = w * 64; bit < (w + 1) * 64; ++bit) {
      if ((valid[w] & (uint64_t{1} << (bit % 64))) == 0) cache_.Erase(bit);
    }
  }
  // While a member has joined it submits nothing, so no hit can be common:
  // everything goes to the coordinator, which knows who joined.
  std::vector<uint32_t> common_bits;
  for (Waiting& h : hits) {
    auto found = cache_.Find(h.request);
    if (any_joined || found.state != ResponseCache::State::kHit) {
      misses.push_back(std::move(h.request));
    } else if (hit[found.bit / 64] & (uint64_t{1} << (found.bit % 64))) {
      common_bits.push_back(found.bit);
    } else {
      waiting_hits_.push_back(std::move(h));
    }
  }
  if (!misses.empty() && !round) {
    return Status::Internal(
        "response cache: a request the cache cannot answer, but no member "
        "asked for a coordinator round");
  }
  std::sort(common_bits.begin(), common_bits.end());
  ResponseList out;
  for (uint32_t bit : common_bits)
    out.responses.push_back(cache_.response(bit));
  cache_hits_ += static_cast<int64_t>(common_bits.size());
  const size_t cached = out.responses.size();
  if (round) {
    ++coordinator_rounds_;
    for (const Request& r : misses) sent_[r.name] = r;
    RequestList mine{shutdown, std::move(misses), waiting};
    auto list = negotiator_.Exchange(mine);
    if (!list.ok()) return list.status();
    for (Response& r : list->responses) out.responses.push_back(std::move(r));
    out.shutdown = list->shutdown;
    out.stop = std::move(list->stop);
    out.tuning = list->tuning;
  }
  if (!any_joined) {
    for (size_t i = 0; i < cached; ++i) cache_.Touch(common_bits[i]);
  }
  Remember(out.responses, any_joined ? out.responses.size() : cached);
  ObserveWaits(members_waiting, !out.responses.empty());
  return out;
}

void Controller::Announce(const Tuning& tuning) {
  negotiator_.coordinator().Announce(tuning);
  announcing_ = true;
}

void Controller::Remember(const std::vector<Response>& responses,
                          size_t cached) {
  for (size_t i = 0; i < responses.size(); ++i) {
    const Response& r = responses[i];
    if (r.request.type == OpType::kJoin) joined_ = false;
    auto mine = sent_.find(r.request.name);
    if (mine == sent_.end()) continue;
    if (i >= cached && Cacheable(r)) cache_.Put(r, mine->second);
    sent_.erase(mine);
  }
}

}  // namespace hvd::runtime
