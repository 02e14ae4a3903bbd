#include "hvd/runtime/elastic_worker.h"

#include <unistd.h>

#include <string>

#include "hvd/notify/server.h"
#include "hvd/runtime/runtime.h"
#include "ops/nccl/gpus.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

Result<std::unique_ptr<ElasticWorker>> ElasticWorker::Start(
    const RuntimeConfig& config) {
  std::unique_ptr<ElasticWorker> worker(new ElasticWorker());
  ElasticWorker* self = worker.get();
  auto server = notify::NotificationServer::Start(
      config.bind_address, config.worker_key,
      [self](const notify::Abort& abort) { self->OnAbort(abort); });
  if (!server.ok()) {
    return server.status().WithContext("elastic worker's notification server");
  }
  worker->server_ = std::move(*server);
  worker->gpus_ = std::make_shared<nccl::Gpus>();
  return worker;
}

ElasticWorker::~ElasticWorker() {
  // WARNING: in a fork the server is abandoned: stopping it would join
  // threads that do not exist here and shut down the parent's socket; and
  // so are the GPUs, whose parked communicator is the parent's.
  if (!owner_.IsCurrent()) {
    (void)server_.release();
    (void)new std::shared_ptr<nccl::Gpus>(std::move(gpus_));
  }
}

void ElasticWorker::DropGpuCommunicators() { gpus_->DropParked(); }

Result<JoinedGeneration> ElasticWorker::JoinNext(const RuntimeConfig& config) {
  if (!owner_.IsCurrent()) {
    return Status::InvalidArgument(
        "this process (pid " + std::to_string(getpid()) +
        ") is a fork of elastic worker " + std::to_string(owner_.pid()) +
        ", whose slot in the job it cannot take: use collectives only in the "
        "parent, or run hvd in the fork as a job of its own (without the "
        "HOROVOD_* variables hvdrun set)");
  }
  auto joined = JoinNextGeneration(config, generation_, server_->address());
  if (joined.ok()) sync_ = joined->sync;
  return joined;
}

Status ElasticWorker::Attach(const std::shared_ptr<Runtime>& runtime,
                             int64_t generation) {
  Status owner = owner_.Check();
  if (!owner.ok()) return owner;
  std::lock_guard<std::mutex> lock(abort_mu_);
  abortable_ = runtime;
  abortable_generation_ = generation;
  generation_ = generation;
  return Status::Ok();
}

int64_t ElasticWorker::PendingHostsUpdate() const {
  int64_t announced = server_->latest_generation();
  return announced > generation_ ? announced : 0;
}

int ElasticWorker::PendingHostsChanges() const {
  return PendingHostsUpdate() > 0 ? server_->latest_changes() : 0;
}

std::string ElasticWorker::notify_address() const { return server_->address(); }

void ElasticWorker::OnAbort(const notify::Abort& abort) {
  std::lock_guard<std::mutex> lock(abort_mu_);
  auto runtime = abortable_.lock();
  if (runtime && abort.generation == abortable_generation_) {
    runtime->Abort(abort.reason);
  }
}

}  // namespace hvd::runtime
