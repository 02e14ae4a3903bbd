#include "fake_gpus.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ops/dtype_dispatch.h"

namespace hvd::runtime::nccl {

using common::Result;
using common::Status;

struct FakeGpus::FakeComm {
  std::string id;
  int rank = 0;
  int size = 0;
  int sequence = 0;
  // Point-to-point messages issued so far, by peer.
  std::map<int, int> sent, received;
  bool aborted = false;
};

struct FakeGpus::FakeStream {
  int rank = 0;
  // Each item runs when it reaches the front; false: not yet (a collective
  // whose peers have not arrived, a wait for an event), asked again later.
  std::deque<std::function<bool()>> work;
};

struct FakeGpus::FakeEvent {
  int rank = 0;
  bool done = true;  // as cudaEventQuery says of an event never recorded
};

struct FakeGpus::Collective {
  enum class Kind {
    kAllReduce,
    kBroadcast,
    kAllGather,
    kReduce,
    kReduceScatter
  } kind;
  DataType dtype = DataType::kFloat32;
  size_t count = 0;
  Reduction reduction;
  int root = 0;
  int size = 0;
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<void*> outputs;
  int arrived = 0;
  bool complete = false;
};

namespace {

template <typename T>
double ToDouble(T value) {
  if constexpr (std::is_same_v<T, gloo::float16>) {
    return gloo::cpu_half2float(value);
  } else {
    return static_cast<double>(value);
  }
}

template <typename T>
T FromDouble(double value) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::trunc(value));
  } else {
    return static_cast<T>(value);
  }
}

}  // namespace

class FakeRank final : public Api {
 public:
  FakeRank(FakeGpus* gpus, int rank) : gpus_(gpus), rank_(rank) {}

  int Version() const override { return 22809; }
  Result<int> DeviceCount() override { return 2; }

  Status GetUniqueId(UniqueId* id) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    id->bytes.fill(0);
    const std::string text = "fake-" + std::to_string(++gpus_->next_id_);
    std::memcpy(id->bytes.data(), text.data(), text.size());
    return Status::Ok();
  }

  Status InitRank(int /*device*/, int nranks, const UniqueId& id, int rank,
                  nccl::Comm* comm) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto made = std::make_unique<FakeGpus::FakeComm>();
    made->id = std::string(id.bytes.data());
    made->rank = rank;
    made->size = nranks;
    ++gpus_->inits_[rank_];
    *comm = made.get();
    gpus_->comms_.push_back(std::move(made));
    return Status::Ok();
  }

  CommState State(nccl::Comm /*comm*/) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    gpus_->ProgressLocked(rank_);
    auto failed = gpus_->failed_.find(rank_);
    if (failed != gpus_->failed_.end()) {
      return {CommHealth::kFailed, failed->second};
    }
    return {CommHealth::kReady, Status::Ok()};
  }

  Status Abort(nccl::Comm comm) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    static_cast<FakeGpus::FakeComm*>(comm)->aborted = true;
    gpus_->launches_[rank_].push_back("abort");
    return Status::Ok();
  }
  Status Finalize(nccl::Comm /*comm*/) override { return Log("finalize"); }
  Status Destroy(nccl::Comm /*comm*/) override { return Log("destroy"); }
  // The child's id follows from the parent's and who left, so every
  // survivor's child is the same communicator.
  Status Shrink(nccl::Comm comm, const std::vector<int>& excluded,
                bool abort_first, nccl::Comm* shrunk) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto* parent = static_cast<FakeGpus::FakeComm*>(comm);
    std::string what = "shrink";
    for (int gone : excluded) what += " -" + std::to_string(gone);
    if (abort_first) {
      what += " abort";
      parent->aborted = true;  // its pending work ends
    }
    gpus_->launches_[rank_].push_back(what);
    auto made = std::make_unique<FakeGpus::FakeComm>();
    made->id = parent->id + " " + what;
    made->rank = parent->rank;
    for (int gone : excluded) made->rank -= gone < parent->rank ? 1 : 0;
    made->size = parent->size - static_cast<int>(excluded.size());
    *shrunk = made.get();
    gpus_->comms_.push_back(std::move(made));
    gpus_->ProgressLocked(rank_);
    return Status::Ok();
  }

  Result<void*> Allocate(int /*device*/, size_t bytes) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto memory = std::make_unique<uint8_t[]>(std::max<size_t>(bytes, 1));
    void* at = memory.get();
    gpus_->memory_[at] = std::move(memory);
    return at;
  }
  void Free(int /*device*/, void* memory) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    gpus_->memory_.erase(memory);
  }

  Result<nccl::Stream> CreateStream(int /*device*/) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto* stream = new FakeGpus::FakeStream{rank_, {}};
    gpus_->streams_.insert(stream);
    return nccl::Stream{stream};
  }
  void DestroyStream(int /*device*/, nccl::Stream stream) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto* s = static_cast<FakeGpus::FakeStream*>(stream);
    gpus_->streams_.erase(s);
    delete s;
  }
  Result<nccl::Event> CreateEvent(int /*device*/) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto* event = new FakeGpus::FakeEvent{rank_, true};
    gpus_->events_.insert(event);
    return nccl::Event{event};
  }
  void DestroyEvent(int /*device*/, nccl::Event event) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto* e = static_cast<FakeGpus::FakeEvent*>(event);
    gpus_->events_.erase(e);
    delete e;
  }

  Status Record(nccl::Event event, nccl::Stream stream) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto* e = static_cast<FakeGpus::FakeEvent*>(event);
    e->done = false;
    StreamOf(stream)->work.push_back([e] { return e->done = true; });
    gpus_->ProgressLocked(rank_);
    return Status::Ok();
  }
  Status WaitFor(nccl::Stream stream, nccl::Event event) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    auto* e = static_cast<FakeGpus::FakeEvent*>(event);
    StreamOf(stream)->work.push_back([e] { return e->done; });
    return Status::Ok();
  }
  Result<bool> Done(nccl::Event event) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    gpus_->ProgressLocked(rank_);
    return static_cast<FakeGpus::FakeEvent*>(event)->done;
  }
  Status Copy(void* to, const void* from, size_t bytes,
              nccl::Stream stream) override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    gpus_->launches_[rank_].push_back("copy " + std::to_string(bytes));
    StreamOf(stream)->work.push_back([=] {
      std::memmove(to, from, bytes);
      return true;
    });
    return Status::Ok();
  }

  // Work launched inside a group runs as one item of its stream, each part
  // as soon as it can, so a Recv waiting for its peer does not hold back a
  // Send after it (NCCL's group semantics for point-to-point calls).
  Status GroupStart() override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    ++group_depth_;
    return Status::Ok();
  }
  Status GroupEnd() override {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    if (--group_depth_ > 0 || group_.empty()) return Status::Ok();
    auto parts =
        std::make_shared<std::vector<std::function<bool()>>>(std::move(group_));
    group_.clear();
    auto done = std::make_shared<std::vector<bool>>(parts->size(), false);
    StreamOf(group_stream_)->work.push_back([parts, done] {
      bool all = true;
      for (size_t i = 0; i < parts->size(); ++i) {
        if (!(*done)[i]) (*done)[i] = (*parts)[i]();
        all = all && (*done)[i];
      }
      return all;
    });
    gpus_->ProgressLocked(rank_);
    return Status::Ok();
  }

  Status AllReduce(const void* send, void* recv, size_t count, DataType dtype,
                   Reduction reduction, nccl::Comm comm,
                   nccl::Stream stream) override {
    return Launch("allreduce " + std::to_string(count) + " " +
                      DataTypeName(dtype) + " " + Describe(reduction),
                  FakeGpus::Collective::Kind::kAllReduce, send, recv, count,
                  dtype, reduction, 0, comm, stream);
  }
  Status Broadcast(const void* send, void* recv, size_t count, DataType dtype,
                   int root, nccl::Comm comm, nccl::Stream stream) override {
    return Launch("broadcast " + std::to_string(count) + " " +
                      DataTypeName(dtype) + " root " + std::to_string(root),
                  FakeGpus::Collective::Kind::kBroadcast, send, recv, count,
                  dtype, {}, root, comm, stream);
  }
  Status AllGather(const void* send, void* recv, size_t count, DataType dtype,
                   nccl::Comm comm, nccl::Stream stream) override {
    return Launch(
        "allgather " + std::to_string(count) + " " + DataTypeName(dtype),
        FakeGpus::Collective::Kind::kAllGather, send, recv, count, dtype, {}, 0,
        comm, stream);
  }
  Status Reduce(const void* send, void* recv, size_t count, DataType dtype,
                Reduction reduction, int root, nccl::Comm comm,
                nccl::Stream stream) override {
    return Launch("reduce " + std::to_string(count) + " " +
                      DataTypeName(dtype) + " " + Describe(reduction) +
                      " root " + std::to_string(root),
                  FakeGpus::Collective::Kind::kReduce, send, recv, count, dtype,
                  reduction, root, comm, stream);
  }
  Status ReduceScatter(const void* send, void* recv, size_t count,
                       DataType dtype, Reduction reduction, nccl::Comm comm,
                       nccl::Stream stream) override {
    return Launch("reducescatter " + std::to_string(count) + " " +
                      DataTypeName(dtype) + " " + Describe(reduction),
                  FakeGpus::Collective::Kind::kReduceScatter, send, recv, count,
                  dtype, reduction, 0, comm, stream);
  }
  Status Send(const void* send, size_t count, DataType dtype, int peer,
              nccl::Comm comm, nccl::Stream stream) override {
    return PointToPoint(send, nullptr, count, dtype, peer, comm, stream);
  }
  Status Recv(void* recv, size_t count, DataType dtype, int peer,
              nccl::Comm comm, nccl::Stream stream) override {
    return PointToPoint(nullptr, recv, count, dtype, peer, comm, stream);
  }

 private:
  Status Log(const std::string& call) {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    gpus_->launches_[rank_].push_back(call);
    return Status::Ok();
  }

  // "sum", or "sum*0.25" when it premultiplies.
  static std::string Describe(Reduction reduction) {
    std::string text = ReduceOpName(reduction.op);
    if (reduction.premultiply != 1.0) {
      text += "*" + Number(reduction.premultiply);
    }
    return text;
  }

  static std::string Number(double value) {
    std::string text = std::to_string(value);
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text;
  }

  // Holds mu_. A null stream is the rank's default stream.
  FakeGpus::FakeStream* StreamOf(nccl::Stream stream) {
    if (stream != nullptr) return static_cast<FakeGpus::FakeStream*>(stream);
    auto& made = gpus_->default_streams_[rank_];
    if (!made) made = std::make_unique<FakeGpus::FakeStream>();
    made->rank = rank_;
    return made.get();
  }

  Status Launch(const std::string& what, FakeGpus::Collective::Kind kind,
                const void* send, void* recv, size_t count, DataType dtype,
                Reduction reduction, int root, nccl::Comm comm,
                nccl::Stream stream) {
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    gpus_->launches_[rank_].push_back(what);
    auto* c = static_cast<FakeGpus::FakeComm*>(comm);
    const auto key = std::make_pair(c->id, c->sequence++);
    auto& slot = gpus_->pending_[key];
    if (!slot) {
      slot = std::make_shared<FakeGpus::Collective>();
      slot->kind = kind;
      slot->dtype = dtype;
      slot->count = count;
      slot->reduction = reduction;
      slot->root = root;
      slot->size = c->size;
      slot->inputs.resize(c->size);
      slot->outputs.resize(c->size);
    }
    std::shared_ptr<FakeGpus::Collective> collective = slot;
    FakeGpus* gpus = gpus_;
    const int rank = c->rank;
    const size_t sent = kind == FakeGpus::Collective::Kind::kReduceScatter
                            ? count * c->size
                            : count;
    bool arrived = false;
    Push(stream, [=]() mutable {
      if (c->aborted) return true;
      if (!arrived) {
        arrived = true;
        const size_t bytes = sent * DataTypeSize(dtype);
        const auto* from = static_cast<const uint8_t*>(send);
        collective->inputs[rank].assign(from, from + bytes);
        collective->outputs[rank] = recv;
        if (++collective->arrived == collective->size) {
          FakeGpus::Compute(*collective);
          collective->complete = true;
          gpus->pending_.erase(key);
        }
      }
      return collective->complete;
    });
    return Status::Ok();
  }

  // A send (`from`) leaves its bytes in the mail when it runs; the receive
  // (`to`) of the pair's same message waits for them there.
  Status PointToPoint(const void* from, void* to, size_t count, DataType dtype,
                      int peer, nccl::Comm comm, nccl::Stream stream) {
    const bool send = from != nullptr;
    std::lock_guard<std::mutex> lock(gpus_->mu_);
    gpus_->launches_[rank_].push_back(
        (send ? "send " : "recv ") + std::to_string(count) + " " +
        DataTypeName(dtype) + (send ? " to " : " from ") +
        std::to_string(peer));
    auto* c = static_cast<FakeGpus::FakeComm*>(comm);
    const auto key =
        send ? std::make_tuple(c->id, c->rank, peer, c->sent[peer]++)
             : std::make_tuple(c->id, peer, c->rank, c->received[peer]++);
    const size_t bytes = count * DataTypeSize(dtype);
    FakeGpus* gpus = gpus_;
    Push(stream, [=] {
      if (c->aborted) return true;
      if (send) {
        const auto* at = static_cast<const uint8_t*>(from);
        gpus->mail_[key].assign(at, at + bytes);
        return true;
      }
      auto mail = gpus->mail_.find(key);
      if (mail == gpus->mail_.end()) return false;
      // A size mismatch is a bug of the executor under test.
      if (mail->second.size() != bytes) std::abort();
      if (bytes > 0) std::memcpy(to, mail->second.data(), bytes);
      gpus->mail_.erase(mail);
      return true;
    });
    return Status::Ok();
  }

  // Holds mu_. Queues `work` on `stream`, or in the open group.
  void Push(nccl::Stream stream, std::function<bool()> work) {
    if (group_depth_ > 0) {
      group_.push_back(std::move(work));
      group_stream_ = stream;
      return;
    }
    StreamOf(stream)->work.push_back(std::move(work));
    gpus_->ProgressLocked(rank_);
  }

  FakeGpus* const gpus_;
  const int rank_;
  int group_depth_ = 0;
  std::vector<std::function<bool()>> group_;
  nccl::Stream group_stream_ = nullptr;
};

void FakeGpus::ReduceInto(const Collective& c, size_t offset, size_t count,
                          uint8_t* out) {
  const size_t element = DataTypeSize(c.dtype);
  WithCppType(c.dtype, [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < count; ++i) {
      double acc = 0;
      for (int from = 0; from < c.size; ++from) {
        T value;
        std::memcpy(static_cast<void*>(&value),
                    c.inputs[from].data() + (offset + i) * element, element);
        const double x = ToDouble(value) * c.reduction.premultiply;
        if (from == 0) {
          acc = x;
        } else if (c.reduction.op == ReduceOp::kMin) {
          acc = std::min(acc, x);
        } else if (c.reduction.op == ReduceOp::kMax) {
          acc = std::max(acc, x);
        } else if (c.reduction.op == ReduceOp::kProduct) {
          acc *= x;
        } else {
          acc += x;
        }
      }
      if (c.reduction.op == ReduceOp::kAverage) acc /= c.size;
      const T result = FromDouble<T>(acc);
      std::memcpy(out + i * element, &result, element);
    }
  });
}

void FakeGpus::Compute(const Collective& c) {
  const size_t bytes = c.count * DataTypeSize(c.dtype);
  for (int r = 0; r < c.size; ++r) {
    auto* out = static_cast<uint8_t*>(c.outputs[r]);
    switch (c.kind) {
      case Collective::Kind::kBroadcast:
        std::memcpy(out, c.inputs[c.root].data(), bytes);
        break;
      case Collective::Kind::kAllGather:
        for (int from = 0; from < c.size; ++from) {
          std::memcpy(out + from * bytes, c.inputs[from].data(), bytes);
        }
        break;
      case Collective::Kind::kAllReduce:
        ReduceInto(c, 0, c.count, out);
        break;
      case Collective::Kind::kReduce:
        if (r == c.root) ReduceInto(c, 0, c.count, out);
        break;
      case Collective::Kind::kReduceScatter:
        ReduceInto(c, r * c.count, c.count, out);
        break;
    }
  }
}

FakeGpus::FakeGpus() = default;

FakeGpus::~FakeGpus() {
  for (FakeStream* stream : streams_) delete stream;
  for (FakeEvent* event : events_) delete event;
}

Api* FakeGpus::Rank(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& api = ranks_[rank];
  if (!api) api = std::make_unique<FakeRank>(this, rank);
  return api.get();
}

std::function<Result<std::unique_ptr<Api>>()> FakeGpus::Loader(int rank) {
  return [this, rank]() -> Result<std::unique_ptr<Api>> {
    return std::unique_ptr<Api>(std::make_unique<FakeRank>(this, rank));
  };
}

int FakeGpus::live_allocations() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(memory_.size());
}

int FakeGpus::live_streams_and_events() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(streams_.size() + events_.size());
}

int FakeGpus::inits(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  return inits_[rank];
}

std::vector<std::string> FakeGpus::launches(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  return launches_[rank];
}

void FakeGpus::FailRank(int rank, Status error) {
  std::lock_guard<std::mutex> lock(mu_);
  failed_[rank] = std::move(error);
}

int FakeGpus::Hold(nccl::Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  const int hold = static_cast<int>(released_.size());
  released_[hold] = false;
  static_cast<FakeStream*>(stream)->work.push_back(
      [this, hold] { return released_[hold]; });
  return hold;
}

void FakeGpus::Release(int hold) {
  std::lock_guard<std::mutex> lock(mu_);
  released_[hold] = true;
}

void FakeGpus::ProgressLocked(int rank) {
  std::vector<FakeStream*> mine;
  for (FakeStream* stream : streams_) {
    if (stream->rank == rank) mine.push_back(stream);
  }
  auto fallback = default_streams_.find(rank);
  if (fallback != default_streams_.end())
    mine.push_back(fallback->second.get());
  bool moved = true;
  while (moved) {
    moved = false;
    for (FakeStream* stream : mine) {
      while (!stream->work.empty() && stream->work.front()()) {
        stream->work.pop_front();
        moved = true;
      }
    }
  }
}

}  // namespace hvd::runtime::nccl
