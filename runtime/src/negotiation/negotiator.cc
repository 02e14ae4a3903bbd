#include "negotiation/negotiator.h"

#include <algorithm>
#include <cstring>

namespace hvd::runtime {

using common::Result;
using common::Status;

namespace {

// Big enough for the requests of a few dozen tensors in one cycle.
constexpr size_t kSlotBytes = 2048;
constexpr size_t kLengthBytes = 4;
// The first byte of rank 0's broadcast slot says what it holds.
enum class SlotKind : char {
  // [kind][u32 length][first bytes of the encoded ResponseList]; a longer
  // list continues in a second broadcast.
  kResponses = 0,
  // [kind][u32 longest]: a request list did not fit its slot; every rank
  // gathers again with `longest` bytes.
  kResend = 1,
};
constexpr size_t kHeaderBytes = 1 + kLengthBytes;

void PutLength(char* at, size_t length) {
  for (size_t i = 0; i < kLengthBytes; ++i) {
    at[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  }
}

uint32_t GetLength(const char* at) {
  uint32_t length = 0;
  for (size_t i = 0; i < kLengthBytes; ++i) {
    length |= uint32_t(uint8_t(at[i])) << (8 * i);
  }
  return length;
}

}  // namespace

Negotiator::Negotiator(ControlPlane& plane, std::vector<int> global_ranks)
    : plane_(plane), coordinator_(std::move(global_ranks)) {}

Status Negotiator::Gather(std::vector<char>& in, std::vector<char>* out) {
  if (plane_.size() == 1) {
    *out = in;
    return Status::Ok();
  }
  if (plane_.rank() == 0) out->assign(in.size() * plane_.size(), 0);
  return plane_.Gather("negotiation gather to rank 0", in.data(), in.size(),
                       plane_.rank() == 0 ? out->data() : nullptr);
}

Status Negotiator::Broadcast(std::vector<char>* buffer) {
  if (plane_.size() == 1) return Status::Ok();
  return plane_.Broadcast("negotiation broadcast from rank 0", buffer->data(),
                          buffer->size());
}

std::string Negotiator::Coordinate(const std::vector<char>& gathered,
                                   size_t stride, const uint32_t* lengths,
                                   Status* status) {
  for (int rank = 0; rank < plane_.size(); ++rank) {
    const char* at = &gathered[rank * stride];
    uint32_t length = lengths ? lengths[rank] : GetLength(at);
    const char* body = lengths ? at : at + kLengthBytes;
    RequestList list;
    *status = Decode(std::string(body, length), &list);
    if (!status->ok()) {
      *status = status->WithContext("requests of rank " + std::to_string(rank));
      return {};
    }
    coordinator_.Add(rank, list);
  }
  return Encode(coordinator_.TakeReady());
}

Result<ResponseList> Negotiator::Exchange(const RequestList& mine) {
  const int size = plane_.size();
  const bool root = plane_.rank() == 0;
  const std::string encoded = Encode(mine);

  std::vector<char> slot(kSlotBytes, 0);
  PutLength(slot.data(), encoded.size());
  std::memcpy(slot.data() + kLengthBytes, encoded.data(),
              std::min(encoded.size(), kSlotBytes - kLengthBytes));
  std::vector<char> slots;
  Status status = Gather(slot, &slots);
  if (!status.ok()) return status;

  std::string responses;
  std::vector<char> reply(kSlotBytes, 0);
  std::vector<uint32_t> lengths(size);
  if (root) {
    for (int rank = 0; rank < size; ++rank) {
      lengths[rank] = GetLength(&slots[rank * kSlotBytes]);
    }
    uint32_t longest = *std::max_element(lengths.begin(), lengths.end());
    if (longest > kSlotBytes - kLengthBytes) {
      reply[0] = static_cast<char>(SlotKind::kResend);
      PutLength(&reply[1], longest);
    } else {
      responses = Coordinate(slots, kSlotBytes, nullptr, &status);
      if (!status.ok()) return status;
    }
  }
  // One fixed-size broadcast answers the common case; the rare long
  // message costs one more round.
  for (int round = 0; round < 2; ++round) {
    if (root && reply[0] == static_cast<char>(SlotKind::kResponses)) {
      PutLength(&reply[1], responses.size());
      std::memcpy(&reply[kHeaderBytes], responses.data(),
                  std::min(responses.size(), kSlotBytes - kHeaderBytes));
    }
    status = Broadcast(&reply);
    if (!status.ok()) return status;
    if (reply[0] == static_cast<char>(SlotKind::kResponses)) break;
    if (round == 1)
      return Status::Internal("negotiation: resend requested twice");
    const uint32_t longest = GetLength(&reply[1]);
    std::vector<char> full(longest, 0);
    std::memcpy(full.data(), encoded.data(), encoded.size());
    std::vector<char> fulls;
    status = Gather(full, &fulls);
    if (!status.ok()) return status;
    if (root) {
      responses = Coordinate(fulls, longest, lengths.data(), &status);
      if (!status.ok()) return status;
      reply.assign(kSlotBytes, 0);
    }
  }
  const uint32_t length = GetLength(&reply[1]);
  std::string message(&reply[kHeaderBytes],
                      std::min<size_t>(length, kSlotBytes - kHeaderBytes));
  if (length > message.size()) {
    std::vector<char> rest(length - message.size(), 0);
    if (root)
      std::memcpy(rest.data(), responses.data() + message.size(), rest.size());
    status = Broadcast(&rest);
    if (!status.ok()) return status;
    message.append(rest.data(), rest.size());
  }
  ResponseList list;
  status = Decode(message, &list);
  if (!status.ok()) return status.WithContext("responses of rank 0");
  return list;
}

}  // namespace hvd::runtime
