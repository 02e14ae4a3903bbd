#include "hvd/runtime/elastic.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "hvd/rendezvous/client.h"
#include "hvd/rendezvous/etcd_seal.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

Result<JoinedGeneration> JoinNextGeneration(const RuntimeConfig& config,
                                            int64_t after,
                                            const std::string& notify_address) {
  common::HttpClientOptions options = config.DriverClientOptions();
  // With etcd, the server is the leading hvdrun's, which may have moved
  // since this worker started (a standby took the job over).
  if (config.etcd) {
    rendezvous::EtcdClient etcd(*config.etcd);
    auto found = rendezvous::LeadingDriverAddress(etcd, config.job_public_key,
                                                  config.etcd_prefix);
    if (found.ok()) {
      options.host = found->first;
      options.port = found->second;
    } else {
      spdlog::debug("the leading hvdrun's address in etcd: {}",
                    found.status().ToString());
    }
  }
  rendezvous::RendezvousClient client(options);
  const std::string& slot = config.slot;
  // The driver bounds this wait, not the worker: it fails the job when too
  // few slots remain for the elastic timeout, a new slot that does not
  // check in within the start timeout, and a joined one that stops
  // answering liveness probes; then it publishes a new generation (this
  // wait moves on to it) or closes the board (kAborted). A worker of a
  // long step checks in late, and its peers must wait for it however long
  // the step is. A driver that goes away fails the request (kTransport).
  // Long-polls in pieces: each piece stays well inside HTTP timeouts, and
  // checking in again continues the same barrier.
  constexpr std::chrono::milliseconds kPiece{20000};
  while (true) {
    auto assignment =
        client.CheckIn(slot, after, notify_address, kPiece, config.worker_id);
    if (assignment.ok()) {
      JoinedGeneration joined;
      joined.generation = assignment->generation;
      joined.sync = assignment->sync;
      joined.reason = assignment->reason;
      joined.hosts = assignment->hosts;
      joined.config = config;
      joined.config.rendezvous_addr = options.host;
      joined.config.rendezvous_port = options.port;
      joined.config.layout = assignment->layout;
      if (config.etcd) {
        // What this worker writes to etcd for the generation is sealed
        // with its key, which only the generation's members get.
        auto key = common::UnwrapGenerationKey(
            config.worker_key, joined.generation, assignment->generation_key);
        if (!key.ok()) {
          return key.status().WithContext("joining generation " +
                                          std::to_string(joined.generation));
        }
        joined.config.generation_key = std::move(*key);
        joined.config.generation_key_of = joined.generation;
      }
      spdlog::info("slot {} joined generation {} as rank {} of {}", slot,
                   joined.generation, assignment->layout.rank,
                   assignment->layout.size);
      return joined;
    }
    if (assignment.status().code() == common::Code::kNotFound) {
      return Status::NotFound("slot " + slot +
                              " is not part of the job's next generation: "
                              "removed from the job");
    }
    if (assignment.status().code() != common::Code::kTimeout) {
      return assignment.status();
    }
  }
}

}  // namespace hvd::runtime
