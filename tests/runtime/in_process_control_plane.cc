#include "in_process_control_plane.h"

#include <cstring>

namespace hvd::runtime {

using common::Status;

namespace {

const char* KindName(bool gather) { return gather ? "gather" : "broadcast"; }

}  // namespace

InProcessHub::InProcessHub(int size, std::chrono::milliseconds timeout)
    : size_(size), timeout_(timeout), dead_(size, false) {}

void InProcessHub::Kill(int rank, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  dead_[rank] = true;
  Fail(Status::Transport("in-process control plane: rank " +
                         std::to_string(rank) + " died (" + reason + ")"));
}

void InProcessHub::Fail(Status status) {
  if (failed_.ok()) failed_ = std::move(status);
  cv_.notify_all();
}

Status InProcessHub::Join(uint64_t seq, Kind kind, int rank,
                          std::string_view what, size_t bytes, Round** round) {
  if (dead_[rank]) {
    return Status::Aborted("in-process control plane: rank " +
                           std::to_string(rank) + " was killed");
  }
  auto [it, created] = rounds_.try_emplace(seq);
  Round& r = it->second;
  if (created) {
    r.kind = kind;
    r.bytes = bytes;
    if (kind == Kind::kGather) {
      r.parts.resize(size_);
      r.from.resize(size_, false);
    }
  }
  const bool twice = kind == Kind::kGather && r.from.size() > 0 && r.from[rank];
  if (r.kind != kind || r.bytes != bytes || twice) {
    Status mismatch = Status::Internal(
        "in-process control plane: call " + std::to_string(seq) + " of rank " +
        std::to_string(rank) + " is a " + KindName(kind == Kind::kGather) +
        " of " + std::to_string(bytes) + " bytes (" + std::string(what) +
        "), but " +
        (twice ? std::string("this rank made it already")
               : "another rank made it a " +
                     std::string(KindName(r.kind == Kind::kGather)) + " of " +
                     std::to_string(r.bytes) + " bytes"));
    Fail(mismatch);
    return mismatch;
  }
  *round = &r;
  return Status::Ok();
}

Status InProcessHub::Gather(int rank, uint64_t seq, std::string_view what,
                            const void* in, size_t bytes, void* out) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::unique_lock<std::mutex> lock(mu_);
  Round* round = nullptr;
  Status joined = Join(seq, Kind::kGather, rank, what, bytes, &round);
  if (!joined.ok()) return joined.WithContext(std::string(what));
  const char* bytes_in = static_cast<const char*>(in);
  if (rank != 0) {
    round->parts[rank].assign(bytes_in, bytes_in + bytes);
    round->from[rank] = true;
    ++round->arrived;
    cv_.notify_all();
    return Status::Ok();
  }
  auto all = [&] { return round->arrived == size_ - 1; };
  cv_.wait_until(lock, deadline, [&] { return all() || !failed_.ok(); });
  if (!all()) {
    if (!failed_.ok()) return failed_.WithContext(std::string(what));
    std::string missing;
    for (int r = 1; r < size_; ++r) {
      if (round->from[r]) continue;
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    return Status::Timeout(
        std::string(what) + ": in-process control plane: rank 0 waited " +
        std::to_string(timeout_.count()) + " ms for ranks [" + missing + "]");
  }
  char* bytes_out = static_cast<char*>(out);
  std::memcpy(bytes_out, bytes_in, bytes);
  for (int r = 1; r < size_; ++r) {
    std::memcpy(bytes_out + r * bytes, round->parts[r].data(), bytes);
  }
  rounds_.erase(seq);
  return Status::Ok();
}

Status InProcessHub::Broadcast(int rank, uint64_t seq, std::string_view what,
                               void* buffer, size_t bytes) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::unique_lock<std::mutex> lock(mu_);
  Round* round = nullptr;
  Status joined = Join(seq, Kind::kBroadcast, rank, what, bytes, &round);
  if (!joined.ok()) return joined.WithContext(std::string(what));
  char* data = static_cast<char*>(buffer);
  if (rank == 0) {
    round->data.assign(data, data + bytes);
    round->sent = true;
    if (size_ == 1) rounds_.erase(seq);
    cv_.notify_all();
    return Status::Ok();
  }
  cv_.wait_until(lock, deadline, [&] { return round->sent || !failed_.ok(); });
  if (!round->sent) {
    if (!failed_.ok()) return failed_.WithContext(std::string(what));
    return Status::Timeout(std::string(what) +
                           ": in-process control plane: rank " +
                           std::to_string(rank) + " waited " +
                           std::to_string(timeout_.count()) + " ms for rank 0");
  }
  std::memcpy(data, round->data.data(), bytes);
  if (++round->received == size_ - 1) rounds_.erase(seq);
  return Status::Ok();
}

}  // namespace hvd::runtime
