#include "ops/nccl/communicator.h"

#include <thread>
#include <utility>

namespace hvd::runtime::nccl {

using common::Result;
using common::Status;

Communicator::Communicator(Api* api, Comm comm, std::string name, int device,
                           int rank, int size, CommunicatorLimits limits)
    : api_(api),
      comm_(comm),
      name_(std::move(name)),
      device_(device),
      rank_(rank),
      size_(size),
      limits_(std::move(limits)) {}

Result<std::unique_ptr<Communicator>> Communicator::Create(
    Api* api, const IdExchange& exchange, std::string name, int device,
    int rank, int size, CommunicatorLimits limits) {
  UniqueId made;
  if (rank == 0) {
    Status status = api->GetUniqueId(&made);
    if (!status.ok()) return status.WithContext("NCCL communicator " + name);
  }
  Result<UniqueId> id = exchange(rank == 0 ? &made : nullptr);
  if (!id.ok()) {
    return id.status().WithContext("exchanging the NCCL unique id of " + name);
  }
  Comm comm = nullptr;
  Status status = api->InitRank(device, size, *id, rank, &comm);
  if (!status.ok()) {
    if (comm != nullptr) api->Abort(comm);
    return status.WithContext("NCCL communicator " + name);
  }
  std::unique_ptr<Communicator> communicator(new Communicator(
      api, comm, std::move(name), device, rank, size, std::move(limits)));
  status = communicator->Await("NCCL init of " + communicator->name_,
                               communicator->limits_.setup);
  if (!status.ok()) {
    communicator->Abort();  // nobody has a use for it
    return status;
  }
  return communicator;
}

Communicator::~Communicator() { Close(); }

Status Communicator::Unusable(const std::string& what) const {
  if (comm_ == nullptr) {
    return Status::Aborted(what + ": the communicator was aborted earlier");
  }
  if (!failure_.ok()) {
    return Status::Aborted(what + ": the communicator failed earlier (" +
                           failure_.message() + ")");
  }
  return Status::Ok();
}

void Communicator::RequestAbort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!abort_reason_) abort_reason_ = reason;
}

std::optional<std::string> Communicator::AbortReason() {
  std::lock_guard<std::mutex> lock(mu_);
  return abort_reason_;
}

Status Communicator::Await(const std::string& what,
                           std::chrono::milliseconds deadline, Event event) {
  Status unusable = Unusable(what);
  if (!unusable.ok()) return unusable;
  Watch watch;
  watch.what = what;
  watch.started = limits_.now();
  watch.deadline = deadline;
  for (;;) {
    watch.state = api_->State(comm_);
    if (event != nullptr && watch.state.health == CommHealth::kReady) {
      Result<bool> done = api_->Done(event);
      if (!done.ok()) {
        watch.state = {CommHealth::kFailed, done.status()};
      } else if (!*done) {
        watch.state.health = CommHealth::kInProgress;
      }
    }
    watch.abort_reason = AbortReason();
    const WatchAction action = DecideWatch(watch, limits_.now());
    if (action.verdict == Verdict::kDone) return Status::Ok();
    if (action.verdict == Verdict::kFail) {
      failure_ = action.status;
      return action.status;
    }
    if (limits_.pause) {
      limits_.pause();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

Status Communicator::AwaitIdle(const std::string& what) {
  return Await(what + " on " + name_, limits_.op);
}

Status Communicator::Launch(const std::string& what,
                            const std::function<Status(Comm)>& calls) {
  Status unusable = Unusable(what + " on " + name_);
  if (!unusable.ok()) return unusable;
  Status status = calls(comm_);
  if (!status.ok()) {
    failure_ = status.WithContext(what + " on " + name_);
    return failure_;
  }
  return AwaitIdle(what);
}

Status Communicator::AwaitDone(Event event, const std::string& what) {
  return Await(what + " on " + name_, limits_.op, event);
}

Result<std::unique_ptr<Communicator>> Communicator::Shrink(
    const std::vector<int>& excluded, bool abort_first) {
  if (comm_ == nullptr) {
    return Status::Aborted("shrinking " + name_ +
                           ": the communicator was aborted earlier");
  }
  Comm shrunk = nullptr;
  Status status = api_->Shrink(comm_, excluded, abort_first, &shrunk);
  if (!status.ok()) {
    if (shrunk != nullptr) api_->Abort(shrunk);
    Abort();
    return status.WithContext("shrinking NCCL communicator " + name_);
  }
  // The child numbers the survivors in their old order.
  int rank = rank_;
  for (int gone : excluded) rank -= gone < rank_ ? 1 : 0;
  std::unique_ptr<Communicator> child(
      new Communicator(api_, shrunk, name_, device_, rank,
                       size_ - static_cast<int>(excluded.size()), limits_));
  status = child->Await("NCCL shrink of " + name_, limits_.setup);
  if (!status.ok()) child->Abort();
  // The parent is still hvd's to free. Abort, not a clean close: its
  // ranks that left will never take part in a finalize.
  Abort();
  if (!status.ok()) return status;
  return child;
}

void Communicator::Abort() {
  if (comm_ == nullptr) return;
  // An abort that fails leaves nothing more to try; the communicator is
  // given up either way.
  api_->Abort(comm_);
  comm_ = nullptr;
}

Status Communicator::Close() {
  if (comm_ == nullptr) return Status::Ok();
  if (failed()) {
    // Its peers may be gone or hung: they would never finalize with it.
    Abort();
    return Status::Ok();
  }
  Status status = api_->Finalize(comm_);
  if (status.ok()) status = Await("NCCL finalize of " + name_, limits_.op);
  if (!status.ok()) {
    Abort();
    return status;
  }
  status = api_->Destroy(comm_);
  comm_ = nullptr;
  return status;
}

}  // namespace hvd::runtime::nccl
