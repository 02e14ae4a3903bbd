// The coordinator's message table (it runs on rank 0): collects every rank's
// ready requests per tensor name, and once all ranks have asked for a name,
// checks that they agree and answers with a Response to run it, or one that
// fails it on every rank with a message naming the tensor, the ranks and
// what differs. Pure bookkeeping: the transport is the Negotiator's.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "message.h"

namespace hvd::runtime {

class Coordinator {
 public:
  explicit Coordinator(int size);

  // Records one rank's requests of this cycle.
  void Add(int rank, const RequestList& list);

  // The responses of every name all ranks have now asked for, in the order
  // they became ready (the order every rank executes them in), and whether
  // any rank asked to shut down.
  ResponseList TakeReady();

 private:
  struct Entry {
    std::vector<Request> by_rank;
    std::vector<bool> seen;
    int count = 0;
  };
  int size_;
  std::unordered_map<std::string, Entry> table_;
  std::vector<std::string> ready_;
  // Requests that are wrong on their own (a rank asked twice).
  std::vector<Response> errors_;
  bool shutdown_ = false;
};

// Agreement check of one name's requests, one per rank (exposed for tests).
Response CheckAgreement(const std::vector<Request>& by_rank);

}  // namespace hvd::runtime
