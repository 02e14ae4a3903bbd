// The coordinator's message table (it runs on the first rank of a process
// set): collects every rank's ready requests per tensor name, and once all
// ranks have asked for a name (or joined), checks that they agree and
// answers with a Response to run it, or one that fails it on every rank with
// a message naming the tensor, the ranks and what differs. Pure
// bookkeeping: the transport is the Negotiator's.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "negotiation/message.h"

namespace hvd::runtime {

using SteadyTime = std::chrono::steady_clock::time_point;

// A tensor some ranks have submitted and others have not (yet).
struct PendingTensor {
  std::string name;
  OpType type = OpType::kAllreduce;
  SteadyTime first_seen;
  std::vector<int> missing;    // global ranks that have not submitted it
  std::vector<int> submitted;  // global ranks that have
};

class Coordinator {
 public:
  // `global_ranks`: the set's members by set rank; messages name these.
  explicit Coordinator(std::vector<int> global_ranks);

  // Records one rank's (set rank's) requests of this cycle.
  void Add(int rank, const RequestList& list,
           SteadyTime now = std::chrono::steady_clock::now());

  // The responses of every name all ranks have now asked for, in the order
  // they became ready (the order every rank executes them in), then the
  // join's once every rank has joined, and whether any rank asked to shut
  // down.
  ResponseList TakeReady();

  // Every name still waiting for some ranks, oldest first.
  std::vector<PendingTensor> Pending() const;
  // The global ranks that have joined, while the join has not completed.
  std::vector<int> Joined() const;
  // Whether each rank (by set rank) said it was waiting in the requests it
  // sent last.
  const std::vector<bool>& waiting() const { return waiting_; }

  // Fails every pending name, and a pending join, on every rank with
  // `code` and `message` in the next answer, and forgets them.
  void FailPending(common::Code code, const std::string& message);

  // Every later answer tells every rank to stop, for `reason`.
  void Stop(std::string reason) { stop_ = std::move(reason); }
  // The next answer carries `tuning` to every rank.
  void Announce(const Tuning& tuning) { tuning_ = tuning; }

 private:
  struct Entry {
    std::vector<Request> by_rank;
    std::vector<bool> seen;
    int count = 0;
    int64_t order = 0;
    SteadyTime first_seen;
  };
  bool Ready(const Entry& entry) const;

  std::vector<int> global_ranks_;
  int size_;
  std::unordered_map<std::string, Entry> table_;
  int64_t next_order_ = 0;
  std::vector<std::string> ready_;
  // Requests that are wrong on their own (a rank asked twice).
  std::vector<Response> errors_;
  bool shutdown_ = false;
  std::string stop_;
  std::optional<Tuning> tuning_;
  // Join: which ranks have joined since the last join completed, and the
  // last of them.
  std::vector<bool> joined_;
  int joined_count_ = 0;
  int last_joined_ = -1;
  std::vector<bool> waiting_;
};

// Agreement check of one name's requests by set rank; null for a rank that
// has joined instead of submitting (exposed for tests). `global_ranks` name
// the ranks in messages (empty: set ranks).
Response CheckAgreement(const std::vector<const Request*>& by_rank,
                        const std::vector<int>& global_ranks = {});
Response CheckAgreement(const std::vector<Request>& by_rank);

}  // namespace hvd::runtime
